"""Vectors of chunk pieces in Chroma: one collection per vector space, one vector per piece.

A piece's id is ``<chunk id>:<piece>`` (content hashes, so re-embedding is an idempotent upsert) and
its metadata ``book_id``, ``chunk_id``, ``piece`` and ``chapter_idx`` (the chapter's position in the
book), which is what searches filter on. ``VectorStore`` is what the rest of the index needs;
``ChromaVectors`` is the real one (an embedded store under ``data/chroma`` or a Chroma server).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from rag.config import Settings
from rag.errors import IndexError_, RagError
from rag.i18n import Msg
from rag.index.embeddings import Embedder, chroma_embedding_function, embedder_key

COLLECTION_PREFIX = "enough_rag_"

# book id -> positions of the chapters to search (``chapter_idx``), or None for the whole book
Scope = Mapping[str, Collection[int] | None]

log = logging.getLogger(__name__)


def space_key(settings: Settings, embedder: Embedder | None, strip_punctuation: bool) -> str:
    """Names the vector space: the embedder, and what it was given (vectors never mix)."""
    key = embedder.key if embedder is not None else embedder_key(settings)
    return key if strip_punctuation else f"{key}_punct"


class VectorHit(NamedTuple):
    book_id: str
    chunk_id: str
    score: float  # cosine similarity


class VectorStore(Protocol):
    def stored_ids(self, book_id: str) -> set[str]: ...

    def upsert(self, ids: list[str], vectors: Sequence[np.ndarray], metadatas: list[dict[str, Any]]) -> None: ...

    def delete(self, ids: list[str]) -> None: ...

    def delete_book(self, book_id: str) -> None: ...

    def query(self, vector: np.ndarray, n: int, scope: Scope) -> list[VectorHit]:
        """The ``n`` nearest pieces within ``scope``, nearest first."""
        ...

    def book_vectors(self, book_id: str) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
        """Every stored vector of a book: ids, a [n, dim] float32 matrix, metadatas (any order)."""
        ...

    def close(self) -> None: ...


def chroma_where(scope: Scope) -> dict[str, Any] | None:
    """A Chroma ``where`` filter for ``scope``; None when nothing is in scope."""
    clauses: list[dict[str, Any]] = []
    whole = [book_id for book_id, chapters in scope.items() if chapters is None]
    if whole:
        clauses.append({"book_id": whole[0]} if len(whole) == 1 else {"book_id": {"$in": whole}})
    for book_id, chapters in scope.items():
        if chapters:
            clauses.append({"$and": [{"book_id": book_id}, {"chapter_idx": {"$in": sorted(chapters)}}]})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


# Chroma keeps one shared "system" per store path in the process, and creating it from two threads at
# once leaves it broken ("Could not connect to tenant default_tenant", "'RustBindingsAPI' object has no
# attribute 'bindings'"): a question searched while a new book starts embedding did exactly that.
# Stores are opened one at a time.
_OPEN_LOCK = threading.Lock()


def vector_search_failed(exc: Exception) -> IndexError_:
    """The error a failed vector search raises (``exc``: what the store raised)."""
    return IndexError_(Msg.of("index.vector_search_failed", level="error", detail=f"{type(exc).__name__}: {exc}"))


class ChromaVectors:
    """The Chroma collection of one vector space, opened on first use (thread-safe)."""

    def __init__(self, settings: Settings, space: str, embedder: Callable[[], Embedder],
                 client: Any | None = None) -> None:
        self.settings = settings
        self.space = space
        self._embedder = embedder
        self._client = client
        self._collection: Any = None

    def collection(self) -> Any:
        found = self._collection
        if found is not None:
            return found
        with _OPEN_LOCK:
            return self._open()

    def _open(self) -> Any:
        if self._collection is not None:  # another thread opened it meanwhile
            return self._collection
        s = self.settings
        try:
            import chromadb
            from chromadb.config import Settings as ChromaSettings

            if self._client is None:
                chroma_settings = ChromaSettings(anonymized_telemetry=False)
                if s.chroma_host:
                    self._client = chromadb.HttpClient(host=s.chroma_host, port=s.chroma_port, settings=chroma_settings)
                else:
                    Path(s.chroma_dir).mkdir(parents=True, exist_ok=True)
                    self._client = chromadb.PersistentClient(path=str(s.chroma_dir), settings=chroma_settings)
            self._collection = self._client.get_or_create_collection(
                name=f"{COLLECTION_PREFIX}{self.space}",
                embedding_function=chroma_embedding_function(self._embedder()),
                configuration={"hnsw": {"space": "cosine"}},
            )
        except RagError:
            raise
        except Exception as exc:
            where = f"Chroma server {s.chroma_host}:{s.chroma_port}" if s.chroma_host else f"Chroma store {s.chroma_dir}"
            if s.public_page:  # visitors read "the book store"; the log keeps where and why
                log.warning("%s could not be opened: %s: %s", where, type(exc).__name__, exc)
                raise IndexError_(Msg.of("index.store_unopenable_public", level="error",
                                         kind=type(exc).__name__)) from exc
            raise IndexError_(Msg.of("index.store_unopenable", level="error", where=where,
                                     detail=f"{type(exc).__name__}: {exc}")) from exc
        return self._collection

    def stored_ids(self, book_id: str) -> set[str]:
        return set(self.collection().get(where={"book_id": book_id}, include=[])["ids"])

    def upsert(self, ids: list[str], vectors: Sequence[np.ndarray], metadatas: list[dict[str, Any]]) -> None:
        self.collection().upsert(ids=ids, embeddings=[np.asarray(v).tolist() for v in vectors], metadatas=metadatas)

    def delete(self, ids: list[str]) -> None:
        if ids:
            self.collection().delete(ids=ids)

    def delete_book(self, book_id: str) -> None:
        self.collection().delete(where={"book_id": book_id})

    def query(self, vector: np.ndarray, n: int, scope: Scope) -> list[VectorHit]:
        where = chroma_where(scope)
        if where is None or n <= 0:
            return []
        collection = self.collection()
        try:
            result = collection.query(query_embeddings=[np.asarray(vector).tolist()], n_results=n, where=where,
                                      include=["metadatas", "distances"])
        except Exception as exc:
            raise vector_search_failed(exc) from exc
        metadatas = (result.get("metadatas") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        return [VectorHit(str(m.get("book_id")), str(m.get("chunk_id")), 1.0 - float(d))
                for m, d in zip(metadatas, distances, strict=False)]

    def book_vectors(self, book_id: str) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
        try:
            got = self.collection().get(where={"book_id": book_id}, include=["embeddings", "metadatas"])
            embeddings = got.get("embeddings")
            matrix = np.asarray(embeddings if embeddings is not None and len(embeddings) else np.zeros((0, 0)),
                                dtype=np.float32)
        except RagError:
            raise
        except Exception as exc:
            raise IndexError_(Msg.of("index.vectors_unreadable", level="error", id=book_id,
                                     detail=f"{type(exc).__name__}: {exc}")) from exc
        return list(got["ids"]), matrix, list(got.get("metadatas") or [])

    def close(self) -> None:
        self._collection = None
        self._client = None
