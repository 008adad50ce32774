"""Bocha web search (https://api.bochaai.com/v1/web-search), the original design's provider."""

from __future__ import annotations

import logging
from typing import Any

import httpx
from pydantic import SecretStr

from rag.errors import (
    SearchAuthError,
    SearchError,
    SearchRateLimited,
    SearchRequestError,
    SearchServerError,
)
from rag.i18n import Msg
from rag.schemas import SearchResult
from rag.search.base import DEFAULT_HTTP, HttpOptions, HttpProvider, capped, require_http_url, with_detail
from rag.search.hygiene import first_text, list_of_dicts, make_result

logger = logging.getLogger(__name__)

DEFAULT_URL = "https://api.bochaai.com/v1/web-search"
MAX_COUNT = 50  # the API accepts 1..50


class BochaSearch(HttpProvider):
    """``POST {url}`` with ``Authorization: Bearer <BOCHA_API_KEY>`` and
    ``{query, freshness, summary, count}``; results in ``data.webPages.value[]``."""

    name = "bocha"
    key_env = "BOCHA_API_KEY"

    def __init__(self, api_key: SecretStr | None, *, url: str = DEFAULT_URL, freshness: str = "noLimit",
                 http: HttpOptions = DEFAULT_HTTP) -> None:
        self._api_key = self.require_key(api_key)
        self.url = require_http_url(url or DEFAULT_URL, "BOCHA_API_URL")
        self.freshness = freshness
        super().__init__(capped(http, MAX_COUNT), secrets=[api_key])

    def _build_request(self, query: str, count: int) -> httpx.Request:
        return self._client.build_request(
            "POST",
            self.url,
            json={"query": query, "freshness": self.freshness, "summary": True, "count": count},
            headers={"Authorization": f"Bearer {self._api_key.get_secret_value()}"},
        )

    def _forbidden(self, status: int, detail: str) -> SearchError:
        hint = "search.hint_key_balance" if status == 403 else "search.hint_key"
        return SearchAuthError(self.name, Msg.of(hint, level="error", message=self._auth_message(status, detail),
                                                 env=self.key_env))

    def _check_body_code(self, data: dict[str, Any]) -> None:
        """Bocha also reports errors as ``{"code": 4xx, "msg": ...}`` in the body."""
        code = data.get("code")
        if code is None or str(code) == "200":
            return
        try:
            status = int(code)
        except (TypeError, ValueError):
            status = 0
        msg = self.said(data)
        if status in (401, 403):
            raise self._forbidden(status, msg)
        if status == 429:
            raise SearchRateLimited(self.name, with_detail(self._msg("rate_limited_code"), msg))
        detail = msg or Msg.of("search.no_message")
        if status >= 500:
            raise SearchServerError(self.name, self._msg("server_error_code", status=status, detail=detail), status)
        raise SearchRequestError(self.name, self._msg("rejected_code", code=str(code), detail=detail), status or None)

    def _fetch(self, query: str, count: int, notes: list[Msg]) -> list[SearchResult | None]:
        data = self._request_json(query, count, notes)
        if not isinstance(data, dict):
            raise self.bad_shape(f"expected an object, got {type(data).__name__}", data)
        self._check_body_code(data)
        if "data" not in data:
            raise self.bad_shape("no 'data' field", data)
        payload = data["data"]
        if payload is None:
            if data.get("code") is None and self.said(data):  # an error without a code: its message, not zero results
                raise self.bad_shape("'data' is null", data)
            return []
        if not isinstance(payload, dict):
            raise self.bad_shape(f"'data' is {type(payload).__name__}, not an object", data)
        pages = payload.get("webPages")
        if pages is None:
            return []  # Bocha omits webPages when nothing matched: zero results, not an error
        if not isinstance(pages, dict):
            raise self.bad_shape(f"'data.webPages' is {type(pages).__name__}, not an object")
        raw_value = pages.get("value")
        if raw_value is None:
            return []
        items = list_of_dicts(raw_value)
        if items is None:
            raise self.bad_shape(f"'data.webPages.value' is {type(raw_value).__name__}, not a list")
        if raw_value and not items:
            raise self.bad_shape("'data.webPages.value' holds no objects")
        return [
            make_result(
                provider=self.name,
                url=item.get("url"),
                title=item.get("name"),
                snippet=first_text(item.get("summary"), item.get("snippet")),
                site_name=item.get("siteName"),
                date=first_text(item.get("datePublished"), item.get("dateLastCrawled")),
            )
            for item in items
        ]
