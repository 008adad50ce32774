"""Issue 11 in the index: weighted RRF with a guaranteed slot, exact vector search, chapter titles in
both indexes, neighbour passages, the chapter a question names, comparable keyword scores across
books, and the fallback to keywords when the vector store is broken (in memory and real Chroma)."""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import make_settings
from index_fakes import CHAPTERS, BigramEmbedder, MemoryVectors, chapter_text, write_book

from rag.index import BookIndex, IndexConfig
from rag.index.catalog import KEYWORD_VERSION
from rag.index.chapters import drop_trailers
from rag.index.fusion import Ranking, RrfOptions, rrf_many
from rag.index.loaders import load_book
from rag.index.query import named_chapters
from rag.index.retrieval import TITLE_PIECE, title_piece_id

FULL = IndexConfig(candidates=50, guaranteed=True, exact_search=True, title_weight=0.3, neighbours=1,
                   chapter_hint=True)


def long_book(path: Path, chapters: int, sentences: int = 60) -> Path:
    """Like ``write_book``, with chapters long enough for several chunks each (~1,800 characters)."""
    parts = ["《四象长记》"] + [f"{heading}\n{chapter_text(n, name, sentences)}"
                             for n, (heading, name) in enumerate(CHAPTERS[:chapters], start=1)]
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


def make(tmp_path: Path, config: IndexConfig = FULL, chapters: int = 5, long: bool = False,
         **kwargs) -> tuple[BookIndex, MemoryVectors]:
    vectors = MemoryVectors()
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=vectors,
                    config=config)
    book = long_book(tmp_path / "book.txt", chapters) if long else write_book(tmp_path / "book.txt", chapters, **kwargs)
    idx.ingest(book, background=False)
    return idx, vectors


# ---------------------------------------------------------------------------------------- fusion
def test_weighted_rrf_and_the_guaranteed_slot() -> None:
    vector = [(("a", i), 1.0 - i / 10) for i in range(6)]
    keyword = [(("k", 0), 9.0)] + [(("a", i), 5.0 - i) for i in range(1, 6)]
    plain = rrf_many([Ranking("vector", 1.0, vector), Ranking("keyword", 1.0, keyword)], 3,
                     options=RrfOptions(rrf_k=60, per_side=0))
    assert ("k", 0) not in [key for key, _, _ in plain]  # found by keyword alone, at rank 1: pushed out
    kept = rrf_many([Ranking("vector", 1.0, vector, True), Ranking("keyword", 1.0, keyword, True)], 3,
                    options=RrfOptions(per_side=0))
    keys = [key for key, _, _ in kept]
    assert ("k", 0) in keys and ("a", 0) in keys and len(keys) == 3
    assert dict((key, src) for key, _, src in kept)[("k", 0)] == frozenset({"keyword"})
    deep = [key for key, _, _ in rrf_many([Ranking("vector", 1.0, vector, True), Ranking("keyword", 1.0, keyword, True)],
                                          8, 3, RrfOptions(per_side=0))]
    assert set(deep[:3]) == set(keys) and len(deep) == 7 and len(set(deep)) == 7  # guaranteed within k, n kept
    even = [key for key, _, _ in rrf_many([Ranking("vector", 1.0, vector), Ranking("keyword", 1.0, keyword)], 7,
                                          options=RrfOptions(rrf_k=60, by_side=False))]
    heavy = rrf_many([Ranking("vector", 1.0, vector), Ranking("keyword", 3.0, keyword)], 7,
                     options=RrfOptions(rrf_k=60, by_side=False))
    order = [key for key, _, _ in heavy]
    assert even.index(("a", 0)) < even.index(("k", 0)) and order.index(("k", 0)) < order.index(("a", 0))
    assert dict((key, score) for key, score, _ in heavy)[("k", 0)] == pytest.approx(3.0 / 61)
    # ties keep first-seen order, whatever the run
    tied = rrf_many([Ranking("vector", 1.0, [(("x", 1), 0.5)]), Ranking("keyword", 1.0, [(("x", 2), 0.5)])], 2)
    assert [key for key, _, _ in tied] == [("x", 1), ("x", 2)]


