"""Retrieval on its own: fusion of fixed rankings, and the chapter-range filter on the keyword side
and on the vector side (an in-memory store, then real Chroma on disk)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import make_settings
from index_fakes import BigramEmbedder, MemoryVectors, write_book

from rag.index import BookIndex, IndexConfig
from rag.index.retrieval import fuse, in_range
from rag.index.vectors import chroma_where


def test_rrf_fusion_of_fixed_rankings() -> None:
    vector = [(("a", 0), 0.9), (("a", 1), 0.8), (("b", 0), 0.1)]
    keyword = [(("b", 0), 7.0), (("a", 0), 3.0), (("b", 5), 1.0)]
    fused = fuse(vector, keyword, 3, "rrf")
    # reciprocal ranks: a0 = 1/61 + 1/62, b0 = 1/63 + 1/61, a1 = 1/62, b5 = 1/63
    assert [key for key, _, _ in fused] == [("a", 0), ("b", 0), ("a", 1)]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62) and fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert [sorted(sources) for _, _, sources in fused] == [["keyword", "vector"], ["keyword", "vector"], ["vector"]]
    union = fuse(vector, keyword, 4, "union")  # interleaved, vector first, duplicates skipped
    assert [key for key, _, _ in union] == [("a", 0), ("b", 0), ("a", 1), ("b", 5)]


def test_one_empty_side_gives_the_other_alone() -> None:
    keyword = [(("a", 2), 4.0), (("a", 1), 2.0), (("a", 0), 1.0)]
    assert fuse([], keyword, 2, "rrf") == [(("a", 2), 4.0, frozenset({"keyword"})), (("a", 1), 2.0, frozenset({"keyword"}))]
    assert fuse([(("a", 0), 0.5)], [], 2, "weighted") == [(("a", 0), 0.5, frozenset({"vector"}))]
    assert fuse([], [], 5, "rrf") == []


@pytest.fixture()
def index(tmp_path: Path):
    vectors = MemoryVectors()
    # one chunk per passage and the approximate (Chroma-like) path, whose scopes this file checks
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=vectors,
                    config=IndexConfig(neighbours=0, exact_search=False))
    idx.ingest(write_book(tmp_path / "book.txt", chapters=5, preface=True), background=False)
    yield idx, vectors
    idx.close()


def test_chapter_range_on_the_keyword_side(index) -> None:
    idx, _ = index
    everywhere = {p.chapter_num for p in idx.retrieve("长安", k=30, mode="keyword")}
    assert everywhere == {0, 1, 2, 3, 4, 5}  # the preface is chapter 0
    scoped = idx.retrieve("长安", k=30, mode="keyword", chapters=(2, 3))
    assert scoped and {p.chapter_num for p in scoped} == {2, 3}
    assert len(scoped) == sum(1 for c in idx.chunks(scoped[0].book_id) if c.chapter_num in (2, 3))
    assert idx.retrieve("青龙", k=5, mode="keyword", chapters=(2, 3)) == []  # 青龙 is only in chapter 1
    assert {p.chapter_num for p in idx.retrieve("长安", k=30, mode="keyword", chapters=(0, 0))} == {0}
    with pytest.raises(ValueError, match="empty chapter range"):
        idx.retrieve("长安", chapters=(3, 2))


def test_chapter_range_on_the_vector_side_asks_only_for_those_chapters(index) -> None:
    idx, vectors = index
    book = idx.books()[0]
    unscoped = idx.retrieve("青龙第1日到了西岭", k=10, mode="vector")
    assert unscoped[0].chapter_num == 1 and vectors.scopes[-1] == {book.id: None}
    scoped = idx.retrieve("青龙第1日到了西岭", k=10, mode="vector", chapters=(2, 3))
    assert scoped and {p.chapter_num for p in scoped} <= {2, 3}
    assert vectors.scopes[-1] == {book.id: [2, 3]}  # chapter numbers became chapter positions
    hybrid = idx.retrieve("白虎 长安", k=8, chapters=(4, 5))
    assert {p.chapter_num for p in hybrid} <= {4, 5} and "hybrid" in {p.source for p in hybrid}
    assert vectors.scopes[-1] == {book.id: [4, 5]}


def test_chapter_range_with_real_chroma_over_two_books(tmp_path: Path) -> None:
    with BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder()) as idx:
        three = idx.ingest(write_book(tmp_path / "three.txt", chapters=3), background=False)
        five = idx.ingest(write_book(tmp_path / "five.txt", chapters=5, preface=True), background=False)
        query = "青龙第1日到了西岭，白虎第2日到了北原"
        unscoped = idx.retrieve(query, k=12, mode="vector")
        assert {p.chapter_num for p in unscoped} & {1, 2}
        scoped = idx.retrieve(query, k=12, mode="vector", chapters=(3, 4))
        assert scoped and {p.chapter_num for p in scoped} <= {3, 4}
        assert {p.book_id for p in scoped} == {three.id, five.id}
        only_five = idx.retrieve(query, k=12, mode="vector", book_id=five.id, chapters=(4, 5))
        assert only_five and {(p.book_id, p.chapter_num) for p in only_five} <= {(five.id, 4), (five.id, 5)}
        assert idx.retrieve(query, k=5, mode="vector", book_id=three.id, chapters=(4, 5)) == []  # no such chapters


def test_chroma_where_clauses() -> None:
    assert chroma_where({"a": None}) == {"book_id": "a"}
    assert chroma_where({"a": None, "b": None}) == {"book_id": {"$in": ["a", "b"]}}
    assert chroma_where({"a": [3, 2]}) == {"$and": [{"book_id": "a"}, {"chapter_idx": {"$in": [2, 3]}}]}
    assert chroma_where({"a": None, "b": [1]}) == {
        "$or": [{"book_id": "a"}, {"$and": [{"book_id": "b"}, {"chapter_idx": {"$in": [1]}}]}]
    }
    assert chroma_where({"a": []}) is None  # nothing of the book is in range


def test_in_range_excludes_unnumbered_chapters(index) -> None:
    idx, _ = index
    chunk = idx.chunks(idx.books()[0].id)[0]
    assert in_range(chunk, None) and in_range(chunk, (0, 1)) and not in_range(chunk, (1, 2))
    unnumbered = replace(chunk, chapter_num=None)
    assert in_range(unnumbered, None) and not in_range(unnumbered, (0, 100))
