"""SearXNG (self-hosted metasearch, no key): ``GET {SEARXNG_URL}/search?q=...&format=json``."""

from __future__ import annotations

import httpx

from rag.errors import ConfigError, SearchConfigError, SearchError
from rag.i18n import Msg
from rag.logs import url_secrets
from rag.schemas import SearchResult
from rag.search.base import DEFAULT_HTTP, HttpOptions, HttpProvider, missing_setting, require_http_url
from rag.search.hygiene import excerpt, make_result


class SearxngSearch(HttpProvider):
    """Results in ``results[]`` with ``url, title, content, engine, publishedDate``."""

    name = "searxng"

    def __init__(self, base_url: str | None, *, http: HttpOptions = DEFAULT_HTTP) -> None:
        if not base_url or not base_url.strip():
            raise ConfigError(missing_setting(self.name, "SEARXNG_URL"))
        base = require_http_url(base_url, "SEARXNG_URL").rstrip("/")
        self.url = base if base.endswith("/search") else base + "/search"
        # URL credentials (https://user:pass@host) are secrets too, and so is their Basic-auth form.
        secrets = url_secrets(self.url)
        super().__init__(http, secrets=secrets)

    def _build_request(self, query: str, count: int) -> httpx.Request:
        return self._client.build_request("GET", self.url, params={"q": query, "format": "json"})

    def _forbidden(self, status: int, detail: str) -> SearchError:
        if status == 403:
            return SearchConfigError(self.name, self._msg("json_disabled"))
        return super()._forbidden(status, detail)

    def _fetch(self, query: str, count: int, notes: list[Msg]) -> list[SearchResult | None]:
        data = self._request_json(query, count, notes)
        items = self.results_list(data)
        unresponsive = data.get("unresponsive_engines")
        if isinstance(unresponsive, list) and unresponsive:
            names = ", ".join(
                excerpt(" ".join(str(part) for part in entry) if isinstance(entry, list) else str(entry), 60)
                for entry in unresponsive[:5]
            )
            notes.append(Msg.of("search.unresponsive", level="warning", provider=self.name, names=self._redact(names)))
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
