"""Fault suite (issue 12), web search: a server that trickles its answer cannot hold a provider
past SEARCH_TIMEOUT (the total per request), an oversized body is cut off, and Basic-auth
credentials a server echoes never reach an error, a notice or a log."""

from __future__ import annotations

import base64
import gzip
import logging
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest
from conftest import ev, make_settings, responder

from rag.agent.deps import Deps
from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.errors import SearchError
from rag.logs import RedactingFilter, redact, secrets_of
from rag.schemas import Passage
from rag.search import (
    BochaSearch,
    HttpOptions,
    SearchAuthError,
    SearchBadResponse,
    SearchTimeout,
    SearxngSearch,
)
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel

JSON_OK = b'{"results": [{"url": "https://example.org/a", "title": "A", "content": "alpha"}]}'
USER, PASSWORD = "admin", "hunter2-Pa55word"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass
class RawServer:
    """A one-thread loopback HTTP server answering each connection with ``answer(conn)``; it
    records how many bytes it managed to send before the client hung up."""

    answer: object
    sent: list[int] = field(default_factory=list)

    def __enter__(self) -> RawServer:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    request += chunk
                count = 0
                try:
                    for piece in self.answer():  # type: ignore[operator]
                        conn.sendall(piece)
                        count += len(piece)
                except OSError:
                    pass  # the client hung up
                self.sent.append(count)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        self.sock.close()


def head(body_length: int | None = None, extra: str = "") -> bytes:
    length = f"Content-Length: {body_length}\r\n" if body_length is not None else ""
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}{extra}Connection: close\r\n\r\n".encode()


def trickle(data: bytes, interval: float = 0.2):
    for i in range(len(data)):
        yield data[i:i + 1]
        time.sleep(interval)


# --------------------------------------------------------------------------- total deadline


@pytest.mark.parametrize("phase", ["body", "headers"])
def test_a_trickling_server_cannot_hold_a_search_past_the_timeout(phase: str) -> None:
    body = JSON_OK.ljust(60)  # 60 bytes at one per 0.2 s: the whole answer would take 12 s

    def answer():
        if phase == "body":
            yield head(len(body))
            yield from trickle(body)
        else:
            yield from trickle(head(len(body))[:60])

    with RawServer(answer) as server:
        provider = SearxngSearch(server.url, http=HttpOptions(timeout=1.0))
        with pytest.raises(SearchTimeout) as info:
            provider.search("q", 3)
        provider.close()
    assert str(info.value).startswith("searxng: no answer within 1 s")
    assert info.value.provider == "searxng"
    # the client gave up while the server still had most of the trickle to send (12 s of it)
    trickled = server.sent[0] - (len(head(len(body))) if phase == "body" else 0)
    assert len(server.sent) == 1 and trickled < 60 / 2, server.sent


def test_a_fast_answer_is_unaffected_by_the_deadline() -> None:
    with RawServer(lambda: iter([head(len(JSON_OK)), JSON_OK])) as server:
        provider = SearxngSearch(server.url, http=HttpOptions(timeout=2.0))
        outcome = provider.search_detailed("q", 3)
        provider.close()
    assert [r.url for r in outcome.results] == ["https://example.org/a"]


# --------------------------------------------------------------------------- response size cap


def _padded_json(size: int) -> bytes:
    return JSON_OK[:-1] + b', "pad": "' + b"x" * size + b'"}'


@pytest.mark.parametrize("how", ["content-length", "chunked", "gzip"])
def test_an_oversized_body_is_refused(how: str) -> None:
    big = _padded_json(3 * 1024 * 1024)  # valid JSON, 3 MB: accepted before
    if how == "content-length":
        pieces = [head(len(big)), big]
    elif how == "chunked":
        step = 64 * 1024
        chunks = [b"%x\r\n%s\r\n" % (len(big[i:i + step]), big[i:i + step]) for i in range(0, len(big), step)]
        pieces = [head(None, "Transfer-Encoding: chunked\r\n"), *chunks, b"0\r\n\r\n"]
    else:  # 3 MB inflated from a few kB
        packed = gzip.compress(big)
        assert len(packed) < 64 * 1024
        pieces = [head(len(packed), "Content-Encoding: gzip\r\n"), packed]
    with RawServer(lambda: iter(pieces)) as server:
        provider = SearxngSearch(server.url, http=HttpOptions(timeout=5.0))
        with pytest.raises(SearchBadResponse, match=r"^searxng: answered with a body larger than 2 MB"):
            provider.search("q", 3)
        provider.close()


