"""The script API behind the page (``/ask`` and ``/ask_json``, see README "Script API"), and the
one place that turns a question's scope into ``rag.agent.events.run_turn``'s keywords. No Gradio import.

Each call is a fresh conversation with its own graph and memory; the calls of one client address
share a web-search budget (``api_visitor``). It runs the same graph and the same pure translation
(``rag.ui.translate``) as the page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar, cast

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (typing's is 3.12+)

from rag.errors import RagError
from rag.ui.translate import Turn, UiState, apply_event, start_turn, turn_result

# -- ``/ask_json``'s result, typed (issue 25, item 9): the JSON ``rag.ui.translate.turn_result``
# returns, field by field, so ``view_api()`` and MCP clients see its fields instead of "Any".
# TypedDicts, not pydantic models: the result stays the plain dict it always was; its JSON schema
# is ``pydantic.TypeAdapter(AskResult).json_schema()``.


class MessageJson(TypedDict):
    """A check's note as a message code: its code, parameters and level."""

    code: str
    params: dict[str, Any]
    level: str


class PartJson(TypedDict):
    """One part of the question as the judge claimed it and the code checked it."""

    part: str
    answer: str
    source: int | None
    quote: str
    status: Literal["verified", "unverified", "not_found"]
    detail: MessageJson | str
    matched_source: int | None
    span: list[int] | None
    origin: Literal["book", "web"] | None


class EvaluationJson(TypedDict):
    """One round's verdict: enough or not, what is missing, the web query, and the checked parts."""

    reason: str
    enough: bool
    missing: list[str]
    web_query: str | None
    confidence: float
    parts: list[PartJson]
    model_enough: bool | None
    mode: Literal["evidence", "verdict", "guarded"]


class PassageJson(TypedDict):
    """A book passage, cited as [n]; ``retriever``: keyword, vector or hybrid."""

    n: int
    label: str
    book_id: str
    book_title: str
    chapter: int | None
    text: str
    retriever: str
    score: float


class WebSourceJson(TypedDict):
    """A web result, cited as [n] after the passages."""

    n: int
    title: str
    url: str
    snippet: str
    site: str | None
    date: str | None


class SentenceCheckJson(TypedDict):
    """One sentence of the answer checked against the sources it cites."""

    text: str
    start: int
    end: int
    citations: list[int]
    status: Literal["supported", "unsupported", "uncited", "no_claim", "not_checked"]
    reason: MessageJson | str
    origin: Literal["book", "web", "both"] | None


class NoticeJson(TypedDict):
    """A notice of a node, in English."""

    node: str
    level: str
    message: str


class TraceJson(TypedDict):
    """One node of the trace and how long it took."""

    node: str
    status: str
    duration_s: float | None


class AskResult(TypedDict):
    """Everything about one answer (``/ask_json``)."""

    question: str
    status: str
    answer: str
    mode: str | None
    error: str | None
    total_s: float | None
    standalone_question: str | None
    evaluations: list[EvaluationJson]
    passages: list[PassageJson]
    web_sources: list[WebSourceJson]
    sentence_checks: list[SentenceCheckJson]
    notices: list[NoticeJson]
    trace: list[TraceJson]


F = TypeVar("F", bound=Callable[..., Any])


def returning(fn: F, result: type) -> F:
    """``fn`` with ``result`` as its return annotation: ``gr.api`` reads the annotation as written,
    a string where annotations are postponed (PEP 563), and a string is "Any" to it."""
    fn.__annotations__["return"] = result
    return fn


def api_visitor(address: str | None) -> str:
    """Whose web-search budget a script call spends: one per client address (kept as a hash, so
    no address is held or logged as it is); "script-api" where the address is unknown."""
    if not address:
        return "script-api"
    return "script-api-" + hashlib.sha256(address.encode("utf-8")).hexdigest()[:16]


