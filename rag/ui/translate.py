"""The pure translation from graph events (``rag.agent.events``) to UI state.

``apply_event(state, event) -> state`` never mutates its input and does no I/O; everything the page
shows (chat messages, the trace panel, the sources panel) is derived from the returned ``UiState``
by ``rag.ui.render``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import TypeAdapter

from rag.agent.events import (
    NodeFinished,
    NodeStarted,
    Progress,
    Token,
    TurnFailed,
    TurnFinished,
    as_list,
    as_models,
)
from rag.agent.names import ANSWER_NODES, ROUTE, VERIFY
from rag.agent.state import Notice, WebRound
from rag.checks import SentenceCheck
from rag.i18n import Msg
from rag.schemas import Evaluation, Passage, RouteDecision, SearchResult, Shown, shown_json

EntryStatus = Literal["running", "done", "error", "stopped"]
#: queued: asked, waiting for a free slot; stopped: the user stopped it (the graph run was ended).
TurnStatus = Literal["queued", "running", "done", "failed", "stopped"]


@dataclass(frozen=True)
class TraceEntry:
    """One node run in the trace panel."""

    node: str
    status: EntryStatus = "running"
    duration_s: float | None = None
    standalone_question: str | None = None
    route: RouteDecision | None = None
    passages: tuple[Passage, ...] | None = None  # set by retrieve_local (None: not a retrieval)
    evaluation: Evaluation | None = None
    evaluation_round: int | None = None
    web_rounds: tuple[WebRound, ...] = ()  # added by this node
    notices: tuple[Notice, ...] = ()  # added by this node
    answer_mode: str | None = None
    answer_checks: tuple[SentenceCheck, ...] | None = None  # set by verify_answer
    error: Msg | str | None = None  # a node's error (as the graph reported it) or the turn's failure
    written: int | None = None  # characters its model call wrote so far, while it runs (``Progress``)


#: A trace entry in the script API's JSON (and the start of ``trace_model``'s).
TRACE_JSON: Shown = (("node", "node"), ("status", "status"), ("duration_s", "duration_s"))


@dataclass(frozen=True)
class Turn:
    """One question and everything known about its answer."""

    question: str
    answer: str = ""
    status: TurnStatus = "running"
    error: Msg | None = None
    entries: tuple[TraceEntry, ...] = ()
    passages: tuple[Passage, ...] = ()  # cited as [1..p]
    web_results: tuple[SearchResult, ...] = ()  # cited as [p+1..]
    evaluations: tuple[Evaluation, ...] = ()
    web_rounds: tuple[WebRound, ...] = ()
    notices: tuple[Notice, ...] = ()
    answer_mode: str | None = None
    standalone_question: str | None = None
    total_s: float | None = None
    streamed: bool = False  # whether any answer token arrived
    stopped_by: Literal["user", "page"] = "user"  # a stopped turn: by the reader, or by its page closing
    answer_checks: tuple[SentenceCheck, ...] = ()  # each answer sentence checked against its citations


@dataclass(frozen=True)
class UiState:
    """The whole conversation as the page shows it."""

    turns: tuple[Turn, ...] = field(default_factory=tuple)

    @property
    def current(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    @property
    def busy(self) -> bool:
        return bool(self.turns) and self.turns[-1].status in ("queued", "running")


def start_turn(state: UiState, question: str, *, queued: bool = False) -> UiState:
    """A new question was asked: append an empty turn, running (or ``queued``: waiting for a free
    slot; its first event makes it running)."""
    return replace(state, turns=(*state.turns, Turn(question=question, status="queued" if queued else "running")))


#: The note under a stopped turn, by who stopped it (``Turn.stopped_by``).
STOP_NOTES = {"user": "stopped_note", "page": "page_closed_note"}


def stop_turn(state: UiState, total_s: float | None = None, by: Literal["user", "page"] = "user") -> UiState:
    """The user (``by`` "user") or the page going away ("page") stopped the current turn: it and its
    running entries become "stopped" (what it had already answered stays). A turn that is not queued
    or running is left as it is."""
    turn = state.current
    if turn is None or turn.status not in ("queued", "running"):
        return state
    entries = tuple(replace(e, status="stopped") if e.status == "running" else e for e in turn.entries)
    return _with_current(state, replace(turn, status="stopped", entries=entries, total_s=total_s, stopped_by=by))


def fail_turn(state: UiState, message: Msg | str, total_s: float | None = None) -> UiState:
    """Mark the current turn failed with a readable message (used when the UI itself fails; a
    plain string is shown as written)."""
    msg = message if isinstance(message, Msg) else Msg.of("text", level="error", value=message)
    return apply_event(state, TurnFailed(message=msg, total_s=total_s or 0.0))


def _with_current(state: UiState, turn: Turn) -> UiState:
    return replace(state, turns=(*state.turns[:-1], turn))


def _update_entry(entries: tuple[TraceEntry, ...], node: str, **changes: Any) -> tuple[TraceEntry, ...]:
    """Apply ``changes`` to the newest running entry of ``node``; add a finished one if none runs."""
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].node == node and entries[i].status == "running":
            return (*entries[:i], replace(entries[i], **changes), *entries[i + 1:])
    return (*entries, replace(TraceEntry(node=node), **changes))


def _finish_node(turn: Turn, event: NodeFinished) -> Turn:
    update = event.update
    changes: dict[str, Any] = {
        "status": "error" if event.error else "done",
        "duration_s": event.duration_s,
        "error": event.error,
    }
    # The per-question lists as the graph has them after the node (rag.agent.events carries them).
    lists = update.lists
    turn_changes: dict[str, Any] = {"evaluations": lists.evaluations, "web_rounds": lists.web_rounds,
                                    "web_results": lists.web_results, "notices": lists.notices}

    if update.standalone_question:
        changes["standalone_question"] = turn_changes["standalone_question"] = update.standalone_question
    if update.route is not None:
        changes["route"] = update.route
    if update.passages is not None:
        turn_changes["passages"] = update.passages
        if event.node != ROUTE or update.passages:  # route_question only resets them
            changes["passages"] = update.passages
    if update.evaluations:
        changes["evaluation"] = update.evaluations[-1]
        changes["evaluation_round"] = len(lists.evaluations)
    if update.web_rounds:
        changes["web_rounds"] = update.web_rounds
    if update.notices:
        changes["notices"] = update.notices
    if update.answer_mode and event.node in ANSWER_NODES:
        changes["answer_mode"] = turn_changes["answer_mode"] = update.answer_mode
    if event.node in ANSWER_NODES and update.answer:
        turn_changes["answer"] = update.answer  # the node's own final text wins over streamed tokens
        turn_changes["answer_checks"] = ()  # checks belong to one answer text
    if update.answer_checks is not None:
        turn_changes["answer_checks"] = update.answer_checks
        if event.node == VERIFY:  # route_question only resets them
            changes["answer_checks"] = update.answer_checks

    entries = _update_entry(turn.entries, event.node, **changes)
    return replace(turn, entries=entries, **turn_changes)


def _finish_turn(turn: Turn, event: TurnFinished) -> Turn:
    values = event.values or {}
    changes: dict[str, Any] = {"status": "done", "total_s": event.total_s}
    if event.answer:
        changes["answer"] = event.answer
    if "passages" in values and values["passages"] is not None:
        changes["passages"] = as_models(as_list(values["passages"]), Passage)
    if "web_results" in values and values["web_results"] is not None:
        changes["web_results"] = as_models(as_list(values["web_results"]), SearchResult)
    if values.get("answer_mode"):
        changes["answer_mode"] = values["answer_mode"]
    if values.get("answer_checks"):
        changes["answer_checks"] = as_models(as_list(values["answer_checks"]), SentenceCheck)
    # Entries still "running" never finished (should not happen): close them.
    entries = tuple(replace(e, status="done") if e.status == "running" else e for e in turn.entries)
    return replace(turn, entries=entries, **changes)


def apply_event(state: UiState, event: Any) -> UiState:
    """Return the UI state after ``event``. Pure: ``state`` is not modified.

    An event that arrives with no running turn starts an (unnamed) one, so the function is total.
    """
    turn = state.current
    if turn is not None and turn.status == "queued":
        turn = replace(turn, status="running")  # its first event: the turn got a slot
        state = _with_current(state, turn)
    if turn is None or (turn.status != "running" and not isinstance(event, (TurnFinished, TurnFailed))):
        state = start_turn(state, "")
        turn = state.current
    assert turn is not None

    if isinstance(event, NodeStarted):
        turn = replace(turn, entries=(*turn.entries, TraceEntry(node=event.node)))
    elif isinstance(event, NodeFinished):
        turn = _finish_node(turn, event)
    elif isinstance(event, Token):
        if event.node in ANSWER_NODES and event.text:
            turn = replace(turn, answer=(turn.answer if turn.streamed else "") + event.text, streamed=True)
    elif isinstance(event, Progress):
        running = [i for i, e in enumerate(turn.entries) if e.node == event.node and e.status == "running"]
        if not running:
            return state
        i = running[-1]
        turn = replace(turn, entries=(*turn.entries[:i], replace(turn.entries[i], written=event.chars),
                                      *turn.entries[i + 1:]))
    elif isinstance(event, TurnFinished):
        turn = _finish_turn(turn, event)
    elif isinstance(event, TurnFailed):
        entries = tuple(
            replace(e, status="error", error=e.error or event.message) if e.status == "running" else e
            for e in turn.entries
        )
        turn = replace(turn, status="failed", error=event.message, total_s=event.total_s, entries=entries)
    else:
        return state
    return _with_current(state, turn)


def apply_events(state: UiState, events: Iterable[Any]) -> UiState:
    """Fold ``apply_event`` over ``events``."""
    for event in events:
        state = apply_event(state, event)
    return state


def _text(message: Msg | None) -> str | None:
    """A failure's English text for JSON (None: no failure)."""
    return None if message is None else str(message)