# -- issue 24: a strong hit of one retriever alone stays near the top
def test_each_retrievers_best_hits_over_all_its_rankings_stay_in_the_first_five() -> None:
    both = [("b", i) for i in range(12)]  # found by every ranking at middling ranks
    vector = [(key, 0.9 - i / 100) for i, key in enumerate(both)]
    translated_vector = [(key, 0.8 - i / 100) for i, key in enumerate(both)]
    alias = [(both[0], 3.0), (("other", 0), 2.0)]  # the question with the book's other names: little
    keyword = [(("b", 0), 9.0), (("solo", 0), 8.5)] + [(key, 5.0 - i / 10) for i, key in enumerate(both[1:])]
    rankings = [Ranking("vector", 1.0, vector, True), Ranking("keyword", 1.0, keyword, True),
                Ranking("keyword", 1.0, alias), Ranking("vector", 1.0, translated_vector)]
    old = [key for key, _, _ in rrf_many(rankings, 20, 3, options=RrfOptions(rrf_k=60, per_side=0, by_side=False))]
    assert old.index(("solo", 0)) >= 5  # keyword rank 2, alone: below every hit the other rankings share
    for by_side in (False, True):
        options = RrfOptions(rrf_k=60, per_side=2, by_side=by_side)
        new = [key for key, _, _ in rrf_many(rankings, 20, 3, options)]
        assert ("solo", 0) in new[:5] and new[0] == ("b", 0) and len(new) == len(set(new)) == 14
    # an English question: its own keyword ranking finds nothing, the translated query's does (not guaranteed)
    english = [Ranking("vector", 1.0, vector, True), Ranking("keyword", 1.0, [], True),
               Ranking("keyword", 1.0, [(("solo", 0), 7.0)]), Ranking("vector", 1.0, translated_vector)]
    assert ("solo", 0) in [key for key, _, _ in rrf_many(english, 20, 2)][:5]  # the defaults: one per retriever
    plain_rrf = RrfOptions(rrf_k=60, per_side=0, by_side=False)
    assert ("solo", 0) not in [key for key, _, _ in rrf_many(english, 20, 2, plain_rrf)][:5]
    # by side: the hits one retriever found in several rankings get one vote of that retriever, not several
    sided = rrf_many(rankings, 20, options=RrfOptions(rrf_k=60, per_side=0, by_side=True))
    assert dict((key, score) for key, score, _ in sided)[("b", 0)] == pytest.approx(2 / 61)


# ---------------------------------------------------------------------------------- exact vectors
def test_exact_vector_search_is_brute_force_and_loads_the_book_once(tmp_path: Path) -> None:
    idx, vectors = make(tmp_path, replace(FULL, title_weight=0.0, neighbours=0))
    book = idx.books()[0]
    query = "朱雀第5日到了西岭，煮茶待客"
    q = idx.embedder.embed_query(query)
    best: dict[str, float] = {}
    for vec, meta in vectors.items.values():
        if meta["piece"] != TITLE_PIECE:
            best[meta["chunk_id"]] = max(best.get(meta["chunk_id"], -2.0), float(vec @ q))
    expected = sorted(best, key=lambda cid: -best[cid])[:5]
    got = idx.retrieve(query, k=5, mode="vector")
    assert [p.id for p in got] == expected and got[0].chapter_num == 3
    assert [p.score for p in got] == pytest.approx(sorted(best.values(), reverse=True)[:5], abs=1e-6)
    idx.retrieve("青龙", k=5, mode="vector")
    assert vectors.loads == 1 and vectors.scopes == []  # no approximate query at all
    scoped = idx.retrieve(query, k=5, mode="vector", chapters=(4, 5))
    assert scoped and {p.chapter_num for p in scoped} <= {4, 5}
    idx.close()
    # another index over the same store gives the same answer (the order does not depend on the store's)
    again = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), config=idx.config,
                      vectors=MemoryVectors())
    again._vectors.items = dict(reversed(list(vectors.items.items())))  # noqa: SLF001
    assert [p.id for p in again.retrieve(query, k=5, mode="vector", book_id=book.id)] == expected
    again.close()


