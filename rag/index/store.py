"""The book index: books on disk (chunks + BM25 per book) and their vectors in Chroma.

Layout under ``settings.data_dir``::

    keyword/<book_id>/manifest.json   title, source, chapters, chunk settings
    keyword/<book_id>/chunks.jsonl    one chunk per line (text, chapter, offsets, pieces to embed)
    keyword/<book_id>/bm25/           bm25s index over character bigrams
    keyword/<book_id>/vectors.json    embedding progress per embedder (rewritten atomically)
    chroma/                           one collection per embedder, one vector per chunk *piece*

Atomicity: a book directory is built under a temporary name and renamed into place in one step, so a
crash or a cancelled upload leaves the previous index as it was. Vectors are upserted with ids that
derive from content hashes (``<chunk id>:<piece>``), so embedding can stop and resume at any point and
re-ingesting the same book is a no-op. Several books share a store; retrieval can be scoped to one.

Speed: a book is keyword-searchable as soon as its directory is in place (seconds); vectors are
computed afterwards in a background thread, chapter by chapter, and hybrid retrieval degrades to
keyword-only for a book until its vectors are complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import queue
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rag.config import Settings
from rag.errors import BookError, IndexError_, RagError
from rag.index import fusion
from rag.index.chunking import chunk_chapters, embedding_text
from rag.index.embeddings import (
    LOCAL_EMBEDDER_KEYS,
    Embedder,
    chroma_embedding_function,
    embedder_key,
    make_embedder,
)
from rag.index.keyword import KeywordIndex
from rag.index.loaders import load_book
from rag.schemas import Passage

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int, str], None]

INDEX_VERSION = 1
EMBED_PIECE_CHARS = 256  # embedding unit (see chunking.py and bench/ingest.py)
LOCAL_EMBED_BATCH = 8  # pieces per local-model call: throughput is flat in batch size, small batches stop fast
FUSION = "rrf"  # chosen with bench/retrieval.py
CANDIDATES = 30  # candidates taken from each retriever before fusion
STALE_TMP_SECONDS = 600.0  # leftover temporary directories older than this are removed
COLLECTION_PREFIX = "enough_rag_"
# Embed pieces without punctuation (bench/retrieval.py --variants: 18% fewer characters, ~27% less
# embedding time, recall@5 unchanged, one question fewer at chunk@1 and chunk@10 of 15).
EMBED_STRIP_PUNCTUATION = True

STATUS_KEYWORD_READY = "keyword_ready"
STATUS_EMBEDDING = "embedding"
STATUS_READY = "ready"
STATUS_ERROR = "error"


@dataclass
class BookInfo:
    id: str
    title: str
    source: str  # file name as uploaded
    path: str  # path given to ingest
    format: str  # epub | txt | md
    chapters: int
    chunks: int
    embedded: int  # chunks whose vectors are all stored
    status: str  # keyword_ready | embedding | ready | error
    error: str | None = None
    chars: int = 0
    created: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Book:
    manifest: dict[str, Any]
    directory: Path
    embedded: int = 0
    complete: bool = False
    status: str = STATUS_KEYWORD_READY
    error: str | None = None
    chunks: list[dict[str, Any]] | None = None
    keyword: KeywordIndex | None = None
    pos_by_id: dict[str, int] = field(default_factory=dict)
    progress: list[Progress] = field(default_factory=list)
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def id(self) -> str:
        return str(self.manifest["id"])

    def info(self) -> BookInfo:
        m = self.manifest
        return BookInfo(
            id=m["id"],
            title=m["title"],
            source=m["source"],
            path=m.get("path", ""),
            format=m["format"],
            chapters=len(m["chapters"]),
            chunks=m["chunks"],
            embedded=m["chunks"] if self.complete else self.embedded,
            status=self.status,
            error=self.error,
            chars=m.get("chars", 0),
            created=m.get("created", 0.0),
        )


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _call(callbacks: list[Progress], stage: str, done: int, total: int, message: str) -> None:
    for cb in list(callbacks):
        try:
            cb(stage, done, total, message)
        except Exception:  # a broken progress bar must not break indexing
            log.exception("progress callback failed")


class BookIndex:
    """Books, their chunks, a keyword index per book and vectors in Chroma. Thread-safe."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        chroma_client: Any | None = None,
        piece_chars: int = EMBED_PIECE_CHARS,
        fusion_method: str = FUSION,
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        self._client = chroma_client
        self._collection: Any = None
        self._piece_chars = piece_chars
        if fusion_method not in fusion.METHODS:
            raise ValueError(f"unknown fusion method {fusion_method!r}")
        self.fusion_method = fusion_method
        self._books: dict[str, _Book] | None = None
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._jobs: queue.Queue[str | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._active: str | None = None  # id of the book the worker is embedding
        self._closed = False
        self._ingest_lock = threading.Lock()

    # ------------------------------------------------------------------ lazily created resources

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.settings)
        return self._embedder

    @property
    def keyword_dir(self) -> Path:
        return Path(self.settings.keyword_dir)

    def _chroma(self) -> Any:
        with self._lock:
            if self._collection is not None:
                return self._collection
            try:
                import chromadb
                from chromadb.config import Settings as ChromaSettings

                if self._client is None:
                    chroma_settings = ChromaSettings(anonymized_telemetry=False)
                    if self.settings.chroma_host:
                        self._client = chromadb.HttpClient(
                            host=self.settings.chroma_host, port=self.settings.chroma_port, settings=chroma_settings
                        )
                    else:
                        Path(self.settings.chroma_dir).mkdir(parents=True, exist_ok=True)
                        self._client = chromadb.PersistentClient(
                            path=str(self.settings.chroma_dir), settings=chroma_settings
                        )
                self._collection = self._client.get_or_create_collection(
                    name=f"{COLLECTION_PREFIX}{self._embedder_key()}",
                    embedding_function=chroma_embedding_function(self.embedder),
                    configuration={"hnsw": {"space": "cosine"}},
                )
            except RagError:
                raise
            except Exception as exc:
                where = (
                    f"Chroma server {self.settings.chroma_host}:{self.settings.chroma_port}"
                    if self.settings.chroma_host
                    else f"Chroma store {self.settings.chroma_dir}"
                )
                raise IndexError_(f"{where} could not be opened ({type(exc).__name__}: {exc}).") from exc
            return self._collection

    def _load_books(self) -> dict[str, _Book]:
        with self._lock:
            if self._books is not None:
                return self._books
            books: dict[str, _Book] = {}
            root = self.keyword_dir
            if root.is_dir():
                now = time.time()
                for entry in sorted(root.iterdir()):
                    if entry.name.startswith("."):
                        if entry.is_dir() and now - entry.stat().st_mtime > STALE_TMP_SECONDS:
                            shutil.rmtree(entry, ignore_errors=True)  # leftovers of a crash
                        continue
                    book = self._read_book_dir(entry)
                    if book is not None:
                        books[book.id] = book
            self._books = books
            return books

    def _read_book_dir(self, directory: Path) -> _Book | None:
        try:
            manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("ignoring %s: no readable manifest", directory)
            return None
        if manifest.get("version") != INDEX_VERSION or manifest.get("id") != directory.name:
            log.warning("ignoring %s: index version %s", directory, manifest.get("version"))
            return None
        book = _Book(manifest=manifest, directory=directory)
        state = self._vector_state(book)
        book.complete = bool(state.get("complete"))
        book.embedded = int(state.get("embedded", 0))
        book.status = STATUS_READY if book.complete else STATUS_KEYWORD_READY
        return book

    def _vector_state(self, book: _Book) -> dict[str, Any]:
        try:
            states = json.loads((book.directory / "vectors.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return states.get(self._embedder_key(), {}) if isinstance(states, dict) else {}

    def _embedder_key(self) -> str:
        """Names the vector space: the embedder, and what it was given (vectors never mix)."""
        key = self._embedder.key if self._embedder is not None else embedder_key(self.settings)
        return key if EMBED_STRIP_PUNCTUATION else f"{key}_punct"

    def _save_vector_state(self, book: _Book) -> None:
        path = book.directory / "vectors.json"
        try:
            states = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            states = {}
        states[self._embedder_key()] = {"complete": book.complete, "embedded": book.embedded}
        if book.directory.is_dir():
            _write_json_atomic(path, states)

    def _book(self, book_id: str) -> _Book:
        books = self._load_books()
        if book_id in books:
            return books[book_id]
        raise BookError(f"no book with id '{book_id}' in the index.")

    def _ensure_loaded(self, book: _Book) -> tuple[list[dict[str, Any]], KeywordIndex]:
        with self._lock:
            if book.chunks is None or book.keyword is None:
                try:
                    with (book.directory / "chunks.jsonl").open(encoding="utf-8") as fh:
                        chunks = [json.loads(line) for line in fh if line.strip()]
                    keyword = KeywordIndex.load(book.directory / "bm25", len(chunks))
                except (OSError, ValueError) as exc:
                    raise IndexError_(f"the index of '{book.manifest['title']}' is unreadable ({exc}).") from exc
                book.chunks, book.keyword = chunks, keyword
                book.pos_by_id = {c["id"]: pos for pos, c in enumerate(chunks)}
            return book.chunks, book.keyword

    # ---------------------------------------------------------------------------------- public

    def books(self) -> list[BookInfo]:
        with self._lock:
            return [b.info() for b in sorted(self._load_books().values(), key=lambda b: b.manifest["created"])]

    def book(self, book_id: str) -> BookInfo:
        with self._lock:
            return self._book(book_id).info()

    def find_book(self, name_or_id: str) -> BookInfo | None:
        """A book by exact id, id prefix, title or file name (case-insensitive)."""
        needle = name_or_id.strip().lower()
        infos = self.books()
        for test in (
            lambda b: b.id == needle,
            lambda b: b.title.lower() == needle or b.source.lower() == needle,
            lambda b: b.id.startswith(needle),
        ):
            hits = [b for b in infos if test(b)]
            if len(hits) == 1:
                return hits[0]
        return None

    def ingest(
        self,
        path: str | Path,
        name: str | None = None,
        progress: Progress | None = None,
        background: bool = True,
        embed: bool = True,
    ) -> BookInfo:
        """Add a book. Returns once it is keyword-searchable; vectors follow in a background thread
        (``background=False``: returns when fully embedded; ``embed=False``: no vectors now, see
        ``resume_embedding``). Re-ingesting the same content is a no-op (an unfinished embedding is
        resumed). ``progress(stage, done, total, message)`` is called with the stages reading,
        chunking, keyword, embedding (per chapter, from the embedding thread), ready or error.
        Raises ``BookError`` on bad input."""
        if self._closed:
            raise IndexError_("the book index is closed.")
        callbacks = [progress] if progress else []
        _call(callbacks, "reading", 0, 1, Path(path).name)
        loaded = load_book(path, max_mb=self.settings.max_book_mb, name=name)
        chapters = [(c.num, c.title, c.text) for c in loaded.chapters]
        digest = hashlib.sha256()
        for num, title, text in chapters:
            digest.update(f"{num}\x1f{title}\x1f{text}\x1e".encode())
        book_id = digest.hexdigest()[:12]
        params = {
            "chunk_size": self.settings.chunk_size,
            "chunk_overlap": self.settings.chunk_overlap,
            "piece_chars": self._piece_chars,
        }
        _call(callbacks, "reading", 1, 1, f"{loaded.title}: {len(chapters)} chapters, {loaded.chars} characters")

        with self._ingest_lock:
            books = self._load_books()
            existing = books.get(book_id)
            if existing is not None and all(existing.manifest.get(k) == v for k, v in params.items()):
                log.info("book %s (%s) is already indexed", book_id, existing.manifest["title"])
                _call(callbacks, "keyword", existing.manifest["chunks"], existing.manifest["chunks"], "already indexed")
                return self._after_keyword(existing, callbacks, background, embed)

            chunks = chunk_chapters(
                book_id,
                chapters,
                size=self.settings.chunk_size,
                overlap=self.settings.chunk_overlap,
                piece_size=self._piece_chars,
            )
            if not chunks:
                raise BookError(f"{loaded.source}: the book contains no text to index.")
            _call(callbacks, "chunking", len(chunks), len(chunks), f"{len(chunks)} chunks")
            manifest = {
                "version": INDEX_VERSION,
                "id": book_id,
                "title": loaded.title,
                "source": loaded.source,
                "path": str(path),
                "format": loaded.format,
                "chars": loaded.chars,
                "chapters": [{"num": n, "title": t, "chars": len(x)} for n, t, x in chapters],
                "chunks": len(chunks),
                "pieces": sum(len(c.pieces) for c in chunks),
                "created": time.time(),
                **params,
            }
            directory = self._write_book_dir(manifest, chunks, callbacks)
            book = self._read_book_dir(directory)
            if book is None:  # pragma: no cover - we just wrote it
                raise IndexError_(f"the index of '{loaded.title}' could not be written.")
            with self._lock:
                if existing is not None:
                    existing.cancel.set()
                books[book_id] = book
                self._changed.notify_all()
            _call(callbacks, "keyword", len(chunks), len(chunks), "keyword search ready")
            log.info("indexed %s (%s): %d chapters, %d chunks", book_id, loaded.title, len(chapters), len(chunks))
            return self._after_keyword(book, callbacks, background, embed)

    def _write_book_dir(self, manifest: dict[str, Any], chunks: list[Any], callbacks: list[Progress]) -> Path:
        root = self.keyword_dir
        root.mkdir(parents=True, exist_ok=True)
        final = root / manifest["id"]
        tmp = root / f".tmp-{manifest['id']}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            with (tmp / "chunks.jsonl").open("w", encoding="utf-8") as fh:
                for c in chunks:
                    row = {
                        "id": c.id,
                        "chapter_idx": c.chapter_idx,
                        "chapter_num": c.chapter_num,
                        "chapter_title": c.chapter_title,
                        "chunk_index": c.chunk_index,
                        "start": c.start,
                        "end": c.end,
                        "text": c.text,
                        "pieces": c.pieces,
                    }
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            _call(callbacks, "keyword", 0, len(chunks), "building the keyword index")
            KeywordIndex.build([c.text for c in chunks]).save(tmp / "bm25")
            _write_json_atomic(tmp / "manifest.json", manifest)
            _fsync_dir(tmp)
            old = None
            if final.exists():  # same content, new chunk settings: swap the directories
                old = root / f".old-{manifest['id']}-{uuid.uuid4().hex[:8]}"
                os.replace(final, old)
            try:
                os.replace(tmp, final)
            except OSError:
                if not (final / "manifest.json").exists():
                    raise
                # another process indexed the same book at the same time: keep its copy
                log.info("book %s was indexed concurrently; keeping the existing copy", manifest["id"])
                shutil.rmtree(tmp, ignore_errors=True)
            _fsync_dir(root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def _after_keyword(self, book: _Book, callbacks: list[Progress], background: bool, embed: bool) -> BookInfo:
        if book.complete:
            _call(callbacks, "ready", book.manifest["chunks"], book.manifest["chunks"], "ready")
            return book.info()
        if not embed:
            return book.info()
        with self._lock:
            book.progress.extend(callbacks)
        if background:
            self._schedule(book)
        elif book.status == STATUS_EMBEDDING:  # already queued or running in the background
            self.wait_until_embedded(book.id)
        else:
            self._embed_book(book)
            if book.status == STATUS_ERROR:
                raise IndexError_(f"embedding '{book.manifest['title']}' failed: {book.error}")
        return book.info()

    def resume_embedding(self, book_id: str | None = None, background: bool = True) -> list[str]:
        """Start embedding every book (or one) whose vectors are incomplete; returns their ids."""
        books = [self._book(book_id)] if book_id else list(self._load_books().values())
        started = []
        for book in books:
            if not book.complete and book.status != STATUS_EMBEDDING:
                started.append(book.id)
                if background:
                    self._schedule(book)
                else:
                    self._embed_book(book)
        return started

    def wait_until_embedded(self, book_id: str, timeout: float | None = None) -> bool:
        """Block until the book's vectors are complete (True) or failed / timed out (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                book = self._book(book_id)
                if book.complete:
                    return True
                if book.status == STATUS_ERROR:
                    return False
                if book.status != STATUS_EMBEDDING:
                    return False  # nothing is going to embed it
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._changed.wait(timeout=remaining if remaining is not None else 1.0)

    def delete_book(self, book_id: str) -> None:
        """Remove a book, its keyword index and its vectors."""
        with self._ingest_lock:
            with self._lock:
                book = self._book(book_id)
                book.cancel.set()
                books = self._load_books()
            # wait for a running embedding of this book to notice the cancel flag
            with self._changed:
                deadline = time.monotonic() + 60
                while self._active == book_id and time.monotonic() < deadline:
                    self._changed.wait(timeout=0.5)
            trash = self.keyword_dir / f".trash-{book_id}-{uuid.uuid4().hex[:8]}"
            os.replace(book.directory, trash)  # the book disappears in one step
            with self._lock:
                books.pop(book_id, None)
                self._changed.notify_all()
            try:
                self._chroma().delete(where={"book_id": book_id})
            except IndexError_:
                log.warning("vectors of %s could not be deleted now; they are ignored", book_id)
            shutil.rmtree(trash, ignore_errors=True)
            log.info("deleted book %s", book_id)

    def close(self) -> None:
        """Stop background embedding (it resumes later with ``resume_embedding``) and release clients."""
        self._closed = True
        with self._lock:
            for book in (self._books or {}).values():
                book.cancel.set()
        worker = self._worker
        if worker is not None and worker.is_alive():
            self._jobs.put(None)
            worker.join(timeout=120)
        self._worker = None
        closer = getattr(self._embedder, "close", None)
        if callable(closer):
            closer()
        self._collection = None
        self._client = None

    def __enter__(self) -> BookIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------------------- embedding

    def _schedule(self, book: _Book) -> None:
        with self._lock:
            if self._closed:
                return
            if book.status == STATUS_EMBEDDING:
                return
            book.cancel = threading.Event()
            book.status = STATUS_EMBEDDING  # queued counts as embedding
            self._changed.notify_all()
            self._jobs.put(book.id)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="book-embedder", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            book_id = self._jobs.get()
            if book_id is None or self._closed:
                return
            with self._lock:
                book = (self._books or {}).get(book_id)
                if book is None:
                    continue
                if book.cancel.is_set() or book.complete:
                    book.status = STATUS_READY if book.complete else STATUS_KEYWORD_READY
                    self._changed.notify_all()
                    continue
                self._active = book_id
            try:
                self._embed_book(book)
            finally:
                with self._lock:
                    self._active = None
                    self._changed.notify_all()

    def _embed_book(self, book: _Book) -> None:
        with self._lock:
            book.status = STATUS_EMBEDDING
            book.error = None
            self._changed.notify_all()
        try:
            self._embed_book_inner(book)
        except Exception as exc:
            log.exception("embedding %s failed", book.id)
            with self._lock:
                book.status = STATUS_ERROR
                book.error = str(exc) if isinstance(exc, RagError) else f"{type(exc).__name__}: {exc}"
                self._changed.notify_all()
            _call(book.progress, "error", book.embedded, book.manifest["chunks"], book.error or "")
            return
        with self._lock:
            if book.complete:
                book.status = STATUS_READY
            elif book.status == STATUS_EMBEDDING:
                book.status = STATUS_KEYWORD_READY  # cancelled; resumable
            self._changed.notify_all()
            callbacks, book.progress = book.progress, []
        if book.complete:
            _call(callbacks, "ready", book.manifest["chunks"], book.manifest["chunks"], "vector search ready")

    def _embed_book_inner(self, book: _Book) -> None:
        chunks, _ = self._ensure_loaded(book)
        collection = self._chroma()
        total = len(chunks)
        wanted: dict[str, tuple[int, int]] = {}  # piece id -> (chunk position, piece number)
        for pos, c in enumerate(chunks):
            for j in range(len(c["pieces"])):
                wanted[f"{c['id']}:{j}"] = (pos, j)
        stored = set(collection.get(where={"book_id": book.id}, include=[])["ids"])
        stale = [pid for pid in stored if pid not in wanted]
        if stale:
            collection.delete(ids=stale)
        done_pieces = {pid for pid in stored if pid in wanted}

        def embedded_chunks() -> int:
            return sum(all(f"{c['id']}:{j}" in done_pieces for j in range(len(c["pieces"]))) for c in chunks)

        book.embedded = embedded_chunks()
        _call(book.progress, "embedding", book.embedded, total, "starting")
        batch = max(1, self.settings.embedding_batch_size)
        if getattr(self.embedder, "key", "") in LOCAL_EMBEDDER_KEYS:
            batch = min(batch, LOCAL_EMBED_BATCH)
        cache: dict[str, Any] = {}  # identical piece texts are embedded once
        by_chapter: dict[int, list[tuple[str, str, dict[str, Any]]]] = {}
        for pid, (pos, j) in wanted.items():
            if pid in done_pieces:
                continue
            c = chunks[pos]
            a, b = c["pieces"][j]
            raw = c["text"][a - c["start"] : b - c["start"]]
            text = (embedding_text(raw) or raw) if EMBED_STRIP_PUNCTUATION else raw
            meta = {
                "book_id": book.id,
                "chunk_id": c["id"],
                "piece": j,
                "chapter_idx": c["chapter_idx"],
            }
            by_chapter.setdefault(c["chapter_idx"], []).append((pid, text, meta))
        chapter_titles = {c["chapter_idx"]: c["chapter_title"] for c in chunks}
        for chapter_idx in sorted(by_chapter):
            items = by_chapter[chapter_idx]
            for start in range(0, len(items), batch):
                if book.cancel.is_set() or self._closed:
                    log.info("embedding of %s stopped at %d/%d chunks", book.id, book.embedded, total)
                    self._save_vector_state(book)
                    return
                part = items[start : start + batch]
                todo = [t for _, t, _ in part if t not in cache]
                if todo:
                    unique = list(dict.fromkeys(todo))
                    vectors = self.embedder.embed_passages(unique)
                    cache.update(zip(unique, vectors, strict=True))
                collection.upsert(
                    ids=[pid for pid, _, _ in part],
                    embeddings=[cache[t].tolist() for _, t, _ in part],
                    metadatas=[m for _, _, m in part],
                )
                done_pieces.update(pid for pid, _, _ in part)
            book.embedded = embedded_chunks()
            self._save_vector_state(book)
            _call(book.progress, "embedding", book.embedded, total, chapter_titles.get(chapter_idx, "") or "")
        book.embedded = total
        book.complete = True
        self._save_vector_state(book)

    # -------------------------------------------------------------------------------- retrieval

    def retrieve(
        self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None
    ) -> list[Passage]:
        """Best passages for ``query``, best first. ``mode``: hybrid (default from settings), vector
        or keyword. Hybrid uses keyword only for books whose vectors are not complete yet."""
        k = k or self.settings.retrieval_k
        mode = (mode or self.settings.retrieval_mode).lower()
        if mode not in {"hybrid", "vector", "keyword"}:
            raise ValueError(f"unknown retrieval mode {mode!r} (hybrid, vector or keyword)")
        query = (query or "").strip()
        if not query:
            return []
        with self._lock:
            books = [self._book(book_id)] if book_id else list(self._load_books().values())
        if not books:
            return []
        keyword_hits: list[tuple[tuple[str, int], float]] = []
        vector_hits: list[tuple[tuple[str, int], float]] = []
        candidates = max(CANDIDATES, k)
        if mode in {"hybrid", "keyword"}:
            keyword_hits = self._keyword_search(query, books, candidates)
        if mode == "vector":
            vector_hits = self._vector_search(query, books, candidates)
        elif mode == "hybrid":
            ready = [b for b in books if b.complete]
            if ready:
                vector_hits = self._vector_search(query, ready, candidates)
        if mode == "keyword" or not vector_hits:
            fused = [(key, score, frozenset({"keyword"})) for key, score in keyword_hits[:k]]
        elif mode == "vector" or not keyword_hits:
            fused = [(key, score, frozenset({"vector"})) for key, score in vector_hits[:k]]
        else:
            fused = fusion.METHODS[self.fusion_method](vector_hits, keyword_hits, k)
        by_id = {b.id: b for b in books}
        passages = []
        for key, score, sources in fused:
            bid, pos = key  # type: ignore[misc]
            book = by_id[bid]
            chunks, _ = self._ensure_loaded(book)
            c = chunks[pos]
            passages.append(
                Passage(
                    id=c["id"],
                    text=c["text"],
                    book_id=bid,
                    book_title=book.manifest["title"],
                    chapter_num=c["chapter_num"],
                    chapter_title=c["chapter_title"],
                    chunk_index=c["chunk_index"],
                    start=c["start"],
                    end=c["end"],
                    score=float(score),
                    source="hybrid" if len(sources) > 1 else next(iter(sources)),
                )
            )
        return passages

    def _keyword_search(self, query: str, books: list[_Book], n: int) -> list[tuple[tuple[str, int], float]]:
        hits: list[tuple[tuple[str, int], float]] = []
        for book in books:
            _, keyword = self._ensure_loaded(book)
            hits.extend(((book.id, pos), score) for pos, score in keyword.top(query, n))
        hits.sort(key=lambda h: -h[1])
        return hits[:n]

    def _vector_search(self, query: str, books: list[_Book], n: int) -> list[tuple[tuple[str, int], float]]:
        collection = self._chroma()
        vector = self.embedder.embed_query(query)
        ids = [b.id for b in books]
        where = {"book_id": ids[0]} if len(ids) == 1 else {"book_id": {"$in": ids}}
        try:
            result = collection.query(
                query_embeddings=[vector.tolist()],
                n_results=n * 3,  # several pieces per chunk
                where=where,
                include=["metadatas", "distances"],
            )
        except Exception as exc:
            raise IndexError_(f"vector search failed ({type(exc).__name__}: {exc}).") from exc
        best: dict[tuple[str, int], float] = {}
        metadatas = (result.get("metadatas") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        by_id = {b.id: b for b in books}
        for meta, distance in zip(metadatas, distances, strict=False):
            book = by_id.get(str(meta.get("book_id")))
            if book is None:
                continue
            self._ensure_loaded(book)
            pos = book.pos_by_id.get(str(meta.get("chunk_id")))
            if pos is None:
                continue  # a stale vector from an older chunking of this book
            key = (book.id, pos)
            score = 1.0 - float(distance)
            if score > best.get(key, -2.0):
                best[key] = score
        return sorted(best.items(), key=lambda kv: -kv[1])[:n]

    def iter_chunks(self, book_id: str) -> Iterator[dict[str, Any]]:
        """Every stored chunk of a book, in reading order (for tools and tests)."""
        chunks, _ = self._ensure_loaded(self._book(book_id))
        yield from chunks


def open_index(settings: Settings, embedder: Embedder | None = None) -> BookIndex:
    """A ``BookIndex`` over ``settings.data_dir``. Cheap: nothing is read or loaded until used."""
    return BookIndex(settings, embedder=embedder)