def scope_kwargs(*, chapters: tuple[int, int] | None = None, read_up_to: int | None = None,
                 allow_web_spoilers: bool = False) -> dict[str, Any]:
    """The scope keywords of ``run_turn`` that are set (the others keep its defaults): an inclusive
    chapter range, the last chapter the reader has read (no spoilers past it), and whether web
    results may spoil anyway."""
    wanted: dict[str, Any] = {}
    if chapters is not None:
        wanted["chapters"] = chapters
    if read_up_to is not None:
        wanted["read_up_to"] = read_up_to
    if allow_web_spoilers:
        wanted["allow_web_spoilers"] = True
    return wanted


def chapter_range(first: float | int | None, last: float | int | None) -> tuple[int, int] | None:
    """(first, last) from two optional chapter numbers (0 / empty = open end); None for all."""
    a = int(first) if first else None
    b = int(last) if last else None
    if a is None and b is None:
        return None
    a, b = a or 1, b or 10**6
    if a < 1 or b < 1:
        raise ValueError("chapter numbers start at 1")
    return (min(a, b), max(a, b))


class ScriptApi:
    """``ask`` (the answer text as it grows) and ``ask_json`` (everything about the answer).

    ``make_graph(owner)`` builds a graph whose book search sees what ``owner`` sees; ``owner()``
    names the caller for one call: None where the library is shared, else a fresh owner, who
    sees the shared books only (a script never reaches a visitor's own uploads)."""

    def __init__(self, make_graph: Callable[[str | None], Any], index: Any | None = None, *,
                 owner: Callable[[], str | None] = lambda: None) -> None:
        self.make_graph = make_graph
        self.index = index
        self.owner = owner

    def _library(self, owner: str | None) -> Any:
        return self.index.for_owner(owner) if owner is not None and self.index is not None else self.index

    def _book_id(self, book: str, library: Any) -> str | None:
        book = (book or "").strip()
        if not book:
            return None
        if library is None:
            raise RagError("this app has no book index")
        from rag.index.resolve import lookup_book

        return str(lookup_book(library, book).id)  # BookNotFound (a RagError): unknown, or several books

    def turns(self, question: str, book: str = "", chapter_from: int = 0, chapter_to: int = 0,
              read_up_to: int = 0, allow_web_spoilers: bool = False) -> Iterator[Turn]:
        """The turn after each event of one question, from a fresh conversation."""
        from rag.agent.events import run_turn

        question = (question or "").strip()
        if not question:
            raise ValueError("the question is empty")
        scope = scope_kwargs(chapters=chapter_range(chapter_from, chapter_to),
                             read_up_to=int(read_up_to) if read_up_to else None,
                             allow_web_spoilers=bool(allow_web_spoilers))
        owner = self.owner()
        book_id = self._book_id(book, self._library(owner))
        state = start_turn(UiState(), question)
        graph = self.make_graph(owner)
        events = run_turn(graph, question, thread_id=f"api-{id(graph):x}", book_id=book_id, **scope)
        try:
            for event in events:
                state = apply_event(state, event)
                assert state.current is not None
                yield state.current
        finally:
            close = getattr(events, "close", None)  # run_turn is a generator: closing it ends the graph run
            if callable(close):
                close()

    def ask(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        """The answer text each time it grows; raises ``RagError`` if the turn fails."""
        last: Turn | None = None
        for turn in self.turns(*args, **kwargs):
            if last is None or turn.answer != last.answer:
                yield turn.answer
            last = turn
        if last is not None and last.status == "failed":
            raise RagError(last.error or "the question could not be answered")

    def ask_json(self, *args: Any, **kwargs: Any) -> AskResult:
        """Everything about the answer (``rag.ui.translate.turn_result``), once it is done."""
        last: Turn | None = None
        for last in self.turns(*args, **kwargs):  # noqa: B007 - the last state is the result
            continue
        assert last is not None
        return cast(AskResult, turn_result(last))
