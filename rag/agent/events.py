"""Turn a LangGraph run into a flat stream of typed events.

This is the one place that knows LangGraph's stream format. The CLI and the UI both consume
``Event``s; the UI's own translation (events -> UI state) is a pure function in ``rag.ui``.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessageChunk

from rag import deadline as turn_deadline
from rag.agent.names import ANSWER_NODES

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeStarted:
    node: str
    at: float  # time.monotonic()


@dataclass(frozen=True)
class NodeFinished:
    node: str
    duration_s: float
    # The node's state update (typed objects). Per-question lists hold only the items the node
    # added, after a rag.agent.state.RESET when the node starts the question afresh.
    update: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Token:
    node: str
    text: str


@dataclass(frozen=True)
class TurnFinished:
    answer: str
    total_s: float
    values: dict[str, Any] = field(default_factory=dict)  # final graph state


@dataclass(frozen=True)
class TurnFailed:
    message: str  # readable, never a stack trace, never a key
    total_s: float


Event = NodeStarted | NodeFinished | Token | TurnFinished | TurnFailed


def translate_stream(chunks: Iterable[tuple[str, Any]], *, clock=time.monotonic) -> Iterator[Event]:
    """Translate ``graph.stream(..., stream_mode=["tasks", "messages"])`` chunks into events.

    Pure apart from the clock (injectable for tests). Does not emit TurnFinished.
    """
    started: dict[str, tuple[str, float]] = {}
    done: set[str] = set()  # nodes finished (and not started again): a late token of theirs is dropped
    for mode, payload in chunks:
        if mode == "tasks":
            task_id = payload.get("id", "")
            name = payload.get("name", "")
            if "input" in payload:  # a task starts
                now = clock()
                started[task_id] = (name, now)
                done.discard(name)
                yield NodeStarted(node=name, at=now)
            else:  # a task finished
                done.add(name)
                _, t0 = started.pop(task_id, (name, clock()))
                result = payload.get("result")
                err = payload.get("error")
                yield NodeFinished(
                    node=name,
                    duration_s=max(0.0, clock() - t0),
                    update=dict(result) if isinstance(result, dict) else {},
                    error=str(err) if err else None,
                )
        elif mode == "messages":
            message, meta = payload
            node = (meta or {}).get("langgraph_node", "")
            # Only streamed chunks: the full message written to state afterwards would repeat them.
            # (A stream cut short by the turn's limits may still deliver a piece after its node ended.)
            if node in ANSWER_NODES and node not in done and isinstance(message, AIMessageChunk):
                text = message.content if isinstance(message.content, str) else ""
                if text:
                    yield Token(node=node, text=text)


def run_turn(graph: Any, question: str, *, thread_id: str, book_id: str | None = None,
             chapters: tuple[int, int] | None = None, read_up_to: int | None = None,
             allow_web_spoilers: bool = False, clock=time.monotonic) -> Iterator[Event]:
    """Run one question through the compiled graph and yield events, ending with
    ``TurnFinished`` or ``TurnFailed``. Never raises for a failing turn. ``chapters``: search only
    chapters a..b; ``read_up_to``: spoiler limit (see ``rag.agent.state.InputState``).

    The turn runs under the graph's TURN_TIMEOUT (``rag.deadline``): model calls and searches end by
    then, and an answer still streaming is cut short. Should a step hang anyway, the turn fails at
    the deadline plus ``TURN_GRACE_S``, naming the step it waited for."""
    from rag.errors import RagError

    t0 = clock()
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 50}
    # Every key every time: a question without a book (or scope) searches every book (every chapter),
    # whatever the last question of the thread did.
    inputs: dict[str, Any] = {"question": question, "book_id": book_id,
                              "chapters": tuple(chapters) if chapters is not None else None,
                              "read_up_to": read_up_to, "allow_web_spoilers": bool(allow_web_spoilers)}
    budget = turn_deadline.budget_of(graph)
    deadline = turn_deadline.Deadline.after(budget) if budget else None
    run = _GraphRun(graph, inputs, config, deadline)
    running: list[str] = []  # nodes started and not finished (to name what a late turn waits for)
    try:
        for event in translate_stream(run.chunks(), clock=clock):
            if isinstance(event, NodeStarted):
                running.append(event.node)
            elif isinstance(event, NodeFinished) and event.node in running:
                running.remove(event.node)
            yield event
        values = run.values
    except _Overrun:
        waiting = ", ".join(running) or "the graph"
        message = (f"the turn did not finish within its time limit (TURN_TIMEOUT={budget:g} s): "
                   f"stopped waiting for {waiting}")
        logger.warning("turn failed: %s", message)
        yield TurnFailed(message=message, total_s=clock() - t0)
        return
    except RagError as exc:
        logger.warning("turn failed: %s", exc)
        yield TurnFailed(message=str(exc), total_s=clock() - t0)
        return
    except Exception as exc:  # noqa: BLE001 - a turn must never crash the app
        logger.exception("turn failed unexpectedly")
        yield TurnFailed(message=f"{type(exc).__name__}: {exc}", total_s=clock() - t0)
        return
    finally:
        run.stop()
    yield TurnFinished(answer=str(values.get("answer", "")), total_s=clock() - t0, values=values)


#: How long past its deadline a turn is still waited for: every model call and search ends at the
#: deadline, and what follows it (the answer's fallback text, checks) takes milliseconds.
TURN_GRACE_S = 5.0


class _Overrun(Exception):
    """The graph did not finish by the turn's deadline plus ``TURN_GRACE_S``."""


class _GraphRun:
    """``graph.stream`` (then the final state) in a worker thread under the turn's deadline. The
    caller reads the chunks as they come and stops waiting at the deadline plus ``TURN_GRACE_S``;
    a run that is given up (or whose reader stops) ends at its next step."""

    def __init__(self, graph: Any, inputs: dict[str, Any], config: dict[str, Any],
                 deadline: turn_deadline.Deadline | None) -> None:
        self.deadline = deadline
        self.values: dict[str, Any] = {}
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._stopped = threading.Event()
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(self._work, graph, inputs, config), name="rag-turn",
                         daemon=True).start()

    def _work(self, graph: Any, inputs: dict[str, Any], config: dict[str, Any]) -> None:
        try:
            with turn_deadline.scope(self.deadline):
                # Checkpoint once per question (not after every node): the thread only needs the final state.
                stream = graph.stream(inputs, config, stream_mode=["tasks", "messages"], durability="exit")
                try:
                    for chunk in stream:
                        if self._stopped.is_set():
                            return
                        self._queue.put(("chunk", chunk))
                finally:
                    stream.close()
                values = dict(graph.get_state(config).values)
            self._queue.put(("done", values))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader
            self._queue.put(("error", exc))

    def chunks(self) -> Iterator[tuple[str, Any]]:
        while True:
            wait = None
            if self.deadline is not None:
                wait = max(0.0, self.deadline.end + TURN_GRACE_S - time.monotonic())
            try:
                kind, item = self._queue.get(timeout=wait)
            except queue.Empty:
                raise _Overrun from None
            if kind == "chunk":
                yield item
            elif kind == "done":
                self.values = item
                return
            else:
                raise item

    def stop(self) -> None:
        self._stopped.set()
