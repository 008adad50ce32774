"""The script API behind the page (``/ask`` and ``/ask_json``, see README "Script API"); its scope
fields become a ``rag.scope.Scope`` as the page's do. No Gradio import.

Each call is a fresh conversation with its own graph and memory; the calls of one client address
share a web-search budget (``api_visitor``). It runs the same graph and the same pure translation
(``rag.ui.translate``) as the page.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from typing_extensions import TypedDict, is_typeddict  # pydantic reads it on Python 3.11 (typing's is 3.12+)

from rag.checks import SentenceCheck
from rag.errors import RagError
from rag.i18n import Msg
from rag.schemas import Evaluation, Passage, SearchResult, shown_type
from rag.scope import Scope, chapter_range
from rag.ui.translate import TRACE_JSON, TraceEntry, Turn, UiState, apply_event, start_turn, turn_result

# -- ``/ask_json``'s result, typed: the JSON ``rag.ui.translate.turn_result``
# returns, field by field, so ``view_api()`` and MCP clients see its fields instead of "Any".
# TypedDicts, not pydantic models: the result stays the plain dict it always was; its JSON schema
# is ``pydantic.TypeAdapter(AskResult).json_schema()``. An evaluation, a checked part and a checked
# sentence are the records the turn keeps (``rag.schemas.Evaluation``, ``rag.checks.PartCheck``,
# ``SentenceCheck``), serialised as they are; a passage and a web source are shown numbered, as
# cited, under names of their own (``n``, ``label``, ``retriever``, ``site``): ``Passage.cited`` and
# ``SearchResult.cited``, typed from the records' own fields (``rag.schemas.shown_type``), as is a
# trace entry (``TRACE_JSON``).


if TYPE_CHECKING:  # to mypy a record's JSON is a dict; to the API page and its clients, its fields
    PassageJson = dict[str, Any]
    WebSourceJson = dict[str, Any]
    TraceJson = dict[str, Any]
else:
    PassageJson = shown_type(Passage, "PassageJson", Passage.CITED, n=int)  # a book passage, cited as [n]
    WebSourceJson = shown_type(SearchResult, "WebSourceJson", SearchResult.CITED, n=int)  # a web result, after them
    TraceJson = shown_type(TraceEntry, "TraceJson", TRACE_JSON)  # one node of the trace and how long it took


class NoticeJson(TypedDict):
    """A notice of a node, in English."""

    node: str
    level: str
    message: str


class AskResult(TypedDict):
    """Everything about one answer (``/ask_json``)."""

    question: str
    status: str
    answer: str
    mode: str | None
    error: str | None
    total_s: float | None
    standalone_question: str | None
    evaluations: list[Evaluation]
    passages: list[PassageJson]
    web_sources: list[WebSourceJson]
    sentence_checks: list[SentenceCheck]
    notices: list[NoticeJson]
    trace: list[TraceJson]


F = TypeVar("F", bound=Callable[..., Any])


class MessageJson(TypedDict):
    """A check's note as a message code: its code, parameters and level (``rag.i18n.Msg`` as JSON)."""

    code: str
    params: dict[str, Any]
    level: str


def documented(hint: Any) -> Any:
    """``hint`` as Gradio's API page can read it: a ``Msg`` as ``MessageJson`` (Gradio's schema
    walker cannot follow a message's params, which may hold messages), a dataclass as a TypedDict of
    its own fields, and lists, tuples, unions and TypedDicts rebuilt around their members. The
    records keep their one definition; this only retypes them for the page."""
    if hint is Msg:
        return MessageJson
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:  # a constrained type: its JSON is the type's
        return documented(args[0])
    if isinstance(hint, type) and issubclass(hint, BaseModel):  # every field, those code sets too
        fields = {name: documented(field.annotation) for name, field in hint.model_fields.items()}
        return TypedDict(hint.__name__, fields)  # type: ignore[operator]
    if origin in (Union, UnionType):
        return Union[tuple(documented(a) for a in args)]  # noqa: UP007 - built from a tuple of members
    if origin in (list, tuple) and args:
        return origin[tuple(a if a is ... else documented(a) for a in args)]
    if is_typeddict(hint) or dataclasses.is_dataclass(hint):
        fields = {name: documented(sub) for name, sub in get_type_hints(hint).items()}
        return TypedDict(hint.__name__, fields)  # type: ignore[operator]
    return hint


def returning(fn: F, result: type) -> F:
    """``fn`` with ``result`` (as ``documented``) as its return annotation: ``gr.api`` reads the
    annotation as written, a string where annotations are postponed (PEP 563), and a string is
    "Any" to it."""
    fn.__annotations__["return"] = documented(result)
    return fn


def api_visitor(address: str | None) -> str:
    """Whose web-search budget a script call spends: one per client address (kept as a hash, so
    no address is held or logged as it is); "script-api" where the address is unknown."""
    if not address:
        return "script-api"
    return "script-api-" + hashlib.sha256(address.encode("utf-8")).hexdigest()[:16]


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
        scope = Scope(chapters=chapter_range(chapter_from, chapter_to), read_up_to=int(read_up_to) if read_up_to else None,
                      allow_web_spoilers=bool(allow_web_spoilers))
        owner = self.owner()
        book_id = self._book_id(book, self._library(owner))
        state = start_turn(UiState(), question)
        graph = self.make_graph(owner)
        events = run_turn(graph, question, thread_id=f"api-{id(graph):x}", book_id=book_id, scope=scope)
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