def test_exact_search_with_real_chroma_matches_and_books_still_embedding_use_chroma(tmp_path: Path) -> None:
    with BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(),
                   config=replace(FULL, neighbours=0)) as idx:
        info = idx.ingest(write_book(tmp_path / "book.txt", chapters=4), background=False)
        ids = idx._chroma().get(where={"book_id": info.id}, include=[])["ids"]  # noqa: SLF001
        assert {title_piece_id(info.id, i) for i in range(4)} <= set(ids)  # one title vector per chapter
        exact = idx.retrieve("白虎第3日到了北原", k=4, mode="vector")
        assert exact[0].chapter_num == 2
        approx = replace(idx.config, exact_search=False)
        idx.config = approx
        assert idx.retrieve("白虎第3日到了北原", k=1, mode="vector")[0].id == exact[0].id


# ------------------------------------------------------------------------------------ chapter titles
def test_chapter_titles_are_searchable_on_both_sides_and_trailers_are_dropped(tmp_path: Path) -> None:
    book = tmp_path / "titled.txt"
    text = book.write_text
    text("《题记》\n\n第一回 石猴出世\n山上有块仙石，迸出一个石卵。\n(本章完)\n\n"
         "第二回 龙宫借宝\n他到海里讨了一根铁棒。\n（本章完）\n\n第三回 蟠桃盛会\n王母设宴请众仙。\n\n(本章完)",
         encoding="utf-8")
    loaded = load_book(book)
    assert [c.text for c in loaded.chapters] == ["山上有块仙石，迸出一个石卵。", "他到海里讨了一根铁棒。", "王母设宴请众仙。"]
    assert drop_trailers("正文\n完结篇") == "正文\n完结篇"  # a line that only starts like a trailer stays
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                    config=replace(FULL, neighbours=0))
    idx.ingest(book, background=False)
    hits = idx.retrieve("龙宫借宝", k=1, mode="keyword")  # the words are only in the title
    assert hits and hits[0].chapter_num == 2 and "龙宫" not in hits[0].text
    vec = idx.retrieve("龙宫借宝", k=1, mode="vector")
    assert vec[0].chapter_num == 2
    idx.close()


def test_an_older_keyword_index_is_rebuilt_with_titles(tmp_path: Path) -> None:
    idx, _ = make(tmp_path, chapters=3)
    info = idx.books()[0]
    manifest = tmp_path / "data" / "keyword" / info.id / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    assert data["keyword"] == KEYWORD_VERSION
    data["keyword"] = 1  # written by the previous version: chunk text only
    manifest.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    idx.close()
    idx2, _ = make(tmp_path, chapters=3)  # re-ingest: the same book, its keyword index rewritten
    assert json.loads(manifest.read_text(encoding="utf-8"))["keyword"] == KEYWORD_VERSION
    title_only = CHAPTERS[1][0].split()[1]  # "白虎下山"
    assert idx2.retrieve(title_only, k=1, mode="keyword")[0].chapter_num == 2
    idx2.close()


# ---------------------------------------------------------------------------------- neighbours
def test_a_hit_brings_its_neighbours_within_the_budget(tmp_path: Path) -> None:
    idx, _ = make(tmp_path, replace(FULL, neighbours=0), chapters=3, long=True)
    book_id = idx.books()[0].id
    chunks = idx.chunks(book_id)
    single = idx.retrieve("白虎第30日", k=3, mode="keyword")
    hit = single[0]
    idx.config = replace(FULL, neighbours=1, context_chars=10_000)
    merged = idx.retrieve("白虎第30日", k=3, mode="keyword")
    first = merged[0]
    pos = hit.chunk_index
    assert first.id == hit.id and first.chunk_index == pos  # the hit names the passage
    before, after = chunks[pos - 1], chunks[pos + 1]
    assert before.chapter_idx == after.chapter_idx == chunks[pos].chapter_idx
    assert first.start == before.start and first.end == after.end
    assert before.text in first.text and chunks[pos].text in first.text and after.text in first.text
    assert len(first.text) < len(before.text) + len(chunks[pos].text) + len(after.text)  # overlaps once
    covered = [set(range(p.chunk_index - 1, p.chunk_index + 2)) for p in merged]
    assert len(merged) == 3 and not (covered[0] & {merged[1].chunk_index, merged[2].chunk_index})
    idx.config = replace(FULL, neighbours=1, context_chars=len(hit.text) + 5)
    assert idx.retrieve("白虎第30日", k=1, mode="keyword")[0].text == hit.text  # no room for a neighbour
    idx.close()


