"""Retrieval: keyword (BM25) and vector candidates, fused into ``Passage``s.

Searches are scoped to a set of books and optionally to a chapter range ``chapters=(a, b)``
(inclusive, chapter numbers as stored; chapters without a number are outside every range). Both
sides honour the scope: the keyword side masks the chunks, the vector side searches only the
pieces of the chapters in range.

What a search does (each step measured on the dev questions, ``bench/retrieval.py``):

1. every query (the question, plus rewritten ones when a model rewrote it) is ranked by keyword
   (BM25 over the chunk and its chapter title, scores made comparable across books) and, for books
   whose vectors are complete, by vector: exactly, with numpy over the book's stored vectors (a few
   thousand rows: milliseconds, and the same answer in every process, which Chroma's approximate
   HNSW search was not), each chunk scored by its best piece plus a share of its chapter title's
   similarity. Books still embedding use Chroma;
2. the rankings are fused by weighted RRF, with a guaranteed place for each retriever's best hit in
   the first 5 and its first three in the first 10 (``fusion.rrf_many``);
3. a question that names a chapter ("第二十七回", "chapter 27") gets that chapter's hits first;
4. with a reranker server configured (``RERANK_BASE_URL``, ``rag.index.rerank``), the first
   ``rerank_candidates`` hits are reordered by it (a named chapter's hits stay first); when it fails
   or runs out of time, the fused order stays and a note says why;
5. each hit becomes a passage with its neighbouring chunks of the same chapter (small-to-big), up to
   ``context_chars``; a hit already inside an earlier passage is not repeated.

When the vector side fails (a corrupt or unreadable Chroma store), hybrid search answers from
keywords alone and says so in its notes; vector mode raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from rag import deadline as turn_deadline
from rag.aliases import alias_queries
from rag.crosslingual import STOPWORDS, chinese_terms, glossary, script_of
from rag.errors import IndexError_, RagError
from rag.i18n import Msg, PerLang
from rag.index import fusion
from rag.index.catalog import StoredBook, keyword_text
from rag.index.chunking import Chunk
from rag.index.config import IndexConfig
from rag.index.embeddings import Embedder
from rag.index.query import named_chapters, word_forms
from rag.index.rerank import Reranker, RerankError
from rag.index.vectors import VectorHit, VectorStore, vector_search_failed
from rag.schemas import Passage

log = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "keyword")
PIECES_PER_CHUNK = 3  # approximate (Chroma) vector candidates are pieces; ask for this many per chunk wanted
TITLE_PIECE = -1  # the ``piece`` of a chapter title's vector

Key = tuple[str, int]  # (book id, chunk position)
Ranking = list[tuple[Key, float]]
Chapters = tuple[int, int] | None


def in_range(chunk: Chunk, chapters: Chapters) -> bool:
    if chapters is None:
        return True
    return chunk.chapter_num is not None and chapters[0] <= chunk.chapter_num <= chapters[1]


def chapter_positions(book: StoredBook, chapters: Chapters) -> list[int] | None:
    """The ``chapter_idx`` of the book's chapters in range (None: the whole book)."""
    if chapters is None:
        return None
    lo, hi = chapters
    return [i for i, c in enumerate(book.manifest.chapters) if c.num is not None and lo <= c.num <= hi]


def chapter_unit(books: list[StoredBook]) -> PerLang:
    """The word for a chapter that ``books`` share, in each language, for a note that names their
    chapters ("" where they differ or have none: the catalogue's neutral word)."""
    zh = {b.chapter_word()[0] for b in books}
    en = {b.chapter_word()[1] for b in books}
    return PerLang(zh=zh.pop() if len(zh) == 1 else "", en=en.pop() if len(en) == 1 else "")


def title_piece_id(book_id: str, chapter_idx: int) -> str:
    return f"{book_id}-title-{chapter_idx}"


def keyword_ranking(query: str, books: list[StoredBook], n: int, chapters: Chapters = None) -> Ranking:
    """Best chunks by BM25; with several books, each book's scores are divided by the query's ideal
    score in that book's index first (``KeywordIndex.ideal``), so they compare."""
    hits: Ranking = []
    normalize = len(books) > 1
    for book in books:
        allowed = None
        if chapters is not None:
            allowed = np.fromiter((in_range(c, chapters) for c in book.chunks()), dtype=bool)
        hits.extend(((book.id, pos), score) for pos, score in book.keyword().top(query, n, allowed, normalize))
    hits.sort(key=lambda h: -h[1])
    return hits[:n]


