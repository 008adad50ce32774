"""Typed data shared by the graph, the book index, the web providers and the UI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, Protocol, get_type_hints, runtime_checkable

from pydantic import BaseModel, BeforeValidator, Field, field_validator
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (typing's is 3.12+)

from rag.checks.quotes import PartCheck
from rag.i18n import Msg

MAX_MISSING = 6
MAX_PARTS = 6
MAX_FIELD_CHARS = 400  # any one string the judge writes (bounded: a looping model cannot grow it)
JudgeMode = Literal["evidence", "verdict", "guarded"]




def _clip(value: object, limit: int = MAX_FIELD_CHARS) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return value[:limit] if isinstance(value, str) else value


def _clamp_confidence(value: object) -> object:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.5
    if 1.0 < number <= 100.0:  # some models answer in percent
        number = number / 100.0
    return min(1.0, max(0.0, number))


def _empty_query_is_none(value: object) -> object:
    if isinstance(value, str) and value.strip().lower() in {"", "null", "none"}:
        return None
    return _clip(value)


def _short_list(limit: int) -> Callable[[object], object]:
    def cap(value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            value = [value] if value.strip() else []
        if isinstance(value, list):
            return [_clip(v.strip() if isinstance(v, str) else v) for v in value
                    if not isinstance(v, str) or v.strip()][:limit]
        return value
    return cap


# Every string and list has a bound in the JSON schema too, so a grammar-constrained server stops.
Reason = Annotated[str, BeforeValidator(lambda v: _clip(v, 2 * MAX_FIELD_CHARS)), Field(max_length=2 * MAX_FIELD_CHARS)]
ShortText = Annotated[str, BeforeValidator(lambda v: "" if v is None else _clip(v)), Field(max_length=MAX_FIELD_CHARS)]
Confidence = Annotated[float, BeforeValidator(_clamp_confidence)]
WebQuery = Annotated[Annotated[str, Field(max_length=MAX_FIELD_CHARS)] | None, BeforeValidator(_empty_query_is_none)]


class RouteDecision(BaseModel):
    """The router's structured output."""

    reason: Reason = Field(description="One sentence: why this strategy.")
    strategy: Literal["simple", "complex"] = Field(
        description='"simple": general knowledge or a definition, answer directly. '
        '"complex": needs facts from the book (plot, characters, places, numbers).'
    )


class SentenceLabel(BaseModel):
    """The model's label for one answer sentence given only its cited sources (``VERIFY_ANSWERS=llm``)."""

    reason: Reason = Field(description="One short sentence: what in the sources supports or contradicts it.")
    quote: str = Field(default="", description="The words of a cited source that state the sentence, copied "
                                                "exactly (one passage, at most two sentences); empty when none does.")
    label: Literal["supported", "partial", "unsupported", "contradicted"] = Field(
        description="supported: the sources state it; partial: some of it; unsupported: they do not; "
                    "contradicted: they say otherwise.")


class Evaluation(BaseModel):
    """The sufficiency judge's verdict (the model's structured output in verdict mode). ``reason``
    comes first on purpose: small models judge better when they explain before they decide."""

    reason: Reason = Field(description="Short justification, citing which parts are or are not covered.")
    enough: bool = Field(
        description="True only if every part of the question is answered by specific facts in the context."
    )
    missing: Annotated[list[ShortText], BeforeValidator(_short_list(MAX_MISSING))] = Field(
        default_factory=list,
        max_length=MAX_MISSING,
        description=f"What is still missing to answer fully (at most {MAX_MISSING} short items).",
    )
    web_query: WebQuery = Field(
        default=None,
        description="A concise web search query for the missing facts, or null when nothing is missing.",
    )
    confidence: Confidence = Field(default=0.5, description="Confidence in this judgement, 0..1.")
    # Set by code, never asked of the model (evidence and guarded modes): each part of the question
    # with the code's check of its quote, the model's own verdict, and the mode that decided ``enough``.
    parts: SkipJsonSchema[list[PartCheck]] = Field(default_factory=list, max_length=MAX_PARTS)
    model_enough: SkipJsonSchema[bool | None] = None
    mode: SkipJsonSchema[JudgeMode] = "verdict"