def test_neighbours_never_cross_a_chapter(tmp_path: Path) -> None:
    idx, _ = make(tmp_path, replace(FULL, neighbours=3, context_chars=100_000), chapters=2, long=True)
    chunks = idx.chunks(idx.books()[0].id)
    for p in idx.retrieve("长安", k=10, mode="keyword"):
        assert {c.chapter_num for c in chunks if p.start <= c.start and c.end <= p.end and
                c.chapter_num == p.chapter_num} == {p.chapter_num}
        assert all(c.chapter_idx == chunks[p.chunk_index].chapter_idx for c in chunks if c.text in p.text and
                   len(c.text) > 40)
    idx.close()


# ------------------------------------------------------------------------------ named chapters
def test_named_chapters_are_parsed() -> None:
    assert named_chapters("第二十七回里白骨精变了几次？") == [27]
    assert named_chapters("第27回和第 28 章") == [27, 28]
    assert named_chapters("What happens in Chapter 12?") == [12]
    assert named_chapters("孙悟空三打白骨精发生在原著第几回？") == []


def test_a_question_naming_a_chapter_searches_it_first(tmp_path: Path) -> None:
    idx, _ = make(tmp_path, replace(FULL, neighbours=0), chapters=5, long=True)
    assert sum(1 for c in idx.chunks(idx.books()[0].id) if c.chapter_num == 4) >= 3
    plain = idx.search("青龙到了东海", k=3, mode="keyword")
    named = idx.search("第四回里青龙到了东海", k=3, mode="keyword")
    assert [p.chapter_num for p in plain.passages] == [1, 1, 1]
    assert [p.chapter_num for p in named.passages] == [4, 4, 4]
    assert any("chapter 4" in note for note in map(str, named.notes)) and not plain.notes
    outside = idx.search("第四回里青龙到了东海", k=3, mode="keyword", chapters=(1, 2))  # a scope wins
    assert {p.chapter_num for p in outside.passages} <= {1, 2}
    idx.config = replace(idx.config, chapter_hint=False)
    # without the hint only the title's 第四回 points there (keyword side), and 青龙 (chapter 1) wins places
    assert [p.chapter_num for p in idx.search("第四回里青龙到了东海", k=3, mode="keyword").passages] != [4, 4, 4]
    idx.close()


# ----------------------------------------------------------------------- several books' keywords
def test_keyword_scores_of_several_books_are_comparable(tmp_path: Path) -> None:
    vectors = MemoryVectors()
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=vectors, config=FULL)
    small = tmp_path / "small.txt"
    small.write_text("《短书》\n第一回 开篇\n" + "玄武守城。\n" * 3 + "朱雀南飞到了东海。", encoding="utf-8")
    a = idx.ingest(small, background=False)
    b = idx.ingest(write_book(tmp_path / "big.txt", chapters=5), background=False)
    hits = idx.retrieve("玄武", k=20, mode="keyword")
    assert {p.book_id for p in hits} == {a.id, b.id}
    assert all(0 < p.score <= 1.0 for p in hits)  # each book's scores divided by its ideal score
    alone = idx.retrieve("玄武", k=20, mode="keyword", book_id=b.id)
    assert alone[0].score > 1.0  # one book: raw BM25, as before
    idx.close()


# ---------------------------------------------------------------------------- keyword fallback
def test_hybrid_falls_back_to_keywords_when_the_vector_store_fails(tmp_path: Path) -> None:
    idx, vectors = make(tmp_path, chapters=3)
    vectors.broken = True
    outcome = idx.search("白虎第3日到了北原", k=3)
    assert outcome.passages and {p.source for p in outcome.passages} == {"keyword"}
    assert any("vector search failed" in note and "keyword results only" in note for note in map(str, outcome.notes))
    with pytest.raises(Exception, match="vector search failed"):
        idx.search("白虎", k=3, mode="vector")
    idx.close()


