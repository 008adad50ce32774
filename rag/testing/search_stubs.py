"""A loopback HTTP server that speaks Bocha's web-search format, for tests and demos.

    with BochaStubServer(results=[...]) as stub:
        settings = Settings(search_provider="bocha", bocha_api_key="k", bocha_api_url=stub.url)

It listens on 127.0.0.1 on a free port, records every request (path, headers, JSON body) and
answers with the configured results, status, delay or raw body. Nothing here runs at import time.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def bocha_page(name: str, url: str, summary: str, **extra: Any) -> dict[str, Any]:
    """One item of ``data.webPages.value`` as Bocha sends it."""
    item: dict[str, Any] = {
        "id": f"https://api.bochaai.com/v1/#WebPages.{zlib.crc32(url.encode()) % 1000}",
        "name": name,
        "url": url,
        "displayUrl": url,
        "snippet": summary[:120],
        "summary": summary,
        "siteName": extra.pop("siteName", ""),
        "siteIcon": "https://th.bochaai.com/favicon?domain_url=" + url,
        "datePublished": extra.pop("datePublished", "2024-07-22T00:00:00+08:00"),
        "dateLastCrawled": "2024-07-22T00:00:00Z",
        "cachedPageUrl": None,
        "language": None,
        "isFamilyFriendly": None,
        "isNavigational": None,
    }
    item.update(extra)
    return item


def bocha_response(pages: list[dict[str, Any]], query: str = "") -> dict[str, Any]:
    """A whole Bocha success body around ``pages``."""
    return {
        "code": 200,
        "log_id": "0d1c2b3a4f5e6d7c",
        "msg": None,
        "data": {
            "_type": "SearchResponse",
            "queryContext": {"originalQuery": query},
            "webPages": {
                "webSearchUrl": "",
                "totalEstimatedMatches": 1000 + len(pages),
                "value": pages,
                "someResultsRemoved": True,
            },
            "images": None,
            "videos": None,
        },
    }


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class BochaStubServer:
    """``pages``: the results to answer with (all of them, whatever ``count`` says, like a real
    server might). ``status``/``raw_body``/``delay``/``headers`` shape the answer."""

    pages: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    raw_body: bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stub server is not running")
        host, port = self._server.server_address[:2]
        host_text = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{host_text}:{port}/v1/web-search"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass  # keep test output quiet

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw.decode("utf-8")) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                stub.requests.append(RecordedRequest("POST", self.path, dict(self.headers.items()), body))
                if stub.delay:
                    time.sleep(stub.delay)
                if stub.raw_body is not None:
                    payload = stub.raw_body
                    content_type = "text/html; charset=utf-8"
                else:
                    query = body.get("query", "") if isinstance(body, dict) else ""
                    payload = json.dumps(bocha_response(stub.pages, query), ensure_ascii=False).encode("utf-8")
                    content_type = "application/json"
                try:
                    self.send_response(stub.status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in stub.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        return Handler

    def start(self) -> BochaStubServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="bocha-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> BochaStubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
