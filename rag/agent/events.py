"""Turn a LangGraph run into a flat stream of typed events.

This is the one place that knows LangGraph's stream format. The CLI and the UI both consume
``Event``s: a finished node carries its additions and the per-question lists after it, as the
graph's own reducers computed them (applied once, here), so no reader re-runs a reducer.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessageChunk
from pydantic import TypeAdapter

from rag import deadline as turn_deadline
from rag.agent.names import ANSWER_NODES
from rag.agent.state import RESET, Notice, WebRound, add_items, add_web_results, split_reset
from rag.checks import SentenceCheck
from rag.i18n import Msg
from rag.schemas import Evaluation, Passage, RouteDecision, SearchResult
from rag.scope import Scope

logger = logging.getLogger(__name__)


def as_list(value: Any) -> list[Any]:
    """``value`` as a list (None: empty; a single item: a list of it)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def as_models(items: Iterable[Any], model: type[Any]) -> tuple[Any, ...]:
    """``items`` as ``model`` instances (a pydantic model or a dataclass; a dict is validated;
    anything else, or a malformed dict, is skipped)."""
    out = []
    for item in items:
        if isinstance(item, model) and dataclasses.is_dataclass(item):
            item = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}  # a checkpoint's lists made tuples
        if isinstance(item, model):
            out.append(item)
        elif isinstance(item, dict):
            try:
                out.append(TypeAdapter(model).validate_python(item))
            except Exception:  # noqa: BLE001 - a malformed item is skipped, not fatal
                logger.debug("skipped a malformed %s", model.__name__)
    return tuple(out)


def _dicts(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(i for i in items if isinstance(i, dict))


@dataclass(frozen=True)
class QuestionLists:
    """The question's per-question lists (``rag.agent.state.GraphState``) after a node."""

    evaluations: tuple[Evaluation, ...] = ()
    web_rounds: tuple[WebRound, ...] = ()
    web_results: tuple[SearchResult, ...] = ()
    notices: tuple[Notice, ...] = ()


@dataclass(frozen=True)
class NodeUpdate(Mapping[str, Any]):
    """What a finished node wrote, typed. The per-question lists hold only the items the node
    added (``resets``: it emptied them first, starting the question afresh); ``lists`` holds them
    after the node, as the graph's reducers made them. ``None``: the node did not write the field.

    Read as a mapping, it is the node's state update as the graph got it (for logs and tests)."""

    route: RouteDecision | None = None
    standalone_question: str | None = None
    asked: str | None = None  # the question the node added to the conversation
    passages: tuple[Passage, ...] | None = None
    evaluations: tuple[Evaluation, ...] = ()
    web_rounds: tuple[WebRound, ...] = ()
    web_results: tuple[SearchResult, ...] = ()
    notices: tuple[Notice, ...] = ()
    resets: bool = False
    answer: str | None = None
    answer_mode: str | None = None
    answer_checks: tuple[SentenceCheck, ...] | None = None
    lists: QuestionLists = field(default_factory=QuestionLists)
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, raw: Mapping[str, Any] | None, before: QuestionLists | None = None) -> NodeUpdate:
        """A node's raw state update, typed; ``before``: the per-question lists before the node
        (None: empty)."""
        raw = dict(raw or {})
        before = before or QuestionLists()
        resets = False
        added: dict[str, tuple[Any, ...]] = {}
        after: dict[str, tuple[Any, ...]] = {}
        for key, reducer, coerce in (("evaluations", add_items, lambda i: as_models(i, Evaluation)),
                                     ("web_rounds", add_items, _dicts),
                                     ("web_results", add_web_results, lambda i: as_models(i, SearchResult)),
                                     ("notices", add_items, _dicts)):
            current: tuple[Any, ...] = getattr(before, key)
            if key not in raw:
                added[key], after[key] = (), current
                continue
            reset, items = split_reset(as_list(raw[key]))
            resets = resets or reset
            added[key] = coerce(items)
            after[key] = tuple(reducer(list(current), [RESET, *added[key]] if reset else list(added[key])))
        route = as_models(as_list(raw.get("route")), RouteDecision)
        standalone = raw.get("standalone_question")
        asked = [m for m in as_list(raw.get("messages")) if getattr(m, "type", "") == "human"]
        answer = raw.get("answer")
        mode = raw.get("answer_mode")
        return cls(
            route=route[0] if route else None,
            standalone_question=standalone if isinstance(standalone, str) and standalone.strip() else None,
            asked=str(asked[-1].content) if asked else None,
            passages=as_models(as_list(raw["passages"]), Passage) if raw.get("passages") is not None else None,
            resets=resets,
            answer=answer if isinstance(answer, str) else None,
            answer_mode=mode if isinstance(mode, str) and mode else None,
            answer_checks=(as_models(as_list(raw["answer_checks"]), SentenceCheck)
                           if raw.get("answer_checks") is not None else None),
            lists=QuestionLists(**after),
            raw=raw,
            **added,
        )

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