class ClaimedPart(BaseModel):
    """One part of the question as the judge claims it is covered (or not)."""

    part: ShortText = Field(description="One part of the question, in the question's language.")
    answer: ShortText = Field(description='The short fact that answers this part, or "not found".')
    source: int | None = Field(description="The number n of the source [n] holding the quote, or null.")
    quote: ShortText = Field(description='The exact words copied from that source that state the answer, or "not found".')

    @field_validator("source", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        if isinstance(value, str):
            digits = "".join(ch for ch in value.split(",")[0] if ch.isdigit())
            return int(digits) if digits else None
        return value


class EvidenceJudgement(BaseModel):
    """The judge's structured output in evidence and guarded modes: the parts with their quotes
    first, then its own verdict (code decides what counts; see ``rag.agent.judge``)."""

    reason: Reason = Field(description="Short justification: which parts the sources answer and which not.")
    parts: Annotated[list[ClaimedPart], BeforeValidator(_short_list(MAX_PARTS))] = Field(
        min_length=1, max_length=MAX_PARTS,
        description=f"Each part of the question (at most {MAX_PARTS}) with answer, source number and verbatim quote.",
    )
    enough: bool = Field(description="True only if every part has an answer quoted from a source.")
    web_query: WebQuery = Field(default=None, description="A web search query for the parts not found, or null.")
    confidence: Confidence = Field(default=0.5, description="Confidence in this judgement, 0..1.")


#: How a record is shown in the script API's JSON: (JSON name, the record's field or method of no
#: arguments), in the JSON's order.
Shown = tuple[tuple[str, str], ...]


def shown_json(record: object, shown: Shown, **first: Any) -> dict[str, Any]:
    """``record`` as the JSON ``shown`` describes: ``first`` (e.g. ``n``, the number it is cited by),
    then each field or method's value under its JSON name."""
    values = {name: getattr(record, what) for name, what in shown}
    return {**first, **{name: value() if callable(value) else value for name, value in values.items()}}


def shown_type(cls: type, title: str, shown: Shown, **first: Any) -> Any:
    """The TypedDict ``shown_json`` returns for a ``cls``, typed from ``cls``'s own fields (a method's
    from its return annotation) and ``first``'s types: the record keeps its one definition, and the
    API page and its clients still see each field of the JSON."""
    hints = get_type_hints(cls)

    def hint(what: str) -> Any:
        return hints[what] if what in hints else get_type_hints(getattr(cls, what))["return"]

    return TypedDict(title, {**first, **{name: hint(what) for name, what in shown}})  # type: ignore[operator]


class Passage(BaseModel):
    """One retrieved chunk of a book, with where it comes from."""

    #: Cited as [n] (the script API): where it is from, its text, which retriever found it, its score.
    CITED: ClassVar[Shown] = (("label", "label"), ("book_id", "book_id"), ("book_title", "book_title"),
                              ("chapter", "chapter_num"), ("text", "text"), ("retriever", "source"),
                              ("score", "score"))

    id: str
    text: str
    book_id: str = ""
    book_title: str = ""
    chapter_num: int | None = None
    chapter_title: str = ""
    chunk_index: int = 0
    start: int = 0
    end: int = 0
    score: float = 0.0
    source: str = ""  # "vector", "keyword" or "hybrid": which retriever found it

    def label(self) -> str:
        """Human readable location, e.g. '第二回 悟彻菩提真妙理'."""
        title = self.chapter_title.strip()
        if title:
            return title
        if self.chapter_num is not None:
            return f"Chapter {self.chapter_num}"
        return self.book_title or "?"

    def cited(self, n: int) -> dict[str, Any]:
        """The passage as the script API shows it, cited as [n] (``CITED``)."""
        return shown_json(self, self.CITED, n=n)


class SearchResult(BaseModel):
    """One web search hit. Everything in it is untrusted text from the internet."""

    #: Cited as [n] after the passages (the script API).
    CITED: ClassVar[Shown] = (("title", "title"), ("url", "url"), ("snippet", "snippet"), ("site", "site_name"),
                              ("date", "date"))

    title: str
    url: str
    snippet: str
    site_name: str = ""
    date: str = ""
    provider: str = ""

    def cited(self, n: int) -> dict[str, Any]:
        """The result as the script API shows it, cited as [n] (``CITED``)."""
        return shown_json(self, self.CITED, n=n)


class RetrievalOutcome(BaseModel):
    """A book search with what the trace should know about it (``BookIndex.search``)."""

    passages: list[Passage]
    notes: list[Msg] = Field(default_factory=list)  # e.g. "vector search failed ...; keyword results only"
    queries: list[str] = Field(default_factory=list)  # the extra (rewritten) queries that were fused


class Titled(Protocol):
    """A book as the agent needs it: its title (``rag.index``'s ``BookInfo`` is one)."""

    @property
    def title(self) -> str: ...


@runtime_checkable
class PassageSource(Protocol):
    """The least a book index must offer: the best passages for a query (a static context, a test's
    stub). ``rag.agent.deps.as_retriever`` turns one into a ``Retriever``."""

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None,
                 chapters: tuple[int, int] | None = None) -> list[Passage]:
        """Best passages for ``query`` (best first), optionally scoped to one book and to the chapters
        numbered ``chapters[0]..chapters[1]`` (inclusive)."""
        ...


@runtime_checkable
class Retriever(PassageSource, Protocol):
    """What the agent calls on the book index (``rag.index.BookIndex`` and its per-owner views)."""

    def search(self, query: str, k: int | None = None, book_id: str | None = None, *,
               chapters: tuple[int, int] | None = None, queries: list[str] | None = None) -> RetrievalOutcome:
        """Like ``retrieve``, fusing the extra (rewritten) ``queries`` with ``query``, with the
        notes the trace shows (a failed vector search, keyword results only...)."""
        ...

    def book(self, book_id: str) -> Titled:
        """The book with this id (raises when there is none)."""
        ...


@runtime_checkable
class WebSearch(Protocol):
    """What ``web_search`` calls on a provider (or a failover chain of providers, a cache, a
    session's budget)."""

    name: str

    def search(self, query: str, count: int) -> list[SearchResult]:
        """Up to ``count`` results. Raises ``SearchError`` on failure; zero results is not an error."""
        ...

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        """The results with who answered and the trace's notes (cache hit, budget, failover)."""
        ...


class SearchOutcome(BaseModel):
    """A search with what the trace should know about it (who answered, cache, budget)."""

    results: list[SearchResult]
    provider: str = ""  # which provider answered (after failover)
    cached: bool = False
    notes: list[Msg] = Field(default_factory=list)  # e.g. "cache hit", "budget 3/20", "bocha failed: ..."
