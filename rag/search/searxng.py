"""SearXNG (self-hosted metasearch, no key): ``GET {SEARXNG_URL}/search?q=...&format=json``."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from rag.errors import ConfigError
from rag.logs import url_secrets
from rag.schemas import SearchResult
from rag.search.base import (
    DEFAULT_MAX_RETRY_AFTER,
    HttpProvider,
    SearchConfigError,
    SearchError,
    excerpt,
    make_result,
)
from rag.search.bocha import check_http_url

JSON_DISABLED = (
    "HTTP 403: JSON output is not enabled on this SearXNG instance "
    "(add 'json' to search.formats in its settings.yml)"
)


class SearxngSearch(HttpProvider):
    """Results in ``results[]`` with ``url, title, content, engine, publishedDate``."""

    name = "searxng"

    def __init__(
        self,
        base_url: str | None,
        *,
        timeout: float = 8.0,
        snippet_chars: int = 800,
        max_count: int = 8,
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    ) -> None:
        if not base_url or not base_url.strip():
            raise ConfigError("SEARCH_PROVIDER includes searxng but SEARXNG_URL is not set")
        base = check_http_url(base_url, "SEARXNG_URL").rstrip("/")
        self.url = base if base.endswith("/search") else base + "/search"
        extra = {"sleep": sleep} if sleep is not None else {}
        # URL credentials (https://user:pass@host) are secrets too, and so is their Basic-auth form.
        secrets = url_secrets(self.url)
        super().__init__(
            timeout=timeout,
            snippet_chars=snippet_chars,
            max_count=max_count,
            secrets=secrets,
            client=client,
            transport=transport,
            max_retry_after=max_retry_after,
            **extra,
        )

    def _build_request(self, query: str, count: int) -> httpx.Request:
        return self._client.build_request("GET", self.url, params={"q": query, "format": "json"})

    def _forbidden(self, status: int, detail: str) -> SearchError:
        if status == 403:
            return SearchConfigError(self.name, JSON_DISABLED)
        return super()._forbidden(status, detail)

    def _fetch(self, query: str, count: int, notes: list[str]) -> list[SearchResult | None]:
        data = self._request_json(query, count, notes)
        items = self.results_list(data)
        unresponsive = data.get("unresponsive_engines")
        if isinstance(unresponsive, list) and unresponsive:
            names = ", ".join(
                excerpt(" ".join(str(part) for part in entry) if isinstance(entry, list) else str(entry), 60)
                for entry in unresponsive[:5]
            )
            notes.append(f"searxng: unresponsive engines: {self._redact(names)}")
        return [
            make_result(
                provider=self.name,
                url=item.get("url"),
                title=item.get("title"),
                snippet=item.get("content"),
                date=item.get("publishedDate"),
            )
            for item in items
        ]
