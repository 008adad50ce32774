"""Web-search budgets on top of the shared (cached) web search: per visitor (a browser session, or
every script call together) and per server (searches per hour on the server's key)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable

from rag.errors import BudgetExceeded
from rag.i18n import Msg
from rag.schemas import SearchOutcome, SearchResult, WebSearch
from rag.search import notes
from rag.search.chain import outcome_of

logger = logging.getLogger(__name__)

HOUR_S = 3600.0


class Ledger:
    """The searches made through one shared web search: per visitor, and the server's within the
    last hour. Every ``SessionSearch`` over that web search counts here, so a visitor who opens a
    new session (each ``/ask_json`` call is one) does not get a fresh budget."""

    def __init__(self, per_hour: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_hour = per_hour
        self.clock = clock
        self._used: dict[str, int] = {}
        self._hour: deque[float] = deque()
        self._lock = threading.Lock()

    def used(self, visitor: str) -> int:
        return self._used.get(visitor, 0)

    def take(self, visitor: str, budget: int | None, provider: str) -> int:
        """Count one search for ``visitor``; their count after it. Raises ``BudgetExceeded`` when
        their budget or the server's hourly one is used up (and counts nothing)."""
        with self._lock:
            used = self._used.get(visitor, 0)
            if budget is not None and used >= budget:
                logger.info("web search budget used up (%d/%d)", used, budget)
                raise BudgetExceeded(provider, Msg.of("search.budget_used_up", level="error", provider=provider,
                                                      used=used, budget=budget))
            now = self.clock()
            while self._hour and now - self._hour[0] >= HOUR_S:
                self._hour.popleft()
            if self.per_hour and len(self._hour) >= self.per_hour:
                logger.warning("the server's web search budget is used up (%d searches in the last hour)",
                               len(self._hour))
                raise BudgetExceeded(provider, Msg.of("search.server_budget_used_up", level="error",
                                                      provider=provider, budget=self.per_hour))
            self._hour.append(now)
            self._used[visitor] = used + 1
            return used + 1

    def give_back(self, visitor: str) -> int:
        """A search that cost nothing (served from a cache): uncounted again."""
        with self._lock:
            self._used[visitor] = max(0, self._used.get(visitor, 0) - 1)
            if self._hour:
                self._hour.pop()
            return self._used[visitor]


_LEDGERS: weakref.WeakKeyDictionary[object, Ledger] = weakref.WeakKeyDictionary()
_LEDGERS_LOCK = threading.Lock()


def ledger_for(ws: WebSearch, per_hour: int | None = None) -> Ledger:
    """The one ``Ledger`` of a shared web search (``per_hour``, when given, sets its hourly limit)."""
    with _LEDGERS_LOCK:
        try:
            ledger = _LEDGERS.get(ws)
            if ledger is None:
                ledger = _LEDGERS[ws] = Ledger()
        except TypeError:  # not weak-referenceable: a ledger of its own
            ledger = Ledger()
        if per_hour is not None:
            ledger.per_hour = max(0, int(per_hour)) or None
        return ledger


class SessionSearch:
    """Wraps the shared ``WebSearch`` for one visitor.

    Every search that reaches a provider counts against ``budget`` (failed ones too: they may
    have cost a request) and against the server's ``per_hour`` searches (``SEARCH_SERVER_PER_HOUR``);
    answers served from the shared cache are free. ``visitor`` names whose budget it is (a session's
    id, or every script call's): searches through any ``SessionSearch`` of that visitor over the
    same web search count together; None: this one's own. Once a budget is used up, cached answers
    are still served and anything else raises ``BudgetExceeded``, whose message the trace shows.
    The outcome's notes say e.g. "budget 3/20". ``budget=None`` means unlimited.
    """

    def __init__(self, ws: WebSearch, budget: int | None = 20, *, visitor: str | None = None,
                 per_hour: int | None = None) -> None:
        self.ws = ws
        self.name = ws.name
        self.budget = None if budget is None else max(0, int(budget))
        self.visitor = visitor or f"session-{uuid.uuid4().hex}"
        self._ledger = ledger_for(ws, per_hour)

    @property
    def used(self) -> int:
        return self._ledger.used(self.visitor)

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.used)

    def _budget_note(self, used: int, *, free: bool = False) -> Msg:
        return notes.budget(used, self.budget, free=free)

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        lookup = getattr(self.ws, "lookup", None)
        if callable(lookup):
            cached = lookup(query, count)
            if cached is not None:
                return notes.noted(cached, after=[self._budget_note(self.used, free=True)])
        used = self._ledger.take(self.visitor, self.budget, self.name)
        outcome = outcome_of(self.ws, query, count)
        if outcome.cached:  # a cache without ``lookup``: give the search back
            note = self._budget_note(self._ledger.give_back(self.visitor), free=True)
        else:
            note = self._budget_note(used)
        return notes.noted(outcome, after=[note])

    def __repr__(self) -> str:
        return f"SessionSearch({self.ws!r}, {self._budget_note(self.used)})"
