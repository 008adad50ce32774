"""The graph's typed state. Everything here is a Python object (no JSON strings).

The per-question lists (``evaluations``, ``web_rounds``, ``web_results``, ``notices``) have
reducers: a node returns only the items it adds, and the reducer appends them. The first node of
a question (``route_question``, or ``retrieval_only``) puts ``RESET`` first in each list, which
empties it before the items that follow are added. ``web_results`` also drops a result whose URL
is already in the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Annotated, Any, Literal, TypedDict, TypeVar

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from rag.checks import SentenceCheck
from rag.i18n import Msg
from rag.schemas import Evaluation, Passage, RouteDecision, SearchResult

AnswerMode = Literal["direct", "full", "partial", "fallback", "retrieval_only"]
T = TypeVar("T")


class Reset(Enum):
    """The marker that empties a per-question list (an enum so the checkpointer can store it)."""

    RESET = "reset"


RESET = Reset.RESET


def split_reset(update: Sequence[Any] | Reset | None) -> tuple[bool, list[Any]]:
    """``(resets, items)``: whether ``update`` empties the list first, and the items it adds (those
    after its last ``RESET``)."""
    if update is None:
        return False, []
    if isinstance(update, Reset):
        return True, []
    items = list(update)
    last = max((i for i, item in enumerate(items) if isinstance(item, Reset)), default=-1)
    return last >= 0, items[last + 1:]


def add_items(current: Sequence[T] | None, update: Sequence[T | Reset] | Reset | None) -> list[T]:
    """Reducer: append ``update``'s items; a ``RESET`` in it drops everything before it."""
    resets, items = split_reset(update)
    return [*([] if resets else (current or [])), *items]


def unseen_urls(current: Iterable[SearchResult], new: Iterable[SearchResult]) -> list[SearchResult]:
    """The results of ``new`` whose URL is neither in ``current`` nor earlier in ``new``."""
    seen = {r.url for r in current}
    out: list[SearchResult] = []
    for result in new:
        if result.url not in seen:
            seen.add(result.url)
            out.append(result)
    return out


def add_web_results(current: Sequence[SearchResult] | None,
                    update: Sequence[SearchResult | Reset] | Reset | None) -> list[SearchResult]:
    """Reducer: like ``add_items``, keeping one result per URL (the first one seen)."""
    resets, items = split_reset(update)
    kept = [] if resets else list(current or [])
    return [*kept, *unseen_urls(kept, items)]


class WebRound(TypedDict):
    """One web search round, as shown in the trace."""

    query: str
    provider: str  # who answered ("" if it failed)
    results: list[SearchResult]
    error: Msg | None  # why the search failed (secrets scrubbed)
    notes: list[Msg]  # e.g. "cache hit", "budget 3/20 used", "bocha failed, duckduckgo answered"


class Notice(TypedDict):
    """Something the user should see in the trace: a retry, a fallback, an error. ``msg`` is the
    message (code, params, level: the emitter's); ``level`` is its level."""

    node: str
    level: Literal["info", "warning", "error"]
    msg: Msg


class InputState(TypedDict, total=False):
    """What one question brings in (the graph's input schema; other keys are ignored).
    ``book_id`` None means every book. ``chapters``: search only the chapters numbered a..b
    (inclusive); ``read_up_to``: the spoiler limit, no passage from a later chapter and no web search
    unless ``allow_web_spoilers``."""

    question: str
    book_id: str | None
    chapters: tuple[int, int] | None
    read_up_to: int | None
    allow_web_spoilers: bool


class GraphState(TypedDict, total=False):
    # Conversation (kept across questions in one thread)
    messages: Annotated[list[AnyMessage], add_messages]

    # Input of the current question
    question: str
    book_id: str | None
    chapters: tuple[int, int] | None  # inclusive range of stored chapter numbers to search
    read_up_to: int | None  # spoiler limit: the reader has read up to this chapter
    allow_web_spoilers: bool  # with a spoiler limit, the web may still be searched (results marked)

    # Per-question state (reset by route_question)
    standalone_question: str  # question rewritten with the history (== question on the first turn)
    language: Literal["zh", "en"]
    route: RouteDecision | None
    passages: list[Passage]
    local_context: str
    evaluations: Annotated[list[Evaluation], add_items]
    web_rounds: Annotated[list[WebRound], add_items]
    web_results: Annotated[list[SearchResult], add_web_results]
    web_context: str
    notices: Annotated[list[Notice], add_items]
    answer_mode: AnswerMode
    answer: str
    answer_checks: list[SentenceCheck]  # every answer sentence checked against its citations
    # Where the app's own lines after the answer begin in ``answer`` (why it stops, text found but not
    # confirmed); None when there are none. verify_answer checks only what comes before it.
    unprocessed_from: int | None
    # Where the answer itself begins after the app's first line (what the sources do not cover); 0: no such line.
    answer_from: int


def reset_question_state() -> dict[str, Any]:
    """The update that starts a question afresh (written by its first node)."""
    return {
        "route": None,
        "passages": [],
        "local_context": "",
        "evaluations": [RESET],
        "web_rounds": [RESET],
        "web_results": [RESET],
        "web_context": "",
        "notices": [RESET],
        "answer_mode": "full",
        "answer": "",
        "answer_checks": [],
        "unprocessed_from": None,
        "answer_from": 0,
    }
