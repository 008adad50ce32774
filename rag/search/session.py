"""Per chat session: a budget of web searches on top of the shared (cached) web search."""

from __future__ import annotations

import logging
import threading

from rag.schemas import SearchOutcome, SearchResult, WebSearch
from rag.search.base import BudgetExceeded
from rag.search.chain import outcome_of

logger = logging.getLogger(__name__)


class SessionSearch:
    """Wraps the shared ``WebSearch`` for one chat session.

    Every search that reaches a provider counts against ``budget`` (failed ones too: they may
    have cost a request); answers served from the shared cache are free. Once the budget is used
    up, cached answers are still served and anything else raises ``BudgetExceeded``. The
    outcome's notes say e.g. "budget 3/20". ``budget=None`` means unlimited.
    """

    def __init__(self, ws: WebSearch, budget: int | None = 20) -> None:
        self.ws = ws
        self.name = ws.name
        self.budget = None if budget is None else max(0, int(budget))
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self._used)

    def _budget_note(self, used: int, extra: str = "") -> str:
        total = "unlimited" if self.budget is None else str(self.budget)
        return f"budget {used}/{total}{extra}"

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        lookup = getattr(self.ws, "lookup", None)
        if callable(lookup):
            cached = lookup(query, count)
            if cached is not None:
                note = self._budget_note(self._used, " (cache hit, not counted)")
                return cached.model_copy(update={"notes": [*cached.notes, note]})
        with self._lock:
            if self.budget is not None and self._used >= self.budget:
                logger.info("web search budget used up (%d/%d)", self._used, self.budget)
                raise BudgetExceeded(
                    self.name,
                    f"this session's web search budget is used up ({self._used}/{self.budget} searches); "
                    "start a new session or raise SEARCH_BUDGET",
                )
            self._used += 1
            used = self._used
        outcome = outcome_of(self.ws, query, count)
        if outcome.cached:  # a cache without ``lookup``: give the search back
            with self._lock:
                self._used -= 1
                used = self._used
            note = self._budget_note(used, " (cache hit, not counted)")
        else:
            note = self._budget_note(used)
        return outcome.model_copy(update={"notes": [*outcome.notes, note]})

    def __repr__(self) -> str:
        return f"SessionSearch({self.ws!r}, {self._budget_note(self._used)})"
