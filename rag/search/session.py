"""Per chat session: a budget of web searches on top of the shared (cached) web search."""

from __future__ import annotations

import logging
import threading

from rag.errors import BudgetExceeded
from rag.i18n import Msg
from rag.schemas import SearchOutcome, SearchResult, WebSearch
from rag.search import notes
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

    def _budget_note(self, used: int, *, free: bool = False) -> Msg:
        return notes.budget(used, self.budget, free=free)

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        lookup = getattr(self.ws, "lookup", None)
        if callable(lookup):
            cached = lookup(query, count)
            if cached is not None:
                return notes.noted(cached, after=[self._budget_note(self._used, free=True)])
        with self._lock:
            if self.budget is not None and self._used >= self.budget:
                logger.info("web search budget used up (%d/%d)", self._used, self.budget)
                raise BudgetExceeded(self.name, Msg.of("search.budget_used_up", level="error", provider=self.name,
                                                       used=self._used, budget=self.budget))
            self._used += 1
            used = self._used
        outcome = outcome_of(self.ws, query, count)
        if outcome.cached:  # a cache without ``lookup``: give the search back
            with self._lock:
                self._used -= 1
                used = self._used
            note = self._budget_note(used, free=True)
        else:
            note = self._budget_note(used)
        return notes.noted(outcome, after=[note])

    def __repr__(self) -> str:
        return f"SessionSearch({self.ws!r}, {self._budget_note(self._used)})"