def vector_ranking(hits: list[VectorHit], books: list[StoredBook], n: int, chapters: Chapters = None) -> Ranking:
    """Chunks ranked by their best piece; vectors of unknown chunks (an older chunking) and chapter
    titles are skipped."""
    by_id = {b.id: b for b in books}
    best: dict[Key, float] = {}
    for hit in hits:
        book = by_id.get(hit.book_id)
        pos = book.position(hit.chunk_id) if book is not None and hit.chunk_id else None
        if pos is None or not in_range(book.chunks()[pos], chapters):  # type: ignore[union-attr]
            continue
        key = (hit.book_id, pos)
        if hit.score > best.get(key, -2.0):
            best[key] = hit.score
    return sorted(best.items(), key=lambda kv: -kv[1])[:n]


def fuse(vector: fusion.Ranked, keyword: fusion.Ranked, k: int, method: str) -> fusion.Fused:
    """One ranking from two; when one side found nothing, the other alone."""
    if not vector:
        return [(key, score, frozenset({"keyword"})) for key, score in keyword[:k]]
    if not keyword:
        return [(key, score, frozenset({"vector"})) for key, score in vector[:k]]
    return fusion.METHODS[method](vector, keyword, k)


@dataclass
class BookMatrix:
    """A book's stored vectors in memory, for exact search: piece rows and their chunk positions, and
    chapter-title rows by chapter position."""

    book: StoredBook
    pieces: np.ndarray  # [n, dim]
    owner: np.ndarray  # [n] chunk position of each piece row
    titles: np.ndarray  # [chapters, dim]; zero rows for chapters without a title vector
    has_titles: bool

    @classmethod
    def build(cls, book: StoredBook, ids: list[str], matrix: np.ndarray, metas: list[dict]) -> BookMatrix:
        chapters = len(book.manifest.chapters)
        dim = matrix.shape[1] if matrix.ndim == 2 and matrix.size else 0
        titles = np.zeros((chapters, dim), dtype=np.float32)
        rows: list[tuple[int, int, int]] = []  # (chunk position, piece, row)
        has_titles = False
        for row, (pid, meta) in enumerate(zip(ids, metas, strict=True)):
            meta = meta or {}
            if meta.get("piece") == TITLE_PIECE:
                idx = int(meta.get("chapter_idx", -1))
                if 0 <= idx < chapters and pid == title_piece_id(book.id, idx):
                    titles[idx] = matrix[row]
                    has_titles = True
                continue
            pos = book.position(str(meta.get("chunk_id", "")))
            if pos is not None:
                rows.append((pos, int(meta.get("piece", 0)), row))
        rows.sort()  # a fixed order whatever order the store returned: the same result in every process
        order = np.asarray([r for _, _, r in rows], dtype=np.int64)
        pieces = matrix[order] if len(order) else np.zeros((0, dim), dtype=np.float32)
        return cls(book, np.ascontiguousarray(pieces, dtype=np.float32),
                   np.asarray([p for p, _, _ in rows], dtype=np.int64), titles, has_titles)


@dataclass(frozen=True)
class Request:
    """One search: the question, ``queries`` more for it (e.g. rewritten ones), how many passages
    (``k``), the ``mode`` (``MODES``) and the chapter range (None: every chapter)."""

    query: str
    k: int
    mode: str
    chapters: Chapters = None
    queries: Sequence[str] = ()


@dataclass
class _Run:
    """One search under way: what each of its rankings shares, and what they gather (notes for the
    trace, each query's vector, embedded once)."""

    texts: list[str]
    books: list[StoredBook]
    ready: set[str]
    k: int
    mode: str
    config: IndexConfig
    notes: list[Msg] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Found:
    """What a search returns: passages best first, and notes for the trace (e.g. a fallback)."""

    passages: list[Passage]
    notes: list[Msg] = field(default_factory=list)


