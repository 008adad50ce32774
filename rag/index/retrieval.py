"""Retrieval: keyword (BM25) and vector candidates, fused into ``Passage``s.

Searches are scoped to a set of books and optionally to a chapter range ``chapters=(a, b)``
(inclusive, chapter numbers as stored; chapters without a number are outside every range). Both
sides honour the scope: the keyword side masks the chunks, the vector side asks Chroma only for the
pieces of the chapters in range (by ``chapter_idx``, which every stored vector has).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from rag.index import fusion
from rag.index.catalog import StoredBook
from rag.index.chunking import Chunk
from rag.index.embeddings import Embedder
from rag.index.vectors import VectorHit, VectorStore
from rag.schemas import Passage

MODES = ("hybrid", "vector", "keyword")
PIECES_PER_CHUNK = 3  # vector candidates are pieces; ask for this many per chunk wanted

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


def keyword_ranking(query: str, books: list[StoredBook], n: int, chapters: Chapters = None) -> Ranking:
    hits: Ranking = []
    for book in books:
        allowed = None
        if chapters is not None:
            allowed = np.fromiter((in_range(c, chapters) for c in book.chunks()), dtype=bool)
        hits.extend(((book.id, pos), score) for pos, score in book.keyword().top(query, n, allowed))
    hits.sort(key=lambda h: -h[1])
    return hits[:n]


def vector_ranking(hits: list[VectorHit], books: list[StoredBook], n: int, chapters: Chapters = None) -> Ranking:
    """Chunks ranked by their best piece; vectors of unknown chunks (an older chunking) are skipped."""
    by_id = {b.id: b for b in books}
    best: dict[Key, float] = {}
    for hit in hits:
        book = by_id.get(hit.book_id)
        pos = book.position(hit.chunk_id) if book is not None else None
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


class Retrieval:
    def __init__(self, vectors: VectorStore, embedder: Callable[[], Embedder]) -> None:
        self._vectors = vectors
        self._embedder = embedder

    def search(self, query: str, books: list[StoredBook], ready: set[str], *, k: int, mode: str,
               fusion_method: str, candidates: int, chapters: Chapters = None) -> list[Passage]:
        """Best passages for ``query`` in ``books``, best first. ``hybrid`` uses vectors only for
        the books in ``ready`` (vectors complete), ``vector`` for all of them."""
        if mode not in MODES:
            raise ValueError(f"unknown retrieval mode {mode!r} (hybrid, vector or keyword)")
        if chapters is not None and chapters[0] > chapters[1]:
            raise ValueError(f"empty chapter range {chapters!r}")
        n = max(candidates, k)
        keyword: Ranking = keyword_ranking(query, books, n, chapters) if mode != "vector" else []
        vector: Ranking = []
        searched = books if mode == "vector" else [b for b in books if b.id in ready and mode == "hybrid"]
        if searched:
            scope = {b.id: chapter_positions(b, chapters) for b in searched}
            hits = self._vectors.query(self._embedder().embed_query(query), n * PIECES_PER_CHUNK, scope)
            vector = vector_ranking(hits, searched, n, chapters)
        return [self._passage(books, key, score, sources) for key, score, sources in fuse(vector, keyword, k, fusion_method)]

    @staticmethod
    def _passage(books: list[StoredBook], key: Hashable, score: float, sources: frozenset[str]) -> Passage:
        book_id, pos = key  # type: ignore[misc]
        book = next(b for b in books if b.id == book_id)
        c = book.chunks()[pos]
        return Passage(
            id=c.id, text=c.text, book_id=book_id, book_title=book.manifest.title, chapter_num=c.chapter_num,
            chapter_title=c.chapter_title, chunk_index=c.chunk_index, start=c.start, end=c.end, score=float(score),
            source="hybrid" if len(sources) > 1 else next(iter(sources)),
        )
