"""The graph's injected dependencies. Tests build ``Deps`` with fakes; the app with real clients
(see ``rag.agent.wiring.make_deps``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag.agent.rewrite import QueryRewriter
from rag.config import Settings, web_enabled
from rag.llm import ChatModel, MethodCache
from rag.schemas import (
    Passage,
    PassageSource,
    RetrievalOutcome,
    Retriever,
    SearchOutcome,
    SearchResult,
    WebSearch,
)


@dataclass
class Deps:
    settings: Settings
    llm: ChatModel | None = None  # a LangChain chat model; None means retrieval-only mode
    retriever: Retriever | PassageSource | None = None  # see ``as_retriever``
    web_search: WebSearch | None = None  # None means the web is disabled (see ``as_web_search``)
    eval_log: Callable[[dict[str, Any]], None] | None = None  # receives one record per evaluation
    secrets: list[str] = field(default_factory=list)  # values scrubbed from notices shown to users
    few_shot: bool = True  # the judge's few-shot counter-examples (prompts.EVALUATE_FEW_SHOT)
    # Rewrites the question into the book's language and search keywords before retrieve_local
    # searches (rag.agent.rewrite.QueryRewriter); None: the question is searched as it is.
    rewriter: QueryRewriter | None = None
    # What structured calls learnt of the endpoint ("auto": json_schema, or tools after a refusal).
    methods: MethodCache = field(default_factory=MethodCache)

    @property
    def web_enabled(self) -> bool:
        """Whether answers may search the web: a web search is injected and rounds are allowed."""
        return web_enabled(self.web_search is not None, self.settings.max_web_rounds)

    @property
    def mode(self) -> str:
        """'model' when an LLM is connected, else 'retrieval_only'."""
        return "model" if self.llm is not None else "retrieval_only"


class _PassagesOnly:
    """A ``Retriever`` over a ``PassageSource`` that offers nothing but ``retrieve``: its search
    fuses no rewritten queries and has no notes, and it knows no book titles."""

    def __init__(self, source: PassageSource) -> None:
        self.source = source

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None,
                 chapters: tuple[int, int] | None = None) -> list[Passage]:
        if chapters is None:  # a source without chapter scopes still works
            return self.source.retrieve(query, k=k, book_id=book_id)
        return self.source.retrieve(query, k=k, book_id=book_id, chapters=chapters)

    def search(self, query: str, k: int | None = None, book_id: str | None = None, *,
               chapters: tuple[int, int] | None = None, queries: list[str] | None = None) -> RetrievalOutcome:
        return RetrievalOutcome(passages=self.retrieve(query, k=k, book_id=book_id, chapters=chapters))

    def book(self, book_id: str) -> Any:
        raise LookupError(f"no book titles in {type(self.source).__name__}")


class _PlainSearch:
    """A ``WebSearch`` over a provider that only has ``search`` (its outcome names the provider)."""

    def __init__(self, search: Any) -> None:
        self._search = search
        self.name = str(search.name)

    def search(self, query: str, count: int) -> list[SearchResult]:
        return list(self._search.search(query, count))

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        return SearchOutcome(results=self.search(query, count), provider=self.name)


def as_retriever(source: Retriever | PassageSource | None) -> Retriever | None:
    """``source`` as the full ``Retriever`` the nodes call (a bare ``PassageSource`` adapted)."""
    if source is None or isinstance(source, Retriever):
        return source
    return _PassagesOnly(source)


def as_web_search(search: Any | None) -> WebSearch | None:
    """``search`` as the full ``WebSearch`` the web node calls (a provider with ``search`` only adapted)."""
    if search is None or isinstance(search, WebSearch):
        return search
    return _PlainSearch(search)
