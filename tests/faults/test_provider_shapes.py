"""Fault battery, a search provider answering JSON of the wrong shape (an error body with status 200,
a list, a number, null): every provider (Bocha, Tavily, SearXNG, DuckDuckGo) raises a typed
``SearchError`` whose message is the provider's own message when the body has one (redacted: no
key), never "unexpected TypeError". Real providers with real httpx clients against a loopback server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from rag.errors import SearchError
from rag.i18n import codes, text
from rag.search import BochaSearch, HttpOptions
from rag.search.duckduckgo import DuckDuckGoSearch
from rag.search.searxng import SearxngSearch
from rag.search.tavily import TavilySearch

KEY = "sk-shape-canary-0123456789abcdef"
SAID = "quota exhausted for this account"


@contextmanager
def json_server(body: Any) -> Iterator[str]:
    """A loopback server answering every GET and POST with ``body`` as JSON, status 200; its base URL."""
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer  # noqa: N815 - stdlib names

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Ddgs:
    def __init__(self, body: Any) -> None:
        self.body = body

    def text(self, *args: Any, **kwargs: Any) -> Any:
        return self.body


def _provider(name: str, base: str, body: Any) -> Any:
    if name == "bocha":
        return BochaSearch(SecretStr(KEY), url=f"{base}/v1/web-search", http=HttpOptions(timeout=3.0))
    if name == "tavily":
        return TavilySearch(SecretStr(KEY), url=f"{base}/search", http=HttpOptions(timeout=3.0))
    if name == "searxng":
        return SearxngSearch(base, http=HttpOptions(timeout=3.0))
    return DuckDuckGoSearch(ddgs_factory=lambda: _Ddgs(body))


PROVIDERS = ["bocha", "tavily", "searxng", "duckduckgo"]
WITH_MESSAGE = {
    "bocha_code": {"code": 400, "msg": f"{SAID} (key {KEY})", "data": None},
    "code_as_text": {"code": "400", "message": f"{SAID} (key {KEY})"},
    "nested_error": {"error": {"message": f"{SAID} (key {KEY})", "type": "insufficient_quota"}},
    "detail": {"detail": {"error": f"{SAID} (key {KEY})"}},
    "errors_list": {"errors": [{"message": f"{SAID} (key {KEY})"}]},
    "msg_object": {"code": 403, "msg": {"text": f"{SAID} (key {KEY})"}},
}
WITHOUT_MESSAGE = {"list": [1, 2, 3], "number": 42, "text": "ok", "results_text": {"results": "none"},
                   "code_object": {"code": {"x": 1}}}


def _fail(name: str, body: Any) -> SearchError:
    with json_server(body) as base:
        provider = _provider(name, base, body)
        try:
            with pytest.raises(SearchError) as info:
                provider.search_detailed("三打白骨精", 3)
        finally:
            provider.close()
    return info.value


@pytest.mark.parametrize("shape", list(WITH_MESSAGE))
@pytest.mark.parametrize("name", PROVIDERS)
def test_an_error_body_of_any_shape_is_the_providers_message(name: str, shape: str) -> None:
    error = _fail(name, WITH_MESSAGE[shape])
    for lang in ("en", "zh"):
        shown = text(lang, error.msg)
        assert SAID in shown, (lang, shown)  # the provider's own words
        assert KEY not in shown and "TypeError" not in shown and "unexpected" not in shown, shown
    assert "search.unexpected" not in codes(error.msg)
    assert KEY not in str(error) and KEY not in repr(error.msg)


@pytest.mark.parametrize("shape", list(WITHOUT_MESSAGE))
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_body_of_the_wrong_shape_without_a_message_is_a_typed_error(name: str, shape: str) -> None:
    error = _fail(name, WITHOUT_MESSAGE[shape])
    assert "search.unexpected" not in codes(error.msg), str(error)
    assert "TypeError" not in str(error) and "AttributeError" not in str(error)
    assert error.provider == name
