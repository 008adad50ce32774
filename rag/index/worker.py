"""Embedding books: a queue and one background thread (or the caller's thread), cancel, progress.

A book's vectors are computed chapter by chapter; only pieces not yet stored are embedded, so
embedding can stop at any point and resume later. Progress goes to the book's ``vectors.json``
(``catalog.VectorProgress``), with a heartbeat while embedding runs, so every process reads the same
status: ``python -m rag books`` sees "embedding" while the app embeds, and a stale heartbeat (a
process that died) reads as resumable ``keyword_ready``. This module holds the index's only lock.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rag.errors import RagError, disk_full
from rag.i18n import Msg
from rag.index.catalog import Catalog, StoredBook
from rag.index.chunking import embedding_text
from rag.index.config import IndexConfig
from rag.index.cost import EmbedRates, estimate_seconds
from rag.index.embeddings import Embedder
from rag.index.progress import Heartbeat, VectorProgress
from rag.index.retrieval import TITLE_PIECE, title_piece_id
from rag.index.vectors import VectorStore

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int, str], None]  # (stage, done, total, message)

STATUS_KEYWORD_READY = "keyword_ready"
STATUS_EMBEDDING = "embedding"
STATUS_READY = "ready"
STATUS_ERROR = "error"
POLL_SECONDS = 0.5  # how often a wait looks at another process's progress


def notify(callbacks: list[Progress], stage: str, done: int, total: int, message: str) -> None:
    for cb in list(callbacks):
        try:
            cb(stage, done, total, message)
        except Exception:  # a broken progress bar must not break indexing
            log.exception("progress callback failed")


@dataclass(frozen=True)
class EmbeddingState:
    status: str  # keyword_ready | embedding | ready | error
    embedded: int  # chunks whose vectors are all stored
    error: Msg | str | None = None


@dataclass
class _Job:
    book: StoredBook
    callbacks: list[Progress]
    cancel: threading.Event = field(default_factory=threading.Event)
    running: bool = False  # queued until a thread runs it
    done: bool = False
    embedded: int = 0
    error: Msg | str | None = None
    beat: float = 0.0  # when the heartbeat was last written


class EmbeddingWorker:
    """Computes books' missing vectors and knows every book's embedding status."""

    def __init__(self, catalog: Catalog, vectors: VectorStore, embedder: Callable[[], Embedder], space: str,
                 config: IndexConfig) -> None:
        self._catalog = catalog
        self._vectors = vectors
        self._embedder = embedder
        self._space = space
        self._config = config
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._jobs: dict[str, _Job] = {}  # the latest job per book id
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False
        # measured pieces per second, for estimates (rag.index.cost), in the data directory
        self.rates = EmbedRates(catalog.root.parent)

    def state(self, book: StoredBook) -> EmbeddingState:
        with self._lock:
            job = self._jobs.get(book.id)
            if job is not None and not job.done:
                return EmbeddingState(STATUS_EMBEDDING, job.embedded)  # queued counts as embedding
            if job is not None and job.error is not None:
                return EmbeddingState(STATUS_ERROR, job.embedded, job.error)
        progress = self._catalog.read_progress(book.id, self._space)
        if progress.complete:
            return EmbeddingState(STATUS_READY, book.manifest.chunks)
        if progress.worker is not None and progress.worker.alive(self._config.heartbeat_stale_seconds):
            return EmbeddingState(STATUS_EMBEDDING, progress.embedded)  # another process (or index)
        return EmbeddingState(STATUS_KEYWORD_READY, progress.embedded)

    def embed(self, book: StoredBook, callbacks: list[Progress], background: bool = True) -> None:
        """Embed what is missing of ``book``: queued for the background thread, or now in this thread
        (then it returns when done, failed or cancelled). Joins a job already queued or running, and
        follows one in another process (in the background: leaves the book to it)."""
        if self._embedding_elsewhere(book) and (background or self.wait(book)):
            return
        with self._lock:
            if self._closed:
                return
            job = self._jobs.get(book.id)
            joined = False
            if job is not None and job.book is book and not job.done and not job.cancel.is_set():
                joined = True
                job.callbacks.extend(callbacks)
            else:
                if job is not None:
                    job.cancel.set()  # an older version of the book
                job = self._jobs[book.id] = _Job(book, list(callbacks), running=not background)
                if background:
                    self._queue.put(job)
                    if self._thread is None or not self._thread.is_alive():
                        self._thread = threading.Thread(target=self._loop, name="book-embedder", daemon=True)
                        self._thread.start()
            self._changed.notify_all()
        if background:
            return
        if joined:
            self.wait(book)
        else:
            self._run(job)

    def _embedding_elsewhere(self, book: StoredBook) -> bool:
        with self._lock:
            job = self._jobs.get(book.id)
            if job is not None and not job.done:
                return False
        return self.state(book).status == STATUS_EMBEDDING

    def wait(self, book: StoredBook, timeout: float | None = None) -> bool:
        """Block until the book's vectors are complete (True) or nobody is embedding it any more, it
        failed, or ``timeout`` passed (False). Follows an embedding in another process too."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                status = self.state(book).status
                if status != STATUS_EMBEDDING:
                    return status == STATUS_READY
                remaining = POLL_SECONDS if deadline is None else deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(timeout=min(remaining, POLL_SECONDS))

    def cancel(self, book_id: str, timeout: float = 60.0) -> None:
        """Stop the book's embedding (it can resume later) and wait until it has stopped."""
        deadline = time.monotonic() + timeout
        with self._changed:
            job = self._jobs.get(book_id)
            if job is None:
                return
            job.cancel.set()
            while job.running and not job.done and time.monotonic() < deadline:
                self._changed.wait(timeout=POLL_SECONDS)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for job in self._jobs.values():
                job.cancel.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join(timeout=120)
        self._thread = None

    # ------------------------------------------------------------------------------------ running

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None or self._closed:
                return
            with self._lock:
                if job.cancel.is_set():
                    job.done = True
                    self._changed.notify_all()
                    continue
                job.running = True
            self._run(job)

    def _run(self, job: _Job) -> None:
        total = job.book.manifest.chunks
        try:
            complete = self._embed(job)
        except Exception as exc:
            log.exception("embedding %s failed", job.book.id)
            error: Msg | str
            if not isinstance(exc, RagError) and disk_full(exc, self._catalog.root):
                error = Msg.of("index.disk_full", level="error")  # one line, not the store's own words
            else:
                error = str(exc) if isinstance(exc, RagError) else f"{type(exc).__name__}: {exc}"
            try:
                self._save(job, working=False)
            except OSError:
                log.warning("progress of %s could not be saved", job.book.id)
            with self._lock:
                job.error, job.done = error, True
                self._changed.notify_all()
            notify(job.callbacks, "error", job.embedded, total, str(error))
            return
        with self._lock:
            job.done = True
            callbacks, job.callbacks = job.callbacks, []
            self._changed.notify_all()
        if complete:
            notify(callbacks, "ready", total, total, "vector search ready")

    def _save(self, job: _Job, working: bool, complete: bool = False) -> None:
        beat = Heartbeat.now() if working else None
        self._catalog.write_progress(job.book.id, self._space, VectorProgress(complete, job.embedded, beat))
        job.beat = time.monotonic()

    def _embed(self, job: _Job) -> bool:
        """Upsert the book's missing piece vectors; True when all are stored, False when cancelled.
        Pieces are made one chapter at a time, and identical texts are embedded once per chapter,
        so memory does not grow with the book (bench/ingest_memory.py)."""
        book = job.book
        chunks = book.chunks()
        total = len(chunks)
        wanted = {c.piece_id(j) for c in chunks for j in range(len(c.pieces))} | set(title_pieces(book))
        stored = self._vectors.stored_ids(book.id)
        self._vectors.delete([pid for pid in stored if pid not in wanted])  # from an older chunking
        done = stored & wanted
        del wanted, stored
        missing = [sum(c.piece_id(j) not in done for j in range(len(c.pieces))) for c in chunks]  # per chunk
        position = {c.id: n for n, c in enumerate(chunks)}
        job.embedded = sum(1 for m in missing if m == 0)
        self._save(job, working=True)
        notify(job.callbacks, "embedding", job.embedded, total, "starting")
        embedder = self._embedder()
        batch = self._config.batch_for(embedder.key)
        titles = {c.chapter_idx: c.chapter_title for c in chunks}
        measured = [0, 0.0]  # pieces embedded and stored, and the seconds it took, not yet recorded

        def record(at_least: int) -> None:
            if measured[0] >= at_least:
                self.rates.record(self._space, int(measured[0]), measured[1])
                measured[:] = [0, 0.0]

        for chapter_idx, items in missing_pieces(book, done, self._config.strip_punctuation):
            cache: dict[str, Any] = {}  # identical piece texts of a chapter are embedded once
            started = time.monotonic()
            for start in range(0, len(items), batch):
                if job.cancel.is_set() or self._closed:
                    log.info("embedding of %s stopped at %d/%d chunks", book.id, job.embedded, total)
                    measured[1] += time.monotonic() - started
                    record(1)
                    self._save(job, working=False)
                    return False
                part = items[start : start + batch]
                todo = list(dict.fromkeys(p.text for p in part if p.text not in cache))
                if todo:
                    cache.update(zip(todo, embedder.embed_passages(todo), strict=True))
                self._vectors.upsert([p.id for p in part], [cache[p.text] for p in part], [p.meta for p in part])
                measured[0] += len(part)
                for p in part:
                    at = position.get(p.meta["chunk_id"])
                    if at is not None:
                        missing[at] -= 1
                        job.embedded += missing[at] == 0
                if time.monotonic() - job.beat > self._config.heartbeat_seconds:
                    self._save(job, working=True)
            measured[1] += time.monotonic() - started
            record(256)
            self._save(job, working=True)
            notify(job.callbacks, "embedding", job.embedded, total, titles.get(chapter_idx, "") or "")
        record(1)
        job.embedded = total
        self._save(job, working=False, complete=True)
        return True

    def estimate(self, book: StoredBook) -> tuple[float, int, float]:
        """(seconds, pieces left, pieces per second) of embedding what the book still lacks, at the
        rate this index measured (``rag.index.cost``); pieces left are counted from the chunks done."""
        m = book.manifest
        state = self.state(book)
        if state.status == STATUS_READY or not m.chunks:
            return 0.0, 0, self.rates.rate(self._space)
        left = round(m.pieces * (1 - state.embedded / m.chunks))
        rate = self.rates.rate(self._space)
        return estimate_seconds(left, rate), left, rate


