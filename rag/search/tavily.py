"""Tavily search (https://api.tavily.com/search)."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from rag.errors import SearchRateLimited
from rag.i18n import Msg
from rag.schemas import SearchResult
from rag.search.base import DEFAULT_HTTP, HttpOptions, HttpProvider, capped, with_detail
from rag.search.hygiene import make_result

DEFAULT_URL = "https://api.tavily.com/search"
MAX_COUNT = 20  # the API accepts max_results 0..20
#: Tavily's own status codes for "plan / pay-as-you-go usage limit reached".
QUOTA_STATUSES = (432, 433)


class TavilySearch(HttpProvider):
    """``POST https://api.tavily.com/search`` with a bearer key and
    ``{query, max_results, search_depth}``; results in ``results[]`` (title, url, content, score)."""

    name = "tavily"
    key_env = "TAVILY_API_KEY"

    def __init__(self, api_key: SecretStr | None, *, url: str = DEFAULT_URL, search_depth: str = "basic",
                 http: HttpOptions = DEFAULT_HTTP) -> None:
        self._api_key = self.require_key(api_key)
        self.url = url
        self.search_depth = search_depth
        super().__init__(capped(http, MAX_COUNT), secrets=[api_key])

    def _build_request(self, query: str, count: int) -> httpx.Request:
        return self._client.build_request(
            "POST",
            self.url,
            json={
                "query": query,
                "max_results": count,
                "search_depth": self.search_depth,
                "include_answer": False,
            },
            headers={"Authorization": f"Bearer {self._api_key.get_secret_value()}"},
        )

    def _check_status(self, response: httpx.Response) -> None:
        if response.status_code in QUOTA_STATUSES:
            detail = self._error_detail(response)
            raise SearchRateLimited(self.name, with_detail(self._msg("plan_limit", status=response.status_code), detail))
        super()._check_status(response)

    def _fetch(self, query: str, count: int, notes: list[Msg]) -> list[SearchResult | None]:
        data = self._request_json(query, count, notes)
        items = self.results_list(data)
        return [
            make_result(
                provider=self.name,
                url=item.get("url"),
                title=item.get("title"),
                snippet=item.get("content"),
                date=item.get("published_date"),
            )
            for item in items
        ]
