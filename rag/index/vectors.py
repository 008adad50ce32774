"""Vectors of chunk pieces in Chroma: one collection per vector space, one vector per piece.

A piece's id is ``<chunk id>:<piece>`` (content hashes, so re-embedding is an idempotent upsert) and
its metadata ``book_id``, ``chunk_id``, ``piece`` and ``chapter_idx`` (the chapter's position in the
book), which is what searches filter on. ``VectorStore`` is what the rest of the index needs;
``ChromaVectors`` is the real one (an embedded store under ``data/chroma`` or a Chroma server).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from rag.config import Settings
from rag.errors import IndexError_, RagError, disk_full
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


def _damaged_segment(folder: Path) -> bool:
    """Whether a Chroma HNSW segment folder holds an empty or unreadable file (its id map's pickle,
    its headers)."""
    files = [f for f in folder.iterdir() if f.is_file()]
    return any(f.stat().st_size == 0 and f.name != "link_lists.bin" for f in files)


def writable(path: Path) -> bool:
    """Whether Chroma can write its store in ``path`` (the directory and its database)."""
    database = path / "chroma.sqlite3"
    return os.access(path, os.W_OK) and (not database.exists() or os.access(database, os.W_OK))


def store_detail(exc: Exception, public: bool = False) -> str:
    """What the store raised, for a message: its type and text; on a public page (``PUBLIC_PAGE``)
    its type only (Chroma's text can hold the store's path), the text going to the server log."""
    if public:
        log.warning("the book store failed: %s: %s", type(exc).__name__, exc)
        return type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


def vector_search_failed(exc: Exception, public: bool = False, where: Path | None = None) -> IndexError_:
    """The error a failed vector search raises (``exc``: what the store raised; ``where``: its
    directory, to tell a full disk)."""
    if disk_full(exc, where):
        log.warning("vector search failed, the disk is full: %s: %s", type(exc).__name__, exc)
        return IndexError_(Msg.of("index.vector_search_failed", level="error", detail=Msg.of("index.disk_full")))
    return IndexError_(Msg.of("index.vector_search_failed", level="error", detail=store_detail(exc, public)))


class ChromaVectors:
    """The Chroma collection of one vector space, opened on first use (thread-safe)."""

    def __init__(self, settings: Settings, space: str, embedder: Callable[[], Embedder],
                 client: Any | None = None, on_reset: Callable[[], None] | None = None) -> None:
        self.settings = settings
        self.space = space
        self._embedder = embedder
        self._client = client
        # told when a damaged collection was emptied: every book's vectors must be computed again
        self._on_reset = on_reset
        self._collection: Any = None
        self.read_only = False  # True: the store's directory is read-only; a copy is searched, nothing stored
        self._own_store = False  # True: an embedded store this object opened (checked, and repaired if damaged)
        self._copy: Path | None = None

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
                    path = Path(s.chroma_dir)
                    path.mkdir(parents=True, exist_ok=True)
                    if not writable(path):  # Chroma cannot open it: search a copy of it instead
                        path = self._snapshot(path)
                    self._client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
                    self._own_store = not self.read_only
            collection = self._get_or_create()
            if self._own_store:  # not a server's, nor a read-only copy, nor a client passed in
                collection = self._checked(collection, Path(s.chroma_dir))
            self._collection = collection
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

    def _get_or_create(self) -> Any:
        assert self._client is not None  # opened by ``_open``
        return self._client.get_or_create_collection(
            name=f"{COLLECTION_PREFIX}{self.space}",
            embedding_function=chroma_embedding_function(self._embedder()),
            configuration={"hnsw": {"space": "cosine"}},
        )

    def _checked(self, collection: Any, path: Path) -> Any:
        """The collection, read once (one vector) to prove that its files load. A collection that
        does not (a full disk left a 0-byte ``index_metadata.pickle``: every search, count and write
        fails, and resuming cannot mend it) is deleted and created empty; ``on_reset`` then has the
        books' vectors computed again from their stored chunks. A store that fails because the disk
        is full now is left as it is."""
        try:
            collection.get(limit=1, include=["embeddings"])
            return collection
        except Exception as exc:  # noqa: BLE001 - whatever Chroma raises for its own files
            if disk_full(exc, path):
                raise IndexError_(Msg.of("index.disk_full", level="error")) from exc
            log.warning("the vector store's collection %s in %s is damaged (%s: %s); it is emptied and every "
                        "book's vectors are rebuilt from its stored chunks", collection.name, path,
                        type(exc).__name__, exc)
        damaged = [d for d in path.iterdir() if d.is_dir() and _damaged_segment(d)]
        assert self._client is not None
        self._client.delete_collection(collection.name)
        for folder in damaged:  # Chroma leaves the files of a deleted segment it could not load
            shutil.rmtree(folder, ignore_errors=True)
        collection = self._get_or_create()
        collection.get(limit=1, include=["embeddings"])  # still broken: the store cannot be opened
        if self._on_reset is not None:
            self._on_reset()
        return collection

    def _local_dir(self) -> Path | None:
        """The embedded store's directory (None for a Chroma server)."""
        return None if self.settings.chroma_host else Path(self.settings.chroma_dir)

    def _snapshot(self, path: Path) -> Path:
        """A writable copy of a read-only store (Chroma opens nothing it cannot write): the books
        embedded there keep their vector search; new vectors are refused (``_writing``)."""
        self._copy = Path(tempfile.mkdtemp(prefix="rag-chroma-"))
        copy = self._copy / "chroma"
        shutil.copytree(path, copy, copy_function=shutil.copyfile)
        for folder, dirs, files in os.walk(copy):
            for name in [*dirs, *files]:
                target = Path(folder) / name
                target.chmod(target.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if name in dirs else 0))
        copy.chmod(copy.stat().st_mode | stat.S_IRWXU)
        self.read_only = True
        log.warning("the Chroma store %s is read-only: vector search reads a copy of it; new books get no "
                    "vectors until it is writable", path)
        return copy

    def _writing(self) -> None:
        self.collection()  # opening it tells whether the store is read-only
        if self.read_only:
            raise IndexError_(Msg.of("index.store_read_only", level="error"))

    def stored_ids(self, book_id: str) -> set[str]:
        return set(self.collection().get(where={"book_id": book_id}, include=[])["ids"])

    def upsert(self, ids: list[str], vectors: Sequence[np.ndarray], metadatas: list[dict[str, Any]]) -> None:
        self._writing()
        self.collection().upsert(ids=ids, embeddings=[np.asarray(v).tolist() for v in vectors], metadatas=metadatas)

    def delete(self, ids: list[str]) -> None:
        self._writing()
        if ids:
            self.collection().delete(ids=ids)

    def delete_book(self, book_id: str) -> None:
        self._writing()
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
            raise vector_search_failed(exc, self.settings.public_page, self._local_dir()) from exc
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
            detail = Msg.of("index.disk_full") if disk_full(exc, self._local_dir()) else store_detail(
                exc, self.settings.public_page)
            raise IndexError_(Msg.of("index.vectors_unreadable", level="error", id=book_id, detail=detail)) from exc
        return list(got["ids"]), matrix, list(got.get("metadatas") or [])

    def close(self) -> None:
        self._collection = None
        self._client = None
        if self._copy is not None:
            shutil.rmtree(self._copy, ignore_errors=True)
            self._copy = None
