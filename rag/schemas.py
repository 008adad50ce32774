"""Typed data shared by the graph, the book index, the web providers and the UI."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

MAX_MISSING = 6


class RouteDecision(BaseModel):
    """The router's structured output."""

    reason: str = Field(description="One sentence: why this strategy.")
    strategy: Literal["simple", "complex"] = Field(
        description='"simple": general knowledge or a definition, answer directly. '
        '"complex": needs facts from the book (plot, characters, places, numbers).'
    )


class Evaluation(BaseModel):
    """The sufficiency judge's structured output. ``reason`` comes first on purpose:
    small models judge better when they explain before they decide."""

    reason: str = Field(description="Short justification, citing which parts are or are not covered.")
    enough: bool = Field(
        description="True only if every part of the question is answered by specific facts in the context."
    )
    missing: list[str] = Field(
        default_factory=list,
        description=f"What is still missing to answer fully (at most {MAX_MISSING} short items).",
    )
    web_query: str | None = Field(
        default=None,
        description="A concise web search query for the missing facts, or null when nothing is missing.",
    )
    confidence: float = Field(default=0.5, description="Confidence in this judgement, 0..1.")

    @field_validator("missing", mode="before")
    @classmethod
    def _cap_missing(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            value = [value] if value.strip() else []
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()][:MAX_MISSING]
        return value

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamp_confidence(cls, value: object) -> object:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return 0.5
        if number > 1.0 and number <= 100.0:  # some models answer in percent
            number = number / 100.0
        return min(1.0, max(0.0, number))

    @field_validator("web_query", mode="before")
    @classmethod
    def _empty_query_is_none(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in {"", "null", "none"}:
            return None
        return value


class Passage(BaseModel):
    """One retrieved chunk of a book, with where it comes from."""

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


class SearchResult(BaseModel):
    """One web search hit. Everything in it is untrusted text from the internet."""

    title: str
    url: str
    snippet: str
    site_name: str = ""
    date: str = ""
    provider: str = ""


@runtime_checkable
class Retriever(Protocol):
    """What ``retrieve_local`` needs from the book index."""

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None) -> list[Passage]:
        """Best passages for ``query`` (best first), optionally scoped to one book."""
        ...


@runtime_checkable
class WebSearch(Protocol):
    """What ``web_search`` needs from a provider (or a failover chain of providers)."""

    name: str

    def search(self, query: str, count: int) -> list[SearchResult]:
        """Up to ``count`` results. Raises ``SearchError`` on failure; zero results is not an error."""
        ...


class SearchOutcome(BaseModel):
    """A search with what the trace should know about it (who answered, cache, budget)."""

    results: list[SearchResult]
    provider: str = ""  # which provider answered (after failover)
    cached: bool = False
    notes: list[str] = Field(default_factory=list)  # e.g. "cache hit", "budget 3/20", "bocha failed: ..."