def _plain(value: Any) -> Any:
    """``value`` for JSON: every ``Msg`` in it (a notice's or a web round's, once their producers
    emit codes) as its English text."""
    if isinstance(value, Msg):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def notice_json(notice: Notice) -> dict[str, Any]:
    """A notice for JSON: its node, level and English ``message``."""
    return {"node": notice["node"], "level": notice["level"], "message": str(notice["msg"])}


def trace_model(turn: Turn) -> dict[str, Any]:
    """A plain, JSON-able summary of one turn's trace (for tests, logs and gr.JSON)."""
    entries = []
    for e in turn.entries:
        item: dict[str, Any] = shown_json(e, TRACE_JSON)
        if e.route is not None:
            item["route"] = e.route.model_dump()
        if e.passages is not None:
            item["hits"] = [
                {"label": p.label(), "score": p.score, "source": p.source} for p in e.passages
            ]
        if e.evaluation is not None:
            item["evaluation"] = e.evaluation.model_dump()
            item["round"] = e.evaluation_round
        if e.web_rounds:
            item["web"] = [
                {
                    "query": r.get("query", ""),
                    "provider": r.get("provider", ""),
                    "error": _plain(r.get("error")),
                    "notes": _plain(list(r.get("notes") or [])),
                    "results": len(r.get("results") or []),
                }
                for r in e.web_rounds
            ]
        if e.notices:
            item["notices"] = [notice_json(n) for n in e.notices]
        if e.error:
            item["error"] = str(e.error)
        entries.append(item)
    return {
        "question": turn.question,
        "status": turn.status,
        "entries": entries,
        "total_s": turn.total_s,
        "error": _text(turn.error),
    }


