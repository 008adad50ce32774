"""The book index: ``BookIndex``, one face over the parts of this package.

    catalog.py    books on disk: manifest, chunks, BM25 and embedding progress; atomic writes
    vectors.py    Chroma: one collection per vector space (embedder, and what it was given)
    worker.py     background embedding, cancel, progress and status (the only lock)
    retrieval.py  keyword + vector candidates fused into Passages, scoped by book and chapters
    config.py     IndexConfig: chunk pieces, batches, fusion, heartbeat

A book is keyword-searchable as soon as its directory is in place (seconds); its vectors follow in
the background, chapter by chapter, and hybrid retrieval uses keywords only for a book until its
vectors are complete. Several books share a store; retrieval can be scoped to one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rag.config import Settings
from rag.errors import BookError, IndexError_, RagError, disk_full
from rag.i18n import Msg
from rag.index.catalog import (
    KEYWORD_VERSION,
    BookInfo,
    Catalog,
    StoredBook,
    VectorProgress,
    book_id_of,
    chunk_row,
    find_book,
    no_such_book,
    owners_after,
    plan_book,
)
from rag.index.chapters import LoadedBook
from rag.index.chunking import Chunk
from rag.index.config import IndexConfig
from rag.index.cost import slow_embedding
from rag.index.embeddings import Embedder, make_embedder
from rag.index.library import LibraryView
from rag.index.loaders import load_book
from rag.index.rerank import Reranker, make_reranker
from rag.index.retrieval import Request, Retrieval
from rag.index.vectors import ChromaVectors, VectorStore, space_key
from rag.index.worker import (
    STATUS_EMBEDDING,
    STATUS_ERROR,
    STATUS_KEYWORD_READY,
    STATUS_READY,
    EmbeddingWorker,
    Progress,
    notify,
)
from rag.schemas import Passage, RetrievalOutcome

log = logging.getLogger(__name__)


@runtime_checkable
class Closeable(Protocol):
    """A client that holds something to release (an HTTP client, a model's threads)."""

    def close(self) -> None: ...

class BookIndex:
    """Books, their chunks, a keyword index per book and vectors in Chroma. Thread-safe.
    ``vectors`` replaces the Chroma store (tests use an in-memory one)."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None, *, config: IndexConfig | None = None,
                 chroma_client: Any | None = None, vectors: VectorStore | None = None,
                 reranker: Reranker | None = None) -> None:
        self.settings = settings
        self.config = config or IndexConfig.from_settings(settings)
        self._embedder = embedder
        self._catalog = Catalog(Path(settings.keyword_dir), self.config.stale_tmp_seconds)
        space = space_key(settings, embedder, self.config.strip_punctuation)
        self._space = space
        self._vectors = vectors or ChromaVectors(settings, space, lambda: self.embedder, client=chroma_client,
                                                 on_reset=self._vectors_lost)
        self._worker = EmbeddingWorker(self._catalog, self._vectors, lambda: self.embedder, space, self.config)
        self._reranker = reranker if reranker is not None else make_reranker(settings)
        self._retrieval = Retrieval(self._vectors, lambda: self.embedder, self._reranker)
        self._closed = False
        self._book_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.settings)
        return self._embedder

    @property
    def fusion_method(self) -> str:
        return self.config.fusion

    @fusion_method.setter
    def fusion_method(self, method: str) -> None:
        self.config = replace(self.config, fusion=method)

    def _info(self, book: StoredBook) -> BookInfo:
        state = self._worker.state(book)
        info = book.info(state.status, state.embedded, state.error)
        if state.status in (STATUS_KEYWORD_READY, STATUS_EMBEDDING):
            info.notice = self._slow_notice(book)
        return info

    def _slow_notice(self, book: StoredBook) -> Msg | None:
        """``index.embed_slow`` when what the book still lacks would take longer than
        ``EMBED_WARN_MINUTES`` to embed at the index's rate (``rag.index.cost``)."""
        seconds, left, rate = self._worker.estimate(book)
        return slow_embedding(book.manifest.title, seconds, self.settings.embed_warn_minutes, left, rate)

    def _chroma(self) -> Any:
        """The Chroma collection of this index's vector space (for tests and tools)."""
        return self._vectors.collection()  # type: ignore[attr-defined]

    # ---------------------------------------------------------------------------------- public

    def books(self, owner: str | None = None) -> list[BookInfo]:
        """Every book, or those ``owner`` sees: theirs and the shared ones (see ``Manifest.owners``)."""
        return [self._info(b) for b in self._visible(owner)]

    def _visible(self, owner: str | None, book_id: str | None = None) -> list[StoredBook]:
        if book_id:
            return [self._get(book_id, owner)]
        return [b for b in self._catalog.books().values() if b.manifest.visible_to(owner)]

    def book(self, book_id: str, owner: str | None = None) -> BookInfo:
        return self._info(self._get(book_id, owner))

    def _get(self, book_id: str, owner: str | None) -> StoredBook:
        book = self._catalog.get(book_id)
        if not book.manifest.visible_to(owner):  # another visitor's book: as if it did not exist
            raise no_such_book(book_id)
        return book

    def for_owner(self, owner: str | None) -> BookIndex | LibraryView:
        """The index as ``owner`` (a browser session) sees it; None: the whole library."""
        return self if owner is None else LibraryView(self, owner)

    def find_book(self, name_or_id: str) -> BookInfo | None:
        """A book by exact id, id prefix, title or file name (case-insensitive)."""
        return find_book(self.books(), name_or_id)

    def ingest(self, path: str | Path, name: str | None = None, progress: Progress | None = None,
               background: bool = True, embed: bool = True, *, owner: str | None = None,
               on_notice: Callable[[Msg], None] | None = None) -> BookInfo:
        """Add a book; returns once it is keyword-searchable, vectors follow in the background
        (``background=False``: once embedded; ``embed=False``: not now). The same content again is a
        no-op. ``progress(stage, done, total, message)``: reading, chunking, keyword, embedding, ready
        or error. ``owner``: the uploader, who alone (with earlier owners) sees it; None: shared.
        ``on_notice(msg)``: told before embedding starts when it will take long (``index.embed_slow``;
        also the returned ``BookInfo.notice``). Raises ``BookError`` on bad input."""
        if self._closed:
            raise IndexError_(Msg.of("index.closed", level="error"))
        callbacks = [progress] if progress else []
        notify(callbacks, "reading", 0, 1, Path(path).name)
        loaded = load_book(path, max_mb=self.settings.max_book_mb, name=name)
        notify(callbacks, "reading", 1, 1, f"{loaded.title}: {len(loaded.chapters)} chapters, {loaded.chars} characters")
        book_id = book_id_of(loaded)
        with self._ingest_lock(book_id):
            try:
                book = self._place(loaded, path, owner, callbacks)
            except Exception as exc:
                if isinstance(exc, RagError) or not disk_full(exc, self._catalog.root):
                    raise
                log.warning("book %s could not be stored: the disk is full (%s)", book_id, exc)
                raise IndexError_(Msg.of("index.disk_full", level="error")) from exc
        if self._worker.state(book).status == STATUS_READY:
            notify(callbacks, "ready", book.manifest.chunks, book.manifest.chunks, "ready")
            return self._info(book)
        notice = self._slow_notice(book)
        if notice is not None:
            log.warning("%s", notice)
            if on_notice is not None:
                on_notice(notice)
        if embed:
            self._worker.embed(book, callbacks, background=background)
            state = self._worker.state(book)
            if not background and state.status == STATUS_ERROR:
                raise IndexError_(Msg.of("index.embedding_failed", level="error", title=book.manifest.title,
                                         detail=state.error))
        return self._info(book)

    def _place(self, loaded: LoadedBook, path: str | Path, owner: str | None, callbacks: list[Progress]) -> StoredBook:
        """The book's directory (written unless the same chunking is there already), claimed by ``owner``."""
        chunking = (self.settings.chunk_size, self.settings.chunk_overlap, self.config.piece_chars)
        book = self._catalog.books().get(book_id_of(loaded))
        if book is not None and book.manifest.chunking() == chunking and book.manifest.keyword == KEYWORD_VERSION:
            log.info("book %s (%s) is already indexed", book.id, book.manifest.title)
            notify(callbacks, "keyword", book.manifest.chunks, book.manifest.chunks, "already indexed")
            if loaded.author.strip() and not book.manifest.author and not book.manifest.rebuilt:
                book = self._catalog.update(book.id, author=loaded.author.strip())  # indexed before authors were kept
        else:
            notify(callbacks, "chunking", 0, loaded.chars, "chunking")  # in characters: a rate that means something
            manifest, chunks = plan_book(loaded, path, *chunking)
            earlier = book.manifest.owners if book is not None and not book.manifest.rebuilt else None
            manifest = replace(manifest, owners=owners_after(earlier, owner))
            notify(callbacks, "chunking", loaded.chars, loaded.chars, f"{len(chunks)} chunks")
            if book is not None:
                self._worker.cancel(book.id)  # it embeds the old chunks
            notify(callbacks, "keyword", 0, len(chunks), "building the keyword index")
            book = self._catalog.write(manifest, chunks)
            notify(callbacks, "keyword", len(chunks), len(chunks), "keyword search ready")
            log.info("indexed %s (%s): %d chapters, %d chunks", book.id, loaded.title, len(loaded.chapters), len(chunks))
        return self._catalog.claim(book, owner)

    def resume_embedding(self, book_id: str | None = None, background: bool = True) -> list[str]:
        """Start embedding every book (or one) whose vectors are incomplete and that nobody embeds;
        returns their ids. The vector store is opened (and checked, ``ChromaVectors._checked``) first:
        a damaged one is rebuilt here, so its books are embedded again."""
        self._check_vectors()
        books = [self._catalog.get(book_id)] if book_id else list(self._catalog.books().values())
        started = [b for b in books if self._worker.state(b).status not in (STATUS_READY, STATUS_EMBEDDING)]
        for book in started:
            self._worker.embed(book, [], background=background)
        return [b.id for b in started]

    def _check_vectors(self) -> None:
        opener = getattr(self._vectors, "collection", None)
        if not callable(opener):
            return
        try:
            opener()
        except RagError as exc:  # unopenable: keyword search goes on, the error shows where vectors are used
            log.warning("the vector store could not be checked: %s", exc)

    def _vectors_lost(self) -> None:
        """The vector store was rebuilt empty: every book's vectors in this space start over (its
        progress says so in every process), and cached matrices go."""
        for book in list(self._catalog.books().values()):
            try:
                self._catalog.write_progress(book.id, self._space, VectorProgress())
            except OSError as exc:
                log.warning("progress of %s could not be reset: %s", book.id, exc)
            self._retrieval.forget(book.id)

    def wait_until_embedded(self, book_id: str, timeout: float | None = None) -> bool:
        """Block until the book's vectors are complete (True) or failed / timed out (False)."""
        return self._worker.wait(self._catalog.get(book_id), timeout)

    def release(self, book_id: str, owner: str | None = None) -> bool:
        """``owner`` gives up their claim on a book (a visitor's delete or cancelled upload): the
        book goes only when no owner is left; True if it went. ``owner`` None (the operator, or a
        shared library) deletes it outright. A book nobody owns (the sample guide, the command
        line's) is the operator's alone: a visitor gets ``BookError``, as for another's book."""
        if owner is None:
            self.delete_book(book_id)
            return True
        with self._ingest_lock(book_id):
            book = self._get(book_id, owner)
            owners = book.manifest.owners
            if not owners:
                raise BookError(Msg.of("book.not_yours", level="error", title=book.manifest.title))
            left = tuple(o for o in owners if o != owner)
            if left:
                self._catalog.set_owners(book_id, left)
                log.info("book %s: one owner left it, %d remain", book_id, len(left))
                return False
            self.delete_book(book_id)
            return True

    def owns(self, book_id: str, owner: str | None = None) -> bool:
        """Whether ``owner`` is among the book's owners (a book nobody owns is the operator's)."""
        book = self._catalog.books().get(book_id)
        return owner is not None and book is not None and owner in book.manifest.owners

    def _ingest_lock(self, book_id: str) -> threading.Lock:
        """One lock per book id: two uploads of one book index it once, a release waits for an ingest."""
        with self._locks_lock:
            return self._book_locks.setdefault(book_id, threading.Lock())

    def delete_book(self, book_id: str) -> None:
        """Remove a book, its keyword index and its vectors (for every owner)."""
        self._catalog.get(book_id)
        self._worker.cancel(book_id)
        self._catalog.remove(book_id)
        self._retrieval.forget(book_id)
        try:
            self._vectors.delete_book(book_id)
        except IndexError_:
            log.warning("vectors of %s could not be deleted now; they are ignored", book_id)
        log.info("deleted book %s", book_id)

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None,
                 *, chapters: tuple[int, int] | None = None, owner: str | None = None) -> list[Passage]:
        """Best passages for ``query``, best first. ``mode``: hybrid (default from settings), vector
        or keyword; hybrid uses keyword only for books whose vectors are not complete yet.
        ``chapters=(a, b)``: only chapters numbered a..b (inclusive). ``owner``: only the books that
        visitor sees (``book_id`` None: all of them)."""
        return self.search(query, k=k, book_id=book_id, mode=mode, chapters=chapters, owner=owner).passages

    def search(self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None,
               *, chapters: tuple[int, int] | None = None, queries: Sequence[str] = (),
               owner: str | None = None) -> RetrievalOutcome:
        """``retrieve`` with what the trace should know: notes (a fallback to keywords, a chapter the
        question names). ``queries``: more queries for the same question (e.g. rewritten by a model),
        fused with it. ``owner``: only the books that visitor sees."""
        query = (query or "").strip()
        if not query:
            return RetrievalOutcome(passages=[])
        books, skipped = self._searchable(self._visible(owner, book_id))
        mode = (mode or self.settings.retrieval_mode).lower()
        ready = {b.id for b in books if mode in ("hybrid", "vector") and self._worker.state(b).status == STATUS_READY}
        request = Request(query, k or self.settings.retrieval_k, mode, chapters, tuple(queries))
        found = self._retrieval.search(request, books, ready, self.config)
        return RetrievalOutcome(passages=found.passages, notes=[*skipped, *found.notes],
                                queries=[q for q in queries if q and q.strip() and q.strip() != query])

    @staticmethod
    def _searchable(books: list[StoredBook]) -> tuple[list[StoredBook], list[Msg]]:
        """The books whose chunks can be read (a damaged keyword index is rebuilt as they load), and
        a note for each that cannot: the book's own side is named, not the vector store's."""
        usable, notes = [], []
        for book in books:
            try:
                book.chunks()
            except IndexError_ as exc:
                log.warning("book %s is not searched: %s", book.id, exc)
                notes.append(Msg.of("index.book_skipped", level="warning", title=book.manifest.title, detail=exc.msg))
                continue
            usable.append(book)
        return usable, notes

    def chunks(self, book_id: str) -> list[Chunk]:
        """A book's chunks in reading order."""
        return self._catalog.get(book_id).chunks()

    def iter_chunks(self, book_id: str) -> Iterator[dict[str, Any]]:
        """Every stored chunk of a book as its ``chunks.jsonl`` row, in reading order (for tools)."""
        for chunk in self.chunks(book_id):
            yield chunk_row(chunk)

    def close(self) -> None:
        """Stop background embedding (it resumes later with ``resume_embedding``) and release clients."""
        self._closed = True
        self._worker.close()
        for client in (self._embedder, self._reranker):
            if isinstance(client, Closeable):
                client.close()
        self._vectors.close()

    def __enter__(self) -> BookIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_index(settings: Settings, embedder: Embedder | None = None, *, config: IndexConfig | None = None,
               vectors: VectorStore | None = None, reranker: Reranker | None = None) -> BookIndex:
    """A ``BookIndex`` over ``settings.data_dir``. Cheap: nothing is read or loaded until used (a
    reranker from ``RERANK_BASE_URL`` connects on its first question)."""
    return BookIndex(settings, embedder=embedder, config=config, vectors=vectors, reranker=reranker)