def test_fallback_with_a_corrupt_chroma_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    book = write_book(tmp_path / "book.txt", chapters=3)
    with BookIndex(make_settings(data_dir=data), embedder=BigramEmbedder(), config=FULL) as idx:
        idx.ingest(book, background=False)
    sqlite = data / "chroma" / "chroma.sqlite3"
    assert sqlite.is_file()
    sqlite.write_bytes(b"this is not a database" * 100)
    for path in (data / "chroma").rglob("*"):
        if path.is_file() and path != sqlite:
            path.write_bytes(b"\0" * 16)
    with BookIndex(make_settings(data_dir=data), embedder=BigramEmbedder(), config=FULL) as idx:
        outcome = idx.search("白虎第3日到了北原", k=3)
        assert outcome.passages and outcome.passages[0].chapter_num == 2
        assert {p.source for p in outcome.passages} == {"keyword"}
        assert any("vector search failed" in note for note in map(str, outcome.notes))
    assert stat.S_ISREG(sqlite.stat().st_mode)


def test_cached_vectors_follow_a_deleted_book(tmp_path: Path) -> None:
    idx, vectors = make(tmp_path, chapters=2)
    first = idx.books()[0]
    assert idx.retrieve("青龙", k=2, mode="vector")
    idx.delete_book(first.id)
    assert idx.books() == [] and idx.retrieve("青龙", k=2, mode="vector") == []
    q = np.zeros(64, dtype=np.float32)
    assert vectors.query(q, 5, {first.id: None}) == []
    idx.close()


# ---------------------------------------------------------------------------------------- aliases
INTRODUCTIONS = ("此人乃琅琊阳都人，覆姓诸葛，名亮，字孔明。又有一人，姓关名羽，字长生，后改云长，河东解良人也。"
                 "还有一人，姓张，名飞，字翼德。另一人姓马，名良，字季常。又一人姓马，名谡，字季常。")


def test_aliases_come_from_the_books_own_introductions() -> None:
    from rag.aliases import alias_queries, build_aliases

    aliases = build_aliases([INTRODUCTIONS])
    assert aliases["诸葛亮"][0] == "孔明" and "诸葛孔明" in aliases["诸葛亮"] and aliases["孔明"][0] == "诸葛亮"
    assert aliases["关羽"][:2] == ("云长", "长生") and "关云长" in aliases["关羽"]
    assert "季常" not in aliases  # two people share it: left out
    assert alias_queries("诸葛亮和张飞说了什么？", aliases) == ["孔明和翼德说了什么？", "诸葛孔明和张翼德说了什么？"]
    assert alias_queries("曹操说了什么？", aliases) == []
    assert build_aliases(["姓孙，名悟空。"]) == {}  # no courtesy name, nothing to add


def test_a_question_with_a_full_name_finds_the_passage_that_uses_the_courtesy_name(tmp_path: Path) -> None:
    book = tmp_path / "sanguo.txt"
    filler = "".join(f"众将在营中议事第{i}日，各自散去。" for i in range(40))
    book.write_text("《小三国》\n\n第一回 隆中\n" + INTRODUCTIONS + "\n" + filler + "\n\n第二回 借风\n" + filler +
                    "\n孔明于南屏山上筑七星坛，披发仗剑，祭得东南风起。\n" + filler, encoding="utf-8")
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                    config=replace(FULL, neighbours=0))
    idx.ingest(book, background=False)
    found = idx.search("诸葛亮登台作法", k=3, mode="keyword")  # shares no character with that passage
    assert any("七星坛" in p.text for p in found.passages)
    assert any("also searched as: 孔明登台作法" in note for note in map(str, found.notes))
    idx.config = replace(idx.config, alias_weight=0.0)
    without = idx.search("诸葛亮登台作法", k=3, mode="keyword")
    assert not any("七星坛" in p.text for p in without.passages) and not without.notes
    idx.close()