#: A checked sentence as JSON (the part's JSON comes with its evaluation's ``model_dump``).
SENTENCE_JSON: TypeAdapter[SentenceCheck] = TypeAdapter(SentenceCheck)


def turn_result(turn: Turn) -> dict[str, Any]:
    """A finished turn as plain JSON for scripts (the ``/ask_json`` endpoint): the answer, its mode,
    every evaluation (with parts and the model's own verdict), the numbered passages and web
    sources, each answer sentence's check, notices and the trace's nodes with durations."""
    p = len(turn.passages)
    return {
        "question": turn.question,
        "status": turn.status,
        "answer": turn.answer,
        "mode": turn.answer_mode,
        "error": _text(turn.error),
        "total_s": turn.total_s,
        "standalone_question": turn.standalone_question,
        "evaluations": [e.model_dump(mode="json") for e in turn.evaluations],
        "passages": [x.cited(n) for n, x in enumerate(turn.passages, start=1)],
        "web_sources": [r.cited(p + n) for n, r in enumerate(turn.web_results, start=1)],
        "sentence_checks": [SENTENCE_JSON.dump_python(c, mode="json") for c in turn.answer_checks],
        "notices": [notice_json(n) for n in turn.notices],
        "trace": [shown_json(e, TRACE_JSON) for e in turn.entries],
    }
