"""Chunking: sentence ends, size, overlap, chapter boundaries, pieces; keyword tokens; fusion."""

from __future__ import annotations

import pytest
from fixtures_index.books import guide_chapters, guide_text
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.index import fusion
from rag.index.chunking import chunk_chapters, chunk_spans, sentence_spans, split_pieces
from rag.index.keyword import KeywordIndex, tokenize

ENDS = tuple("。！？；…!?;\n\"'”’」』）)]】.")


def test_sentence_spans_cover_text_and_end_on_punctuation() -> None:
    text = "悟空道：“师父，我去化斋。”三藏道：“快去！”He left. Then? 完"
    spans = list(sentence_spans(text))
    assert "".join(text[a:b] for a, b in spans) == text
    assert [text[a:b] for a, b in spans][:2] == ["悟空道：“师父，我去化斋。”", "三藏道：“快去！”"]


def test_chunks_of_a_real_text_respect_size_overlap_and_sentence_ends() -> None:
    text = guide_text()  # the whole guide, ~7,000 characters of paragraphs
    spans = chunk_spans(text, size=500, overlap=80)
    assert len(spans) > 10
    for (a, b), (c, _) in zip(spans, spans[1:], strict=False):
        assert b - a <= 500
        assert text[b - 1] in ENDS or text[b] == "\n"  # chunks end at a sentence or paragraph end
        assert c <= b and b - c <= 80  # overlap is whole sentences within the budget
        assert c > a
    assert spans[0][0] == 0 and spans[-1][1] == len(text)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["孙悟空", "打", "白骨精", "。", "，", "！", "\n", "a", " ", "Monkey.", "…", "”"]),
             min_size=0, max_size=400),
    st.integers(min_value=20, max_value=200),
    st.integers(min_value=0, max_value=60),
)
def test_chunk_spans_properties(parts: list[str], size: int, overlap: int) -> None:
    text = "".join(parts)
    spans = chunk_spans(text, size=size, overlap=overlap)
    covered = set()
    for a, b in spans:
        assert 0 <= a < b <= len(text) and b - a <= size
        assert not text[a].isspace() and not text[b - 1].isspace()
        covered.update(range(a, b))
    # nothing but whitespace is left out
    assert all(text[i].isspace() for i in range(len(text)) if i not in covered)
    assert [a for a, _ in spans] == sorted(a for a, _ in spans)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="孙悟空。，！ab .", min_size=1, max_size=900), st.integers(min_value=8, max_value=300))
def test_split_pieces_cover_exactly_once(text: str, piece: int) -> None:
    pieces = split_pieces(text, 0, len(text), piece)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    assert all(b - a <= piece and b > a for a, b in pieces)
    assert all(p[1] == q[0] for p, q in zip(pieces, pieces[1:], strict=False))


def test_chunk_chapters_never_cross_chapters_and_embed_each_character_once() -> None:
    chapters = [(n, t, x) for n, (t, x) in enumerate(guide_chapters(1, 3), start=1)]
    chunks = chunk_chapters("book1", chapters, size=500, overlap=80, piece_size=256)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        num, title, text = chapters[c.chapter_idx]
        assert c.chapter_num == num and c.chapter_title == title
        assert text[c.start : c.end] == c.text  # offsets are exact, inside one chapter
        assert c.id.startswith("book1-")
    for idx, (_, _, text) in enumerate(chapters):
        own = [c for c in chunks if c.chapter_idx == idx]
        embedded = "".join(text[a:b] for c in own for a, b in c.pieces)
        assert embedded == text[own[0].start : own[-1].end]  # overlaps are not embedded twice
        assert all(b - a <= 256 for c in own for a, b in c.pieces)
    assert len({c.id for c in chunks}) == len(chunks)
    # ids are content hashes: same input, same ids; other book, other ids
    again = chunk_chapters("book1", chapters, size=500, overlap=80, piece_size=256)
    assert [c.id for c in again] == [c.id for c in chunks]
    assert chunk_chapters("book2", chapters)[0].id != chunks[0].id


def test_tokenize_uses_cjk_characters_bigrams_and_words() -> None:
    assert tokenize("孙悟空 Monkey King！ 山") == ["孙", "悟", "空", "孙悟", "悟空", "monkey", "king", "山"]
    assert tokenize("孙悟空 山", characters=False) == ["孙悟", "悟空", "山"]  # versions 1-2, for the benchmark
    assert tokenize("，。") == []


def test_keyword_index_finds_the_chapter() -> None:
    chapters = guide_chapters(1, 9)
    index = KeywordIndex.build([text for _, text in chapters])
    assert index.top("灵台方寸山，斜月三星洞", 3)[0][0] == 0  # 第一回
    assert index.top("白骨夫人的贬书", 3)[0][0] == 3  # 第四回
    # a one-character word matches on its own: 钯 is in no bigram of the question ("把钯", "钯叫")
    rake = KeywordIndex.build(["八戒使一柄九齿钉钯。", "行者使一条金箍棒。", "沙僧使一根降妖杖。"])
    assert rake.top("那把钯是谁的兵器", 1)[0][0] == 0
    assert index.top("火焰山的铁扇公主", 3)[0][0] == 5  # 第六回
    assert index.top("zzzz", 3) == []


def test_keyword_index_matches_english_words_by_stem() -> None:
    docs = ["The colonel blushed deeply and walked away.", "A quiet walk in the garden.",
            "Nothing of the sort happened here.", "The meetings were long and dull."]
    index = KeywordIndex.build(docs)
    # the question's "blush" is the book's "blushed"; without stems nothing matched it
    assert [pos for pos, _ in index.top("why did she blush", 4)] == [0]
    assert index.top("meeting", 4)[0][0] == 3
    # a word's forms count once per document: "walked" and "walk" (two forms, one stem) in one
    # document do not outscore that stem in another
    both = KeywordIndex.build(["walk walked", "walks walks", "other text here"])
    scores = dict(both.top("walking", 3))
    assert set(scores) == {0, 1} and scores[1] >= scores[0]
    # the ideal score (merging books) counts the stem once as well
    assert both.ideal("walking") == pytest.approx(max(scores.values()))


def test_fusion_methods() -> None:
    vector = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
    keyword = [("c", 12.0), ("d", 5.0), ("a", 1.0)]
    rrf = fusion.rrf(vector, keyword, 3)
    assert [k for k, _, _ in rrf] == ["a", "c", "b"]
    assert rrf[0][2] == frozenset({"vector", "keyword"}) and rrf[2][2] == frozenset({"vector"})
    assert [k for k, _, _ in fusion.union(vector, keyword, 4)] == ["a", "c", "b", "d"]
    weighted = fusion.weighted(vector, keyword, 4)
    assert weighted[0][0] == "a" and {k for k, _, _ in weighted} == {"a", "b", "c", "d"}
    with pytest.raises(KeyError):
        fusion.METHODS["nope"]


def test_embedding_text_drops_punctuation_keeps_words() -> None:
    from rag.index.chunking import embedding_text

    assert embedding_text("悟空道：“师父，我去化斋。”\n三藏道：好！") == "悟空道师父我去化斋三藏道好"
    assert embedding_text("He said, \"don't go.\"  Fine!") == "He said don't go Fine"
    assert embedding_text("……") == ""
