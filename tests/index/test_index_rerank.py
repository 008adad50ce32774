"""The optional reranker (RERANK_BASE_URL): the HTTP client against a loopback server speaking both
formats (Cohere-style and text-embeddings-inference), its errors, and retrieval with it: the first
hits reordered, a named chapter kept first, and the fused order kept, with a note, whenever the
reranker fails, is slow or the turn has no time left."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from index_fakes import BigramEmbedder, MemoryVectors
from pydantic import SecretStr
from test_index_search import FULL, long_book

from rag import deadline
from rag.config import load_settings
from rag.errors import ConfigError
from rag.index import BookIndex, IndexConfig
from rag.index.rerank import HttpReranker, RerankError, endpoint_of, make_reranker
from rag.logs import secrets_of

KEY = "rk-secret-4242"


class RerankStub:
    """A loopback rerank server. ``score(query, document)`` decides each document's score; ``fmt``
    is "cohere" or "tei"; ``status``, ``delay`` and ``raw`` make it misbehave. Records requests."""

    def __init__(self, score: Callable[[str, str], float], fmt: str = "cohere") -> None:
        self.score, self.fmt = score, fmt
        self.status, self.delay, self.raw = 200, 0.0, None  # type: int, float, bytes | None
        self.trickle = 0.0  # seconds between the bytes of the body
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                time.sleep(stub.delay)
                docs = body.get("documents") or body.get("texts") or []
                scored = sorted(((i, stub.score(body.get("query", ""), d)) for i, d in enumerate(docs)),
                                key=lambda x: -x[1])
                if stub.fmt == "tei":
                    answer: Any = [{"index": i, "score": s} for i, s in scored]
                else:
                    answer = {"id": "r1", "results": [{"index": i, "relevance_score": s,
                                                       "document": {"text": docs[i]}} for i, s in scored]}
                data = stub.raw if stub.raw is not None else json.dumps(answer, ensure_ascii=False).encode()
                try:
                    self.send_response(stub.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if stub.trickle:
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(stub.trickle)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def prefers(word: str) -> Callable[[str, str], float]:
    """Scores a document by how often it holds ``word`` (a reranker with one idea)."""
    return lambda query, doc: float(doc.count(word))


@pytest.fixture
def stub() -> Iterator[RerankStub]:
    server = RerankStub(prefers("白虎"))
    yield server
    server.close()


# ------------------------------------------------------------------------------------------ client
def test_cohere_format_request_and_scores(stub: RerankStub) -> None:
    reranker = HttpReranker(stub.url + "/v1", api_key=SecretStr(KEY), model="bge-reranker-v2-m3")
    scores = reranker.scores("白虎在哪里", ["青龙", "白虎白虎", "白虎"])
    assert scores == [0.0, 2.0, 1.0]  # back in the documents' order, whatever order the server sent
    request = stub.requests[-1]
    assert request["path"] == "/v1/rerank"
    assert request["body"] == {"query": "白虎在哪里", "documents": ["青龙", "白虎白虎", "白虎"], "top_n": 3,
                               "model": "bge-reranker-v2-m3"}
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert reranker.name == "bge-reranker-v2-m3" and KEY not in repr(reranker)
    reranker.close()


def test_tei_format(stub: RerankStub) -> None:
    stub.fmt = "tei"
    reranker = HttpReranker(stub.url, api="tei")
    assert reranker.scores("q", ["白虎", "青龙"]) == [1.0, 0.0]
    request = stub.requests[-1]
    assert request["path"] == "/rerank" and request["body"] == {"query": "q", "texts": ["白虎", "青龙"], "truncate": True}
    assert "Authorization" not in request["headers"] and reranker.name == endpoint_of(stub.url)
    assert reranker.scores("q", []) == [] and len(stub.requests) == 1  # nothing to score: no request


@pytest.mark.parametrize(("status", "raw", "expected"), [
    (401, None, "HTTP 401: check RERANK_API_KEY"),
    (503, None, "HTTP 503"),
    (200, b"<html>not json</html>", "not JSON"),
    (200, b'{"results": "no"}', "no list of results"),
    (200, b'{"results": [{"index": 7, "relevance_score": 1.0}]}', "invalid index"),
    (200, b'{"results": [{"index": 0, "relevance_score": "high"}]}', "invalid score"),
    (200, b'{"results": [{"index": 0, "relevance_score": 0.5}]}', "1 of 2 documents came back without a score"),
])
def test_bad_answers_are_rerank_errors_without_the_key(stub: RerankStub, status: int, raw: bytes | None,
                                                       expected: str) -> None:
    stub.status, stub.raw = status, raw
    reranker = HttpReranker(f"http://user:pw-9876@127.0.0.1:{stub.server.server_port}", api_key=SecretStr(KEY))
    with pytest.raises(RerankError) as caught:
        reranker.scores("q", ["a", "b"])
    message = str(caught.value)
    assert expected in message and message.startswith(f"reranker http://127.0.0.1:{stub.server.server_port}:")
    assert KEY not in message and "pw-9876" not in message and "user" not in message


def test_a_slow_reranker_times_out(stub: RerankStub) -> None:
    stub.delay = 2.0
    reranker = HttpReranker(stub.url, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(RerankError, match=r"no answer within 0\.3 s"):
        reranker.scores("q", ["a"])
    assert time.monotonic() - started < 1.5
    with pytest.raises(RerankError, match=r"no answer within 0\.2 s"):  # a shorter time left wins
        HttpReranker(stub.url, timeout=5).scores("q", ["a"], timeout=0.2)
    stub.delay, stub.trickle = 0.0, 0.1  # headers at once, then a byte every 0.1 s: each read is quick
    started = time.monotonic()
    with pytest.raises(RerankError, match=r"no answer within 0\.5 s"):
        HttpReranker(stub.url, timeout=0.5).scores("q", ["a"])
    assert time.monotonic() - started < 1.2


def test_unreachable_and_misconfigured() -> None:
    with pytest.raises(RerankError, match="unreachable"):
        HttpReranker("http://127.0.0.1:9", timeout=2).scores("q", ["a"])
    with pytest.raises(ConfigError, match="RERANK_BASE_URL"):
        HttpReranker("localhost:8080")
    with pytest.raises(ConfigError, match="RERANK_API"):
        HttpReranker("http://localhost:8080", api="openai")


def test_settings() -> None:
    assert IndexConfig.from_settings(make_settings(rerank_candidates=7)).rerank_candidates == 7
    assert make_reranker(make_settings(rerank_base_url="  ")) is None
    settings = make_settings(rerank_base_url="https://u:pw-5555@rerank.example/v1", rerank_api_key=KEY,
                             rerank_model="jina-reranker-v2-base-multilingual", rerank_api="cohere")
    reranker = make_reranker(settings)
    assert isinstance(reranker, HttpReranker) and reranker.endpoint == "https://rerank.example"
    assert KEY in secrets_of(settings) and "pw-5555" in secrets_of(settings)  # redacted from every log line
    with pytest.raises(ValueError):
        make_settings(rerank_api="openai")
    with pytest.raises(ConfigError, match="RERANK_BASE_URL: .*must be an http"):  # the app and CLI stop at start
        load_settings(_env_file=None, rerank_base_url="localhost:8080")


# --------------------------------------------------------------------------------------- retrieval
def make(tmp_path: Path, reranker: Any = None, candidates: int = 30, **settings: Any) -> BookIndex:
    idx = BookIndex(make_settings(data_dir=tmp_path / "data", **settings), embedder=BigramEmbedder(),
                    vectors=MemoryVectors(), config=replace(FULL, rerank_candidates=candidates), reranker=reranker)
    tmp_path.mkdir(parents=True, exist_ok=True)
    idx.ingest(long_book(tmp_path / "book.txt", 5), background=False)
    return idx


def chapters_of(outcome: Any) -> list[int | None]:
    return [p.chapter_num for p in outcome.passages]


QUESTION = "谁在长安说起旧事"  # every chapter says 长安 and 旧事: many hits score alike


def marker_of(idx: BookIndex, passage: Any) -> str:
    """A string only the hit chunk of ``passage`` holds (a sentence's number from its middle)."""
    chunk = next(c for c in idx.chunks(passage.book_id) if c.id == passage.id)
    numbers = re.findall(r"旧事\d-\d+。", chunk.text)
    return numbers[len(numbers) // 2]


def test_retrieval_takes_the_rerankers_order(tmp_path: Path, stub: RerankStub) -> None:
    plain = make(tmp_path / "a")
    before = plain.search(QUESTION, k=6, mode="hybrid")
    assert not before.notes  # no reranker: no note
    fused = {p.id: i for i, p in enumerate(plain.search(QUESTION, k=30, mode="hybrid").passages)}
    stub.score = prefers(marker_of(plain, before.passages[4]))  # the reranker's favourite is 5th
    idx = make(tmp_path / "b", rerank_base_url=stub.url, candidates=10)
    after = idx.search(QUESTION, k=6, mode="hybrid")
    assert after.passages[0].id == before.passages[4].id and after.passages[0].score == 1.0  # first, its score
    assert [p.score for p in after.passages[1:]] == [0.0] * 5
    # ties keep the fused order (compared as an order, not as places: a passage next to the new
    # first one is merged into it, and one that was merged into a neighbour may now stand alone)
    rest = [i for i in (fused.get(p.id) for p in after.passages[1:]) if i is not None]
    assert len(rest) >= 3 and rest == sorted(rest), rest
    assert after.passages[1].id == before.passages[0].id
    body = stub.requests[-1]["body"]
    assert body["query"] == QUESTION and len(body["documents"]) == 10
    assert all(re.match(r"第.回 ", doc) and "\n" in doc for doc in body["documents"])  # chapter title, then text
    assert any(n.startswith("reranked the first 10 hits with http://127.0.0.1") for n in map(str, after.notes))
    idx.close()


def test_at_least_k_hits_are_reranked(tmp_path: Path, stub: RerankStub) -> None:
    idx = make(tmp_path, rerank_base_url=stub.url, candidates=3)
    idx.search(QUESTION, k=6, mode="keyword")
    assert len(stub.requests[-1]["body"]["documents"]) == 6


def test_a_named_chapter_stays_first(tmp_path: Path, stub: RerankStub) -> None:
    question = "第四回里谁在长安说起旧事"
    plain = make(tmp_path / "a").search(question, k=6, mode="hybrid")
    assert chapters_of(plain)[0] == 4
    other = next(p for p in plain.passages if p.chapter_num != 4)
    idx = make(tmp_path / "b", rerank_base_url=stub.url)
    stub.score = prefers(marker_of(idx, other))
    outcome = idx.search(question, k=6, mode="hybrid")
    assert chapters_of(outcome)[0] == 4  # the named chapter, although the reranker prefers another one
    first_other = next(p for p in outcome.passages if p.chapter_num != 4)
    assert first_other.id == other.id  # ... which leads the passages from other chapters
    assert any("reranked" in n for n in map(str, outcome.notes))


@pytest.mark.parametrize("trouble", ["status", "slow", "raises"])
def test_a_failing_reranker_keeps_the_fused_order(tmp_path: Path, stub: RerankStub, trouble: str) -> None:
    plain = make(tmp_path / "plain").search(QUESTION, k=4, mode="hybrid")
    if trouble == "raises":
        class Broken:
            name = "broken"

            def scores(self, query: str, documents: Any, timeout: float | None = None) -> list[float]:
                raise RuntimeError(f"kaboom {KEY}")

        idx = make(tmp_path / "r", reranker=Broken())
    else:
        stub.status, stub.delay = (500, 0.0) if trouble == "status" else (200, 2.0)
        idx = make(tmp_path / "r", rerank_base_url=stub.url, rerank_timeout=0.3, rerank_api_key=KEY)
    outcome = idx.search(QUESTION, k=4, mode="hybrid")
    assert [(p.id, p.text) for p in outcome.passages] == [(p.id, p.text) for p in plain.passages]
    note = next(n for n in map(str, outcome.notes) if "fused order" in n)
    assert note.startswith("reranking failed (reranker ")  # the trace shows it as a warning
    assert {"status": "HTTP 500", "slow": "no answer within 0.3 s", "raises": "broken: RuntimeError"}[trouble] in note
    assert KEY not in note


def test_no_time_left_in_the_turn_no_request(tmp_path: Path, stub: RerankStub) -> None:
    idx = make(tmp_path, rerank_base_url=stub.url)
    with deadline.scope(deadline.Deadline(1.0, time.monotonic() - 1)):
        outcome = idx.search(QUESTION, k=4, mode="keyword")
    assert stub.requests == [] and outcome.passages
    assert any("no time left" in n for n in map(str, outcome.notes))
    with deadline.scope(deadline.Deadline.after(30)):
        idx.search(QUESTION, k=4, mode="keyword")
    assert len(stub.requests) == 1


def test_the_trace_shows_reranking_and_its_failure(tmp_path: Path, stub: RerankStub) -> None:
    from rag.agent.deps import Deps
    from rag.agent.events import run_turn
    from rag.agent.graph import build_graph

    def notices(index: BookIndex) -> list[dict[str, Any]]:
        graph = build_graph(Deps(settings=make_settings(), llm=None, retriever=index))
        values = list(run_turn(graph, QUESTION, thread_id="t"))[-1].values
        assert values["passages"]
        return [n for n in values["notices"] if "rerank" in str(n["msg"])]

    good = make(tmp_path / "good", rerank_base_url=stub.url)
    assert [n["level"] for n in notices(good)] == ["info"]
    stub.status = 502
    bad = make(tmp_path / "bad", rerank_base_url=stub.url, rerank_api_key=KEY)
    shown = notices(bad)
    assert [n["level"] for n in shown] == ["warning"] and "HTTP 502" in str(shown[0]["msg"])
    assert KEY not in repr(shown)
