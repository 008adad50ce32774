"""A small, thread-safe TTL cache in front of a provider (or chain), shared by all sessions."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from rag.schemas import SearchOutcome, SearchResult, WebSearch
from rag.search import notes
from rag.search.chain import outcome_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Entry:
    outcome: SearchOutcome
    count: int  # how many results were asked for
    stored_at: float


def cache_key(name: str, query: str) -> tuple[str, str]:
    return (name, " ".join(query.split()).casefold())


class CachedWebSearch:
    """Caches successful outcomes per (provider, query) for ``ttl`` seconds (``ttl <= 0``
    disables it). A cached answer to a larger ``count`` also serves a smaller one. Errors are
    never cached. ``clock`` is injectable for tests."""

    def __init__(
        self,
        inner: WebSearch,
        ttl: float,
        *,
        max_entries: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.ttl = ttl
        self.max_entries = max(1, max_entries)
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def lookup(self, query: str, count: int) -> SearchOutcome | None:
        """The cached outcome (marked ``cached``) or None. Never calls the provider."""
        if self.ttl <= 0:
            return None
        key = cache_key(self.name, query)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            age = self._clock() - entry.stored_at
            if age > self.ttl:
                del self._entries[key]
                return None
            if count > entry.count and len(entry.outcome.results) >= entry.count:
                return None  # the cached answer may hold fewer results than now asked for
            self._entries.move_to_end(key)
            self.hits += 1
        answered_by = entry.outcome.provider or self.name
        return notes.noted(entry.outcome, keep=False, after=[notes.cache_hit(answered_by, age)],
                           results=entry.outcome.results[: max(0, count)], cached=True)

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        cached = self.lookup(query, count)
        if cached is not None:
            logger.info("web search cache hit for provider %s", self.name)
            return cached
        with self._lock:
            self.misses += 1
        outcome = outcome_of(self.inner, query, count)
        if self.ttl > 0:
            with self._lock:
                self._entries[cache_key(self.name, query)] = _Entry(outcome, count, self._clock())
                self._entries.move_to_end(cache_key(self.name, query))
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return outcome

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"CachedWebSearch({self.inner!r}, ttl={self.ttl:g})"
