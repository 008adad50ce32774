"""A book's own word for a chapter in what the index tells: ``BookInfo.unit_zh`` / ``unit_en`` (read
off its chapter titles once) and the note for a question that names a chapter, which says 第 4 章
for a book headed 第一章…第十二章, 第 4 回 for one headed 第一回…, "part 4" for an English book of
Parts, and the neutral word for a book that numbers no chapters (in memory, bigram embedder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_settings
from fixtures_index.books import chinese_numeral
from index_fakes import BigramEmbedder, MemoryVectors, chapter_text, write_book

from rag.i18n import PerLang, text
from rag.index import BookIndex, IndexConfig
from rag.index import catalog as catalog_module

CONFIG = IndexConfig(candidates=50, chapter_hint=True)
NAMES = ["青龙", "白虎", "朱雀", "玄武", "麒麟", "凤凰", "白鹤", "黄龙", "苍狼", "金蟾", "灵龟", "赤鲤"]
SCENES = ["The Road", "The Mill", "The River", "The Storm", "The Return"]


def index_of(tmp_path: Path, book: Path) -> BookIndex:
    idx = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                    config=CONFIG)
    idx.ingest(book, background=False)
    return idx


def zhang_book(path: Path) -> Path:
    """A modern novel: twelve chapters headed 第一章 … 第十二章."""
    parts = ["《十二章记》"] + [f"第{chinese_numeral(n)}章 {name}出行\n{chapter_text(n, name)}"
                            for n, name in enumerate(NAMES, start=1)]
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


def english_book(path: Path, word: str) -> Path:
    """An English book of five numbered parts ("Chapter 3 The River", "Part 3 The River")."""
    parts = ["The Miller's Year"]
    for n, scene in enumerate(SCENES, start=1):
        body = "\n".join(f"On day {i} of {scene.lower()} the miller {deed} near the {place}."
                         for i, (deed, place) in enumerate(zip(["walked", "waited", "sang", "slept"] * 6,
                                                               [f"bridge{n}", f"field{n}", f"barn{n}"] * 8,
                                                               strict=False)))
        parts.append(f"{word} {n} {scene}\n{body}")
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


def sections_book(path: Path) -> Path:
    """A collection whose stories are titled, not numbered (Markdown headings)."""
    parts = ["# 短篇集"] + [f"## {name}的故事\n\n{chapter_text(n, name)}" for n, name in enumerate(NAMES[:4], start=1)]
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


def named_note(idx: BookIndex, question: str):
    notes = [n for n in idx.search(question, k=3, mode="keyword").notes if n.code == "index.named_chapter"]
    assert len(notes) == 1, notes
    return notes[0]


def test_a_book_headed_zhang_says_zhang(tmp_path: Path) -> None:
    idx = index_of(tmp_path, zhang_book(tmp_path / "zhang.txt"))
    info = idx.books()[0]
    assert info.chapters == 12 and (info.unit_zh, info.unit_en) == ("章", "")
    note = named_note(idx, "第四章里玄武去了哪里？")
    assert note.params["unit"] == PerLang(zh="章", en="")  # the book's own word, not the default that reads alike
    assert text("zh", note) == "问题提到了第 4 章：这些章的段落排在前面"
    assert text("en", note) == "the question names chapter 4: its passages come first"
    idx.close()


def test_a_book_headed_hui_keeps_hui(tmp_path: Path) -> None:
    idx = index_of(tmp_path, write_book(tmp_path / "hui.txt", 5))
    assert (idx.books()[0].unit_zh, idx.books()[0].unit_en) == ("回", "")
    assert text("zh", named_note(idx, "第四回里玄武去了哪里？")) == "问题提到了第 4 回：这些回的段落排在前面"
    idx.close()


@pytest.mark.parametrize(("word", "said"), [("Chapter", "chapter"), ("Part", "part"), ("BOOK", "book")])
def test_an_english_book_says_its_own_word(tmp_path: Path, word: str, said: str) -> None:
    idx = index_of(tmp_path, english_book(tmp_path / "miller.txt", word))
    info = idx.books()[0]
    assert info.chapters == 5 and (info.unit_zh, info.unit_en) == ("", said)
    note = named_note(idx, "What did the miller do in chapter 3?")  # the note says the book's word
    assert text("en", note) == f"the question names {said} 3: its passages come first"
    assert text("zh", note) == "问题提到了第 3 章：这些章的段落排在前面"  # no Chinese word: the neutral one
    idx.close()


def test_a_book_without_numbered_headings_gets_the_neutral_word(tmp_path: Path) -> None:
    idx = index_of(tmp_path, sections_book(tmp_path / "stories.md"))
    info = idx.books()[0]
    assert info.chapters == 4 and (info.unit_zh, info.unit_en) == ("", "")
    note = named_note(idx, "第二章里白虎去了哪里？")  # its sections are numbered 1..n in reading order
    assert text("zh", note) == "问题提到了第 2 章：这些章的段落排在前面"
    assert text("en", note) == "the question names chapter 2: its passages come first"
    idx.close()


def test_books_of_different_words_searched_together_get_the_neutral_word(tmp_path: Path) -> None:
    idx = index_of(tmp_path, zhang_book(tmp_path / "zhang.txt"))
    idx.ingest(write_book(tmp_path / "hui.txt", 5), background=False)
    assert sorted(b.unit_zh for b in idx.books()) == ["回", "章"]
    assert text("zh", named_note(idx, "第四章里玄武去了哪里？")) == "问题提到了第 4 章：这些章的段落排在前面"
    hui = next(b.id for b in idx.books() if b.unit_zh == "回")
    one = [n for n in idx.search("第四回里玄武去了哪里？", k=3, book_id=hui, mode="keyword").notes
           if n.code == "index.named_chapter"]
    assert [text("zh", n) for n in one] == ["问题提到了第 4 回：这些回的段落排在前面"]
    idx.close()


def test_the_word_is_read_once_per_book_not_on_every_search(tmp_path: Path, monkeypatch) -> None:
    idx = index_of(tmp_path, zhang_book(tmp_path / "zhang.txt"))
    calls: list[int] = []
    real = catalog_module.chapter_word
    monkeypatch.setattr(catalog_module, "chapter_word", lambda titles: calls.append(1) or real(titles))
    for _ in range(3):
        named_note(idx, "第四章里玄武去了哪里？")
        idx.books()
    assert len(calls) <= 1
    idx.close()