@pytest.mark.parametrize("by", ["rank", "score", "blend"])
def test_no_retrievers_top_three_falls_below_rank_ten(by: str) -> None:
    import random

    rng = random.Random(7)
    for trial in range(300):
        shared = [("s", i) for i in range(40)]  # hits several rankings find at middling ranks
        rankings = []
        for r in range(rng.randint(2, 5)):  # the question's, a translated query's, other names'...
            source = "vector" if r % 2 == 0 else "keyword"
            own = [(source[0] + str(r), i) for i in range(rng.randint(0, 6))]  # found by this ranking alone
            keys = rng.sample(shared, rng.randint(5, 30)) + own
            rng.shuffle(keys)
            top = rng.uniform(1, 20)
            items = [(key, top * (1 - i / (len(keys) + 1)) ** rng.uniform(0.5, 4)) for i, key in enumerate(keys)]
            rankings.append(Ranking(source, rng.choice([0.5, 1.0, 2.0]), items, guaranteed=r < 2))
        fused = [key for key, _, _ in rrf_many(rankings, 50, 2, options=RrfOptions(by=by))]
        assert len(fused) == len(set(fused))
        for ranking in rankings[:2]:  # the question's own: each retriever's first three in the first ten
            for key, _ in ranking.items[:3]:
                assert key in fused[:10], (trial, by, key, fused.index(key) if key in fused else None)


def test_a_floor_keeps_each_hit_within_twice_its_best_rank_on_one_side() -> None:
    shared = [("s", i) for i in range(20)]
    vector = [(key, 1.0 - i / 40) for i, key in enumerate(shared)]
    keyword = [(key, 9.0 - i / 4) for i, key in enumerate(shared[:1] + [("solo", 0)] + shared[1:])]
    rankings = [Ranking("vector", 1.0, vector, True), Ranking("keyword", 1.0, keyword, True)]
    plain = [key for key, _, _ in rrf_many(rankings, 30, 2, options=RrfOptions(per_side=0, deep=(0, 0)))]
    floored = [key for key, _, _ in rrf_many(rankings, 30, 2,
                                             options=RrfOptions(per_side=0, deep=(0, 0), floor=(2.0, 0.0)))]
    assert plain.index(("solo", 0)) + 1 > 4  # keyword rank 2, alone: below the hits both sides share
    assert sorted(floored) == sorted(plain) and floored[0] == plain[0]
    for ranking in rankings:
        for rank, (key, _) in enumerate(ranking.items, start=1):
            assert floored.index(key) + 1 <= 2 * rank


def test_word_forms_of_an_english_question() -> None:
    from rag.index.query import word_forms

    forms = word_forms("Why did Elizabeth blush when meeting him?", frozenset({"when", "why", "did", "him"})).split()
    assert {"blushed", "blushes", "meet", "meets"} <= set(forms)
    assert not any(f.startswith("elizabeth") for f in forms)  # names do not inflect
    assert word_forms("Who was it?", frozenset()) == ""


def test_an_english_question_finds_the_books_form_of_its_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    filler = "The weather held fine and the lane was quiet as the carriage went by the old church. "
    chapters = [f"Chapter {n}\n\n" + filler * 6 + ("She blushed deeply over the perverseness of the meeting. "
                                                  if n == 3 else "") + filler * 4 for n in range(1, 7)]
    book = tmp_path / "novel.txt"
    book.write_text("\n\n".join(chapters), encoding="utf-8")
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                    config=FULL)
    info = idx.ingest(book, background=False)
    question = "What made her blush so deep?"  # the book: "blushed deeply"
    found = idx.search(question, k=3, book_id=info.id, mode="keyword").passages
    assert "blushed" in found[0].text
    off = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                    config=replace(FULL, forms_weight=0.0))
    # without the forms query, the keyword index's stems alone find it ("blush" is "blushed"'s stem)
    assert "blushed" in off.search(question, k=3, book_id=info.id, mode="keyword").passages[0].text
    from rag.index.keyword import KeywordIndex

    monkeypatch.setattr(KeywordIndex, "stems", False)  # neither: the question's word is not the book's
    assert not any("blushed" in p.text for p in off.search(question, k=3, book_id=info.id, mode="keyword").passages)
    idx.close()
    off.close()
