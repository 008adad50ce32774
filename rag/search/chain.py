"""A failover chain: try each provider in order; the first that answers wins."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rag.errors import SearchChainFailed, SearchError, SearchInvalidQuery
from rag.i18n import Msg
from rag.schemas import SearchOutcome, SearchResult, WebSearch
from rag.search.notes import noted

logger = logging.getLogger(__name__)


def outcome_of(ws: WebSearch, query: str, count: int) -> SearchOutcome:
    """``ws.search_detailed`` when it has one, else ``ws.search`` wrapped in an outcome."""
    detailed = getattr(ws, "search_detailed", None)
    if callable(detailed):
        return detailed(query, count)
    return SearchOutcome(results=ws.search(query, count), provider=ws.name)


class SearchChain:
    """``name`` is e.g. "bocha,duckduckgo". When a provider fails (any ``SearchError``) the next
    one is tried and the outcome's notes say so (``search.provider_failed``); zero results is an answer, not a failure.
    When every provider fails, ``SearchChainFailed`` carries each error."""

    def __init__(self, providers: Sequence[WebSearch]) -> None:
        if not providers:
            raise ValueError("a search chain needs at least one provider")
        self.providers = list(providers)
        self.name = ",".join(p.name for p in self.providers)

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        errors: list[SearchError] = []
        notes: list[Msg] = []
        for provider in self.providers:
            try:
                outcome = outcome_of(provider, query, count)
            except SearchInvalidQuery:
                raise
            except SearchError as exc:
                logger.warning("web search via %s failed (%s): %s", provider.name, type(exc).__name__, exc)
                errors.append(exc)
                notes.append(Msg.of("search.provider_failed", level="warning", provider=provider.name,
                                    kind=type(exc).__name__, detail=exc.msg))
                continue
            if errors:
                notes.append(Msg.of("search.answered_after", provider=outcome.provider or provider.name,
                                    n=len(errors)))
            return noted(outcome, before=notes)
        if len(errors) == 1:
            raise errors[0]
        raise SearchChainFailed(self.name, errors)

    def close(self) -> None:
        for provider in self.providers:
            close = getattr(provider, "close", None)
            if callable(close):
                close()

    def __repr__(self) -> str:
        return f"SearchChain({self.name!r})"