class Retrieval:
    def __init__(self, vectors: VectorStore, embedder: Callable[[], Embedder], reranker: Reranker | None = None) -> None:
        self._vectors = vectors
        self._embedder = embedder
        self._reranker = reranker
        self._matrices: dict[str, BookMatrix] = {}
        self._lock = threading.Lock()

    def forget(self, book_id: str) -> None:
        """Drop a book's cached vectors (deleted or re-embedded)."""
        with self._lock:
            self._matrices.pop(book_id, None)

    # ------------------------------------------------------------------------------ vectors

    def _matrix(self, book: StoredBook, config: IndexConfig) -> BookMatrix | None:
        """The book's vectors for exact search (loaded once), or None when exact search is off or the
        book is too large for it."""
        if not config.exact_search or book.manifest.pieces > config.exact_max_vectors:
            return None
        with self._lock:
            cached = self._matrices.get(book.id)
            if cached is not None and cached.book is book:
                return cached
        ids, matrix, metas = self._vectors.book_vectors(book.id)
        built = BookMatrix.build(book, ids, matrix, metas)
        with self._lock:
            self._matrices[book.id] = built
        return built

    def _exact(self, qv: np.ndarray, m: BookMatrix, n: int, chapters: Chapters, title_weight: float) -> Ranking:
        chunks = m.book.chunks()
        if not len(m.pieces):
            return []
        sims = m.pieces @ qv
        best = np.full(len(chunks), -np.inf, dtype=np.float32)
        np.maximum.at(best, m.owner, sims)
        if title_weight and m.has_titles:  # (best piece + w * title) / (1 + w): still a cosine-like 0..1
            chapter_of = np.fromiter((c.chapter_idx for c in chunks), dtype=np.int64, count=len(chunks))
            best = (best + np.float32(title_weight) * (m.titles @ qv)[chapter_of]) / np.float32(1 + title_weight)
        if chapters is not None:
            allowed = np.fromiter((in_range(c, chapters) for c in chunks), dtype=bool, count=len(chunks))
            best = np.where(allowed, best, -np.inf)
        n = min(n, int(np.isfinite(best).sum()))
        if n <= 0:
            return []
        idx = np.argpartition(-best, n - 1)[:n]
        idx = idx[np.lexsort((idx, -best[idx]))]  # best first, ties by position: deterministic
        return [((m.book.id, int(i)), float(best[i])) for i in idx]

    def _vector_ranking(self, qv: np.ndarray, books: list[StoredBook], ready: set[str], n: int,
                        chapters: Chapters, config: IndexConfig) -> Ranking:
        ranking: Ranking = []
        approximate: list[StoredBook] = []
        for book in books:
            m = self._matrix(book, config) if book.id in ready else None
            if m is None:
                approximate.append(book)
            else:
                ranking.extend(self._exact(qv, m, n, chapters, config.title_weight))
        if approximate:
            scope = {b.id: chapter_positions(b, chapters) for b in approximate}
            hits = self._vectors.query(qv, n * PIECES_PER_CHUNK, scope)
            ranking.extend(vector_ranking(hits, approximate, n, chapters))
        ranking.sort(key=lambda kv: -kv[1])
        return ranking[:n]

    # ------------------------------------------------------------------------------ search

    def search(self, request: Request, books: list[StoredBook], ready: set[str], config: IndexConfig) -> Found:
        """Best passages for the request's query (and its extra ``queries``) in ``books``, best first.
        ``hybrid`` uses vectors only for the books in ``ready`` (vectors complete), ``vector`` for all
        of them."""
        query, k, mode, chapters = request.query, request.k, request.mode, request.chapters
        if mode not in MODES:
            raise ValueError(f"unknown retrieval mode {mode!r} (hybrid, vector or keyword)")
        if chapters is not None and chapters[0] > chapters[1]:
            raise ValueError(f"empty chapter range {chapters!r}")
        notes: list[Msg] = []
        translated = self._translated(query, books, notes) if config.crosslingual else []
        texts = list(dict.fromkeys(q.strip() for q in [query, *request.queries, *translated] if q and q.strip()))
        run = _Run(texts, books, ready, k, mode, config, notes)
        fused = self._rank(run, chapters)
        named = self._named(query, books, chapters) if config.chapter_hint else None
        if named is not None:
            first = self._rank(run, named)
            if first:
                keys = {key for key, _, _ in first}
                fused = first + [hit for hit in fused if hit[0] not in keys]
                span = f"{named[0]}" + (f"-{named[1]}" if named[1] != named[0] else "")
                notes.append(Msg.of("index.named_chapter", chapters=span, unit=chapter_unit(books)))
        if self._reranker is not None and len(fused) > 1:
            fused = self._reranked(query, books, fused, max(config.rerank_candidates, k), named, notes)
        unique = {note.model_dump_json(): note for note in notes}  # one of each, in order
        return Found(self._passages(books, fused, k, config), list(unique.values()))

    def _reranked(self, query: str, books: list[StoredBook], fused: fusion.Fused, n: int, named: Chapters,
                  notes: list[Msg]) -> fusion.Fused:
        """The first ``n`` hits in the reranker's order (its scores become theirs), the rest after them;
        a named chapter's hits stay first. On any failure of the reranker: ``fused`` as it was."""
        assert self._reranker is not None
        by_id = {b.id: b for b in books}
        head, tail = fused[:n], fused[n:]
        chunks = [by_id[book_id].chunks()[pos] for book_id, pos in (cast(Key, key) for key, _, _ in head)]
        docs = [keyword_text(c) for c in chunks]  # chapter title, then the chunk's text
        current = turn_deadline.current()
        if current is not None and current.expired:
            notes.append(Msg.of("index.rerank_no_time", level="warning"))
            return fused
        started = time.perf_counter()
        try:
            scores = self._reranker.scores(query, docs, timeout=current.remaining() if current else None)
            if len(scores) != len(docs):
                raise RerankError(self._reranker.name, f"{len(scores)} scores for {len(docs)} documents.")
        except Exception as exc:  # noqa: BLE001 - a reranker never costs the question its passages
            detail = (exc.msg if isinstance(exc, RerankError)
                      else Msg.of("index.reranker_crashed", name=self._reranker.name, kind=type(exc).__name__))
            log.warning("reranking failed (%s); the fused order is kept", detail)
            notes.append(Msg.of("index.rerank_failed", level="warning", detail=detail))
            return fused
        # best score first (ties in fused order); the chapter the question names stays first
        order = sorted(range(len(head)), key=lambda i: (named is not None and not in_range(chunks[i], named),
                                                        -scores[i], i))
        ranked: fusion.Fused = [(head[i][0], float(scores[i]), head[i][2]) for i in order]
        notes.append(Msg.of("index.reranked", n=len(head), name=self._reranker.name,
                            ms=f"{(time.perf_counter() - started) * 1000:.0f}"))
        return ranked + tail

    @staticmethod
    def _translated(query: str, books: list[StoredBook], notes: list[Msg]) -> list[str]:
        """An English question on a Chinese book, in the book's words (``rag.crosslingual``)."""
        if script_of(query) != "latin":
            return []
        out = []
        for book in books:
            text = book.text()
            if text.script != "han":
                continue
            terms = chinese_terms(query, text, glossary())
            if terms:
                out.append(" ".join(terms))
                notes.append(Msg.of("index.crosslingual", terms=" ".join(terms)))
        return out

    @staticmethod
    def _named(query: str, books: list[StoredBook], chapters: Chapters) -> Chapters:
        """The chapter range a question names, when the books have those chapters and they are in scope."""
        nums = {c.num for b in books for c in b.manifest.chapters if c.num is not None}
        named = [n for n in named_chapters(query) if n in nums and (chapters is None or chapters[0] <= n <= chapters[1])]
        return (min(named), max(named)) if named and max(named) - min(named) <= 3 else None

    def _rank(self, run: _Run, chapters: Chapters) -> fusion.Fused:
        texts, books, ready, k, mode, config = run.texts, run.books, run.ready, run.k, run.mode, run.config
        notes, cache = run.notes, run.vectors
        n = max(config.candidates, k)
        searched = books if mode == "vector" else [b for b in books if b.id in ready and mode == "hybrid"]
        rankings: list[fusion.Ranking] = []
        for i, text in enumerate(texts):
            weight = 1.0 if i == 0 else config.rewrite_weight
            guaranteed = config.guaranteed and i == 0
            if searched:
                try:
                    if text not in cache:
                        cache[text] = self._embedder().embed_query(text)
                    vec = self._vector_ranking(cache[text], searched, ready, n, chapters, config)
                    rankings.append(fusion.Ranking("vector", weight * config.weight_vector, vec, guaranteed))
                except Exception as exc:  # noqa: BLE001 - a broken vector store must not stop keyword search
                    if mode == "vector":
                        if isinstance(exc, IndexError_):
                            raise
                        raise vector_search_failed(exc) from exc
                    log.warning("vector search failed, keyword results only: %s", exc)
                    detail = exc.msg if isinstance(exc, RagError) else Msg.of("text", value=str(exc))
                    notes.append(Msg.of("index.keyword_only", level="warning", detail=detail))
                    searched = []
            if mode != "vector":
                kw = keyword_ranking(text, books, n, chapters)
                rankings.append(fusion.Ranking("keyword", weight * config.weight_keyword, kw, guaranteed))
                if i == 0 and config.forms_weight > 0 and script_of(text) == "latin":
                    forms = word_forms(text, STOPWORDS)  # the book's "blushed" for the question's "blush"
                    latin = [b for b in books if b.text().script == "latin"]
                    if forms and latin:
                        rankings.append(fusion.Ranking("keyword", config.forms_weight * config.weight_keyword,
                                                       keyword_ranking(f"{text} {forms}", latin, n, chapters)))
                if i == 0 and config.alias_weight > 0:  # the question with the book's other names for its people
                    for book in books:
                        for variant in alias_queries(text, book.aliases()):
                            notes.append(Msg.of("index.alias_query", variant=variant))
                            rankings.append(fusion.Ranking("keyword", config.alias_weight * config.weight_keyword,
                                                           keyword_ranking(variant, [book], n, chapters)))
        live = [r for r in rankings if r.items]
        if len(live) <= 1:
            return [(key, score, frozenset({r.source})) for r in live for key, score in r.items]
        if config.fusion == "rrf" or len(texts) > 1:
            # each retriever's best hit among the first 1 + (number of retrievers): right after the fused best
            window = 1 + sum(1 for r in live if r.guaranteed)
            return fusion.rrf_many(live, n, min(k, window), fusion.RrfOptions(by=config.fused_by))
        vector = next((r.items for r in live if r.source == "vector"), [])
        keyword = next((r.items for r in live if r.source == "keyword"), [])
        return fuse(vector, keyword, n, config.fusion)

    # ------------------------------------------------------------------------------ passages

    def _passages(self, books: list[StoredBook], fused: fusion.Fused, k: int, config: IndexConfig) -> list[Passage]:
        by_id = {b.id: b for b in books}
        covered: set[Key] = set()
        out: list[Passage] = []
        for key, score, sources in fused:
            if len(out) >= k:
                break
            if key in covered:
                continue  # already inside an earlier passage
            book_id, pos = cast(Key, key)
            book = by_id[book_id]
            span = self._neighbours(book.chunks(), pos, config, {p for b, p in covered if b == book_id})
            covered.update((book_id, p) for p in span)
            out.append(self._passage(book, span, pos, score, sources))
        return out

    @staticmethod
    def _neighbours(chunks: list[Chunk], pos: int, config: IndexConfig, taken: set[int]) -> list[int]:
        """Positions of the hit's passage: the hit, then its neighbours in the same chapter (before,
        after, alternately, up to ``neighbours`` on each side) while the text stays within
        ``context_chars``; chunks already in another passage are not taken again."""
        span = [pos]
        hit = chunks[pos]
        length = len(hit.text)
        for step in range(1, config.neighbours + 1):
            for p in (pos - step, pos + step):
                if not 0 <= p < len(chunks) or p in taken or chunks[p].chapter_idx != hit.chapter_idx:
                    continue
                if p != min(span) - 1 and p != max(span) + 1:
                    continue  # only contiguous spans
                lo, hi = (chunks[p], chunks[min(span)]) if p < pos else (chunks[max(span)], chunks[p])
                added = len(chunks[p].text) - max(0, lo.end - hi.start)
                if length + added > config.context_chars:
                    continue
                span.append(p)
                length += added
        return sorted(span)

    @staticmethod
    def _passage(book: StoredBook, span: list[int], hit: int, score: float, sources: frozenset[str]) -> Passage:
        chunks = book.chunks()
        c = chunks[hit]
        text, end = "", 0
        for p in span:
            part = chunks[p]
            if not text:
                text, end = part.text, part.end
            elif part.start < end:  # overlapping chunks: add what is new
                text += part.text[end - part.start:]
                end = max(end, part.end)
            else:
                text += "\n" + part.text
                end = part.end
        first = chunks[span[0]]
        return Passage(
            id=c.id, text=text, book_id=book.id, book_title=book.manifest.title, chapter_num=c.chapter_num,
            chapter_title=c.chapter_title, chunk_index=c.chunk_index, start=first.start, end=end, score=float(score),
            source="hybrid" if len(sources) > 1 else next(iter(sources)),
        )