def test_the_size_cap_is_a_parameter_of_every_http_provider() -> None:
    with RawServer(lambda: iter([head(len(JSON_OK)), JSON_OK])) as server:
        provider = SearxngSearch(server.url, http=HttpOptions(timeout=2.0))
        provider.max_response_bytes = 40
        with pytest.raises(SearchBadResponse, match="larger than"):
            provider.search("q", 3)
        provider.close()
    assert BochaSearch(__import__("pydantic").SecretStr("k" * 8)).max_response_bytes == 2 * 1024 * 1024


# --------------------------------------------------------------------------- Basic auth echoed


def test_redact_removes_basic_credentials_auth_headers_and_url_userinfo() -> None:
    secrets = secrets_of(make_settings(searxng_url=f"https://{USER}:{PASSWORD}@searx.example.org"))
    assert PASSWORD in secrets and BASIC in secrets
    text = (f"401 for https://{USER}:{PASSWORD}@searx.example.org/search; request had "
            f"{{'authorization': 'Basic {BASIC}'}} and raw {BASIC}; Authorization: Token abc123")
    for secrets_given in (secrets, []):  # the patterns work without knowing the secret, too
        clean = redact(text, secrets_given)
        assert BASIC not in clean.replace(f"raw {BASIC}", "") and PASSWORD not in clean
        assert "abc123" not in clean and "searx.example.org" in clean
    assert BASIC not in redact(text, secrets)
    assert redact("a basic idea, basic needs", []) == "a basic idea, basic needs"  # words stay


def test_a_searxng_error_echoing_basic_auth_never_shows_the_credentials(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(RedactingFilter([]))  # as setup_logging does; httpx logs URLs with userinfo
    echo = f'{{"error": "unauthorized", "detail": "Authorization: Basic {BASIC}"}}'.encode()

    def answer():
        yield (b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(echo), echo))

    with RawServer(answer) as server:
        url = server.url.replace("http://", f"http://{USER}:{PASSWORD}@")
        provider = SearxngSearch(url, http=HttpOptions(timeout=3.0))
        with pytest.raises(SearchAuthError) as info:
            provider.search("q", 3)
        provider.close()
    assert BASIC not in str(info.value) and PASSWORD not in str(info.value)
    assert BASIC not in caplog.text and PASSWORD not in caplog.text


def test_basic_credentials_in_a_search_error_never_reach_the_trace_or_logs(caplog) -> None:
    settings = make_settings(search_provider="searxng", searxng_url=f"https://{USER}:{PASSWORD}@searx.example.org",
                             max_web_rounds=1)
    leaked = SearchError("searxng", f"HTTP 401 echo: authorization=Basic {BASIC} via https://{USER}:{PASSWORD}@x")
    deps = Deps(settings=settings,
                llm=ScriptedChatModel(responder=responder("complex", [ev(False, ["x"], web_query="q"), ev(False)])),
                retriever=FakeRetriever([Passage(id="p", text="t", score=0.5)]),
                web_search=FakeWebSearch(error=leaked), secrets=secrets_of(settings))
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(RedactingFilter(secrets_of(settings)))
    events = list(run_turn(build_graph(deps), "question", thread_id=uuid.uuid4().hex))
    final = events[-1]
    assert isinstance(final, TurnFinished)
    shown = repr(final.values.get("notices")) + repr(final.values.get("web_rounds"))
    assert "searxng" in shown  # the failure is reported...
    assert BASIC not in shown and PASSWORD not in shown  # ...without the credentials
    assert BASIC not in caplog.text and PASSWORD not in caplog.text