class QuestionFold:
    """The per-question lists of one turn, carried from node to node: ``update(raw)`` types a
    node's update and applies the graph's reducers to the lists once."""

    def __init__(self) -> None:
        self.lists = QuestionLists()

    def update(self, raw: Mapping[str, Any] | None) -> NodeUpdate:
        typed = NodeUpdate.of(raw, self.lists)
        self.lists = typed.lists
        return typed


@dataclass(frozen=True)
class NodeStarted:
    node: str
    at: float  # time.monotonic()


@dataclass(frozen=True)
class NodeFinished:
    node: str
    duration_s: float
    update: NodeUpdate = field(default_factory=NodeUpdate)
    error: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.update, NodeUpdate):  # a plain update (hand-made events): typed here, its
            # lists as if the question started with it (``QuestionFold`` carries them from node to node)
            object.__setattr__(self, "update", NodeUpdate.of(self.update))


@dataclass(frozen=True)
class Token:
    node: str
    text: str


@dataclass(frozen=True)
class Progress:
    """A node's model call is still writing: ``chars`` characters of reply so far in this node run
    (text and tool-call arguments alike), at most every ``PROGRESS_INTERVAL_S`` per node; the trace
    shows it while the node runs (a long judge or answer call is then visibly alive)."""

    node: str
    chars: int


#: Seconds between two ``Progress`` events of one node (a few updates a second at most).
PROGRESS_INTERVAL_S = 0.5


@dataclass(frozen=True)
class TurnFinished:
    answer: str
    total_s: float
    values: dict[str, Any] = field(default_factory=dict)  # final graph state


@dataclass(frozen=True)
class TurnFailed:
    message: Msg  # readable (rag.i18n codes), never a stack trace, never a key
    total_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.message, Msg):  # a plain text (the UI's own failures): shown as written
            object.__setattr__(self, "message", Msg.of("text", level="error", value=str(self.message)))


Event = NodeStarted | NodeFinished | Token | Progress | TurnFinished | TurnFailed


def translate_stream(chunks: Iterable[tuple[str, Any]], *,
                     clock: Callable[[], float] = time.monotonic) -> Iterator[Event]:
    """Translate ``graph.stream(..., stream_mode=["tasks", "messages"])`` chunks into events; each
    finished node's update is typed and the per-question lists are carried along (``QuestionFold``:
    the graph's nodes run one after another, so folding their updates in order is its state).

    Pure apart from the clock (injectable for tests). Does not emit TurnFinished.
    """
    started: dict[str, tuple[str, float]] = {}
    done: set[str] = set()  # nodes finished (and not started again): a late token of theirs is dropped
    fold = QuestionFold()
    written: dict[str, int] = {}  # characters each running node's model calls wrote so far
    shown: dict[str, float] = {}  # when each node's last Progress went out
    for mode, payload in chunks:
        if mode == "tasks":
            task_id = payload.get("id", "")
            name = payload.get("name", "")
            if "input" in payload:  # a task starts
                now = clock()
                started[task_id] = (name, now)
                done.discard(name)
                written[name] = 0
                shown.pop(name, None)
                yield NodeStarted(node=name, at=now)
            else:  # a task finished
                done.add(name)
                _, t0 = started.pop(task_id, (name, clock()))
                result = payload.get("result")
                err = payload.get("error")
                yield NodeFinished(
                    node=name,
                    duration_s=max(0.0, clock() - t0),
                    update=fold.update(result if isinstance(result, dict) else None),
                    error=str(err) if err else None,
                )
        elif mode == "messages":
            message, meta = payload
            node = (meta or {}).get("langgraph_node", "")
            # Only streamed chunks: the full message written to state afterwards would repeat them.
            # (A stream cut short by the turn's limits may still deliver a piece after its node ended.)
            if node in done or not isinstance(message, AIMessageChunk):
                continue
            text = message.content if isinstance(message.content, str) else ""
            if node in ANSWER_NODES and text:
                yield Token(node=node, text=text)
            size = len(text) + sum(len(c.get("args") or "") for c in message.tool_call_chunks or ())
            if size:
                written[node] = written.get(node, 0) + size
                now = clock()
                if now - shown.get(node, -PROGRESS_INTERVAL_S) >= PROGRESS_INTERVAL_S:
                    shown[node] = now
                    yield Progress(node=node, chars=written[node])


#: How long past its deadline a turn is still waited for: every model call and search ends at the
#: deadline, and what follows it (the answer's fallback text, checks) takes milliseconds.
TURN_GRACE_S = 5.0


