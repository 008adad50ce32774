"""An optional reranker: a cross-encoder behind an HTTP endpoint reorders the fused hits.

The bi-encoder (e5) and BM25 see the question and a passage apart. A cross-encoder reads them
together, which is what the dev set's remaining misses need (紧箍儿咒 → 定心真言, the white horse →
敖闰之子: bench/retrieval.py). No such model can run on this project's own machine, so a reranker is
a server the user already has, set with ``RERANK_BASE_URL``; without it nothing changes.

Two request formats, ``RERANK_API``:

- ``cohere``: ``POST {base}/rerank`` with ``{"model", "query", "documents", "top_n"}``, answered with
  ``{"results": [{"index", "relevance_score"}]}``. Cohere, Jina, vLLM (``--task score``), Xinference,
  infinity and SiliconFlow speak it (base URLs often end in ``/v1``).
- ``tei``: ``POST {base}/rerank`` with ``{"query", "texts", "truncate"}``, answered with
  ``[{"index", "score"}]`` (Hugging Face text-embeddings-inference).

A reranker that fails, answers badly or is slow never costs the question its passages: retrieval
keeps the fused order and says why in the trace (``Retrieval``). Messages name the endpoint by host,
never the key or a URL's password.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from typing import Any, Protocol, get_args
from urllib.parse import urlsplit

from pydantic import SecretStr

from rag import deadline as turn_deadline
from rag.config import RerankApi, Settings, is_http_url
from rag.errors import ConfigError, RagError, endpoint_for_visitors
from rag.i18n import Msg

log = logging.getLogger(__name__)

APIS: tuple[str, ...] = get_args(RerankApi)
MAX_RESPONSE_BYTES = 1024 * 1024  # scores for a few dozen documents are a few KB


class RerankError(RagError):
    """The reranker could not be reached or answered with something unusable. ``endpoint`` names it
    by scheme and host (never the key)."""

    def __init__(self, endpoint: str, message: str, public: bool = False) -> None:
        self.endpoint = endpoint
        if public:
            log.warning("reranker %s failed: %s", endpoint, message)
        super().__init__(Msg.of("index.reranker_failed", level="error",
                                endpoint=endpoint_for_visitors(endpoint, public), detail=message))


class Reranker(Protocol):
    """Scores documents against a query: one float per document, higher is more relevant."""

    name: str

    def scores(self, query: str, documents: Sequence[str], timeout: float | None = None) -> list[float]: ...


def endpoint_of(url: str) -> str:
    """'https://user:pw@rerank.example:8080/v1' -> 'https://rerank.example:8080' (for messages)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


class HttpReranker:
    """A rerank endpoint over HTTP (a real ``httpx`` client, made on first use)."""

    def __init__(self, base_url: str, *, api_key: SecretStr | None = None, model: str | None = None,
                 api: str = "cohere", timeout: float = 10.0, public: bool = False) -> None:
        base_url = (base_url or "").strip()
        if not is_http_url(base_url):
            raise ConfigError("RERANK_BASE_URL must be an http(s) URL, e.g. http://localhost:8080 or https://api.jina.ai/v1.")
        if api not in APIS:
            raise ConfigError(f"RERANK_API must be one of {', '.join(APIS)} (got {api!r}).")
        self.base_url = base_url.rstrip("/")
        self.endpoint = endpoint_of(self.base_url)
        self.public = public  # PUBLIC_PAGE: messages do not show the address (RerankError)
        self.model = (model or "").strip() or None
        self.api = api
        self.timeout = timeout
        self.name = self.model or self.endpoint
        self._key = api_key.get_secret_value() if api_key is not None else ""
        self._client: Any = None
        self._lock = threading.Lock()  # searches run in several threads: one client

    def _body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        if self.api == "tei":
            return {"query": query, "texts": list(documents), "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": list(documents), "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        return body

    def _parse(self, data: Any, n: int) -> list[float]:
        items = data.get("results") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise RerankError(self.endpoint, public=self.public, message="the answer holds no list of results.")
        scores: list[float | None] = [None] * n
        for item in items:
            if not isinstance(item, dict):
                raise RerankError(self.endpoint, public=self.public, message="a result is not an object.")
            index, score = item.get("index"), item.get("relevance_score", item.get("score"))
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
                raise RerankError(self.endpoint, public=self.public, message=f"a result has an invalid index ({index!r}).")
            if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                raise RerankError(self.endpoint, public=self.public, message=f"a result has an invalid score ({score!r}).")
            scores[index] = float(score)
        missing = sum(1 for s in scores if s is None)
        if missing:
            raise RerankError(self.endpoint, public=self.public, message=f"{missing} of {n} documents came back without a score.")
        return [s for s in scores if s is not None]

    def scores(self, query: str, documents: Sequence[str], timeout: float | None = None) -> list[float]:
        """One score per document (higher is more relevant). Raises ``RerankError``."""
        if not documents:
            return []
        import httpx

        with self._lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
                self._client = httpx.Client(headers=headers, follow_redirects=False)
            client = self._client
        wait = self.timeout if timeout is None else max(0.05, min(self.timeout, timeout))
        body = self._body(query, documents)
        try:  # the whole exchange within ``wait``, however slowly a server trickles its answer
            response = turn_deadline.call_before(
                lambda: client.post(f"{self.base_url}/rerank", json=body, timeout=wait),
                turn_deadline.Deadline.after(wait), "rerank")
        except (httpx.TimeoutException, turn_deadline.DeadlineExceeded) as exc:
            raise RerankError(self.endpoint, public=self.public, message=f"no answer within {wait:.1f} s.") from exc
        except httpx.HTTPError as exc:
            raise RerankError(self.endpoint, public=self.public, message=f"unreachable ({type(exc).__name__}).") from exc
        if response.status_code in (401, 403):
            raise RerankError(self.endpoint, public=self.public, message=f"HTTP {response.status_code}: check RERANK_API_KEY.")
        if response.status_code != 200:
            raise RerankError(self.endpoint, public=self.public, message=f"HTTP {response.status_code}.")
        if len(response.content) > MAX_RESPONSE_BYTES:
            raise RerankError(self.endpoint, public=self.public, message=f"the answer is larger than {MAX_RESPONSE_BYTES // 1024} KB.")
        try:
            data = response.json()
        except ValueError as exc:
            raise RerankError(self.endpoint, public=self.public, message="the answer is not JSON.") from exc
        return self._parse(data, len(documents))

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __repr__(self) -> str:
        return f"HttpReranker({self.endpoint!r}, model={self.model!r}, api={self.api!r})"


def make_reranker(settings: Settings) -> HttpReranker | None:
    """The reranker ``settings`` ask for (``RERANK_BASE_URL``), or None."""
    if not settings.rerank_base_url:
        return None
    return HttpReranker(settings.rerank_base_url, api_key=settings.rerank_api_key, model=settings.rerank_model,
                        api=settings.rerank_api, timeout=settings.rerank_timeout,
                        public=bool(settings.public_page))
