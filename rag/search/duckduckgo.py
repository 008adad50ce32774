"""DuckDuckGo (and friends) through the ``ddgs`` package: the keyless default.

``ddgs`` is a metasearch library; ``backend`` picks its engines ("duckduckgo" by default; "auto"
lets it spread the query over several engines, which survives rate limits better). Its
exceptions are wrapped into the typed ``SearchError`` subclasses. ``ddgs`` is imported when the
provider is built, never at import time of this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from rag.errors import SearchBadResponse, SearchNetworkError, SearchRateLimited, SearchTimeout
from rag.i18n import Msg
from rag.schemas import SearchResult
from rag.search.base import NO_DETAIL, Provider
from rag.search.hygiene import excerpt, list_of_dicts, make_result

logger = logging.getLogger(__name__)

#: What ``DDGS.text`` raises when every engine answered but nothing matched.
NO_RESULTS_MESSAGE = "No results found."


class DuckDuckGoSearch(Provider):
    name = "duckduckgo"

    def __init__(
        self,
        *,
        timeout: float = 8.0,
        snippet_chars: int = 800,
        max_count: int = 8,
        backend: str = "duckduckgo",
        region: str = "wt-wt",
        ddgs_factory: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(snippet_chars=snippet_chars, max_count=max_count)
        self.timeout = timeout
        self.backend = backend
        self.region = region
        if ddgs_factory is None:
            from ddgs import DDGS

            seconds = max(1, round(timeout))

            def ddgs_factory() -> Any:
                return DDGS(timeout=seconds)

        self._factory = ddgs_factory

    def _fetch(self, query: str, count: int, notes: list[Msg]) -> list[SearchResult | None]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            raw = self._factory().text(query, region=self.region, max_results=count, backend=self.backend)
        except RatelimitException as exc:
            raise SearchRateLimited(self.name, self._msg("ddgs_rate_limited", detail=excerpt(str(exc)) or NO_DETAIL)) from None
        except TimeoutException as exc:
            raise SearchTimeout(self.name, self._timeout(str(exc))) from None
        except DDGSException as exc:
            message = str(exc).strip()
            if message == NO_RESULTS_MESSAGE:
                return []  # ddgs reports zero results as an exception: not an error for us
            lowered = message.lower()
            if "timed out" in lowered or "timeout" in lowered:
                raise SearchTimeout(self.name, self._timeout(message)) from None
            if "ratelimit" in lowered or "rate limit" in lowered:
                raise SearchRateLimited(self.name, self._msg("ddgs_rate_limited", detail=excerpt(message))) from None
            raise SearchNetworkError(self.name, self._msg("ddgs_failed", detail=excerpt(message) or type(exc).__name__)) from None
        except Exception as exc:  # noqa: BLE001 - anything else from the library becomes typed
            logger.warning("ddgs raised %s", type(exc).__name__)
            raise SearchNetworkError(self.name, self._msg("ddgs_failed_kind", kind=type(exc).__name__,
                                                          detail=excerpt(str(exc)) or NO_DETAIL)) from None
        if raw is None:
            return []
        items = list_of_dicts(raw)
        if items is None or (raw and not items):
            if self.said(raw):
                raise self.bad_shape(f"{type(raw).__name__}, not a list", raw)
            raise SearchBadResponse(self.name, self._msg("ddgs_not_list", kind=type(raw).__name__))
        return [
            make_result(
                provider=self.name,
                url=item.get("href") or item.get("url"),
                title=item.get("title"),
                snippet=item.get("body"),
                date=item.get("date"),
            )
            for item in items
        ]

    def _timeout(self, detail: str) -> Msg:
        return self._msg("ddgs_timeout", seconds=f"{self.timeout:g}", detail=excerpt(detail))