class _Piece(NamedTuple):
    id: str
    text: str  # what the embedder is given
    meta: dict[str, Any]


def title_pieces(book: StoredBook) -> dict[str, tuple[int, str]]:
    """The chapter-title vectors a book has: piece id -> (chapter position, title). Retrieval adds a
    share of a chapter title's similarity to the scores of the chapter's chunks (``title_weight``)."""
    return {title_piece_id(book.id, i): (i, c.title.strip()) for i, c in enumerate(book.manifest.chapters)
            if c.title.strip()}


def missing_pieces(book: StoredBook, done: set[str], strip_punctuation: bool) -> Iterator[tuple[int, list[_Piece]]]:
    """The pieces not in ``done`` (chapter titles first in their chapter), chapter by chapter in
    reading order: (chapter position, pieces), made as they are asked for."""
    titles: dict[int, list[_Piece]] = {}
    for pid, (idx, title) in title_pieces(book).items():
        if pid not in done:
            text = (embedding_text(title) or title) if strip_punctuation else title
            meta = {"book_id": book.id, "chunk_id": "", "piece": TITLE_PIECE, "chapter_idx": idx}
            titles.setdefault(idx, []).append(_Piece(pid, text, meta))
    current: int | None = None
    items: list[_Piece] = []
    for c in book.chunks():  # in reading order: chapter positions never decrease
        if c.chapter_idx != current:
            if current is not None and items:
                yield current, items
            for idx in sorted(i for i in titles if (current is None or i > current) and i < c.chapter_idx):
                yield idx, titles.pop(idx)  # a chapter with a title and no chunk to embed
            current, items = c.chapter_idx, titles.pop(c.chapter_idx, [])
        for j in range(len(c.pieces)):
            if c.piece_id(j) not in done:
                raw = c.piece_text(j)
                text = (embedding_text(raw) or raw) if strip_punctuation else raw
                meta = {"book_id": book.id, "chunk_id": c.id, "piece": j, "chapter_idx": c.chapter_idx}
                items.append(_Piece(c.piece_id(j), text, meta))
    if current is not None and items:
        yield current, items
    for idx in sorted(titles):
        yield idx, titles[idx]