def _graph_run(graph: Any, inputs: dict[str, Any], config: dict[str, Any],
               deadline: turn_deadline.Deadline | None, cancel: threading.Event | None) -> Iterator[tuple[str, Any]]:
    """``("chunk", c)`` for each chunk of ``graph.stream``, then ``("done", final state)``. Run by a
    ``rag.deadline.pump`` worker: the graph runs under the turn's deadline and cancel event (a model
    call or stream in flight is given up once it is set), and a run that is given up (or stopped)
    is closed at its next step."""
    with turn_deadline.scope(deadline, cancel):
        # Checkpoint once per question (not after every node): the thread only needs the final state.
        stream = graph.stream(inputs, config, stream_mode=["tasks", "messages"], durability="exit")
        try:
            for chunk in stream:
                yield "chunk", chunk
        finally:
            stream.close()
        yield "done", dict(graph.get_state(config).values)


def _chunks(items: Iterable[tuple[str, Any]], values: dict[str, Any]) -> Iterator[Any]:
    """The graph's chunks out of ``_graph_run``'s items; its final state goes into ``values``."""
    for kind, item in items:
        if kind == "chunk":
            yield item
        else:
            values.update(item)


def _time_limit(budget: float | None, running: list[str]) -> Msg:
    waiting: Msg | str = ", ".join(running) if running else Msg.of("turn.the_graph")
    return Msg.of("turn.time_limit", level="error", seconds=f"{budget or 0:g}", waiting=waiting)


def run_turn(graph: Any, question: str, *, thread_id: str, book_id: str | None = None, scope: Scope | None = None,
             clock: Callable[[], float] = time.monotonic, cancel: threading.Event | None = None) -> Iterator[Event]:
    """Run one question through the compiled graph and yield events, ending with
    ``TurnFinished`` or ``TurnFailed``. Never raises for a failing turn. ``scope`` (``rag.scope``):
    the chapters to search, the spoiler limit, web spoilers allowed; None: the whole book.

    The turn runs under the graph's TURN_TIMEOUT (``rag.deadline``): model calls and searches end by
    then, and an answer still streaming is cut short. Should a step hang anyway, the turn fails at
    the deadline plus ``TURN_GRACE_S``, naming the step it waited for. A set ``cancel`` ends the run
    at its next step, and the model call or stream it is in is given up at once (``rag.deadline``);
    the events then just end (no ``TurnFinished``: the reader stopped the turn)."""
    from rag.errors import RagError

    t0 = clock()
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 50}
    # Every key every time: a question without a book (or scope) searches every book (every chapter),
    # whatever the last question of the thread did.
    scope = scope or Scope()
    inputs: dict[str, Any] = {"question": question, "book_id": book_id,
                              "chapters": tuple(scope.chapters) if scope.chapters is not None else None,
                              "read_up_to": scope.read_up_to, "allow_web_spoilers": bool(scope.allow_web_spoilers)}
    budget = turn_deadline.budget_of(graph)
    deadline = turn_deadline.Deadline.after(budget) if budget else None
    values: dict[str, Any] = {}
    running: list[str] = []  # nodes started and not finished (to name what a late turn waits for)
    items = turn_deadline.pump(lambda: _graph_run(graph, inputs, config, deadline, cancel), deadline, cancel,
                               what="turn", grace=TURN_GRACE_S)
    try:
        for event in translate_stream(_chunks(items, values), clock=clock):
            if isinstance(event, NodeStarted):
                running.append(event.node)
            elif isinstance(event, NodeFinished) and event.node in running:
                running.remove(event.node)
            yield event
    except turn_deadline.DeadlineExceeded as exc:
        if deadline is None or deadline.end + TURN_GRACE_S > time.monotonic():  # raised by the graph itself
            logger.exception("turn failed unexpectedly")
            yield TurnFailed(message=_unexpected(exc), total_s=clock() - t0)
            return
        message = _time_limit(budget, running)
        logger.warning("turn failed: %s", message)
        yield TurnFailed(message=message, total_s=clock() - t0)
        return
    except RagError as exc:
        logger.warning("turn failed: %s", exc)
        yield TurnFailed(message=exc.msg, total_s=clock() - t0)
        return
    except Exception as exc:  # noqa: BLE001 - a turn must never crash the app
        logger.exception("turn failed unexpectedly")
        yield TurnFailed(message=_unexpected(exc), total_s=clock() - t0)
        return
    finally:
        close = getattr(items, "close", None)
        if callable(close):
            close()  # stops the pump's worker: the graph's stream is closed at its next step
    if cancel is not None and cancel.is_set() and not values:
        return  # stopped before the graph finished
    yield TurnFinished(answer=str(values.get("answer", "")), total_s=clock() - t0, values=values)


def _unexpected(exc: BaseException) -> Msg:
    return Msg.of("turn.unexpected", level="error", name=type(exc).__name__, detail=str(exc))
