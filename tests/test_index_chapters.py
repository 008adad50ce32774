"""Chapter numbers: one numeral parser (``rag.checks.text.cn_to_int``) for the headings a loader
files chapters under and the chapters a question names; book errors as message codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.checks.text import cn_to_int
from rag.errors import BookError
from rag.i18n import text
from rag.index.chapters import heading_number, parse_number
from rag.index.loaders import load_book, split_text_chapters
from rag.index.query import named_chapters

CASES = [("第一零八回", 108), ("第一百零八回", 108), ("第十回", 10), ("第二十一回", 21), ("第100回", 100),
         ("第１２回", 12), ("Chapter 12", 12), ("Chapter XII", 12)]


@pytest.mark.parametrize(("heading", "number"), CASES)
def test_a_heading_is_filed_under_its_number(heading: str, number: int) -> None:
    assert heading_number(f"{heading} 标题") == number
    body = "正文一段。\n" * 3
    _, chapters = split_text_chapters(f"第一回 开头\n{body}\n{heading} 标题\n{body}")
    assert [c.num for c in chapters] == [1, number]


@pytest.mark.parametrize(("heading", "number"), CASES)
def test_a_question_names_the_same_chapter_a_loader_files(heading: str, number: int) -> None:
    assert named_chapters(f"{heading} 里发生了什么？") == [number]


def test_the_parser_is_the_checks_one_for_chinese_numerals() -> None:
    for token in ("一零八", "一百零八", "二十七", "十", "两", "九十九", "一千零一"):
        assert parse_number(token) == cn_to_int(token)
    assert parse_number("一零八") == 108
    assert [parse_number(s) for s in ("27", "２７", "xii", "iv", "", "abc")] == [27, 27, 12, 4, None, None]


def test_a_book_error_carries_a_code_and_renders_in_chinese(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(BookError) as info:
        load_book(empty)
    assert info.value.msg.code == "book.empty_file" and info.value.msg.level == "error"
    assert str(info.value) == "empty.txt: the file is empty (0 bytes)."
    assert text("zh", info.value.msg) == "empty.txt：文件是空的（0 字节）。"
    with pytest.raises(BookError) as info:
        load_book(tmp_path / "book.pdf")
    assert info.value.msg.code == "book.not_found"
    odd = tmp_path / "book.pdf"
    odd.write_bytes(b"%PDF")
    with pytest.raises(BookError) as info:
        load_book(odd)
    assert info.value.msg.code == "book.unsupported_type"
    assert text("zh", info.value.msg) == "book.pdf：不支持的文件类型“.pdf”。支持的格式：.epub, .txt, .md。"


@pytest.mark.parametrize(("labels", "numbers"), [
    (["楔子", "第一回 开头", "第二回 中间", "尾声"], [0, 1, 2, None]),
    (["序", "第一百零七回 甲", "第一百零八回 乙", "附录一 年表"], [0, 107, 108, None]),
    (["Prologue", "Chapter XI", "Chapter XII", "Epilogue"], [0, 11, 12, None]),
    (["Preface", "Letter 1", "Letter 2", "Chapter 1", "Chapter 2", "Afterword"], [0, 0, 0, 1, 2, None]),
], ids=["zh", "zh-108", "en-roman", "en-letters"])
def test_front_and_back_matter_are_outside_the_numbering(labels: list[str], numbers: list[int | None]) -> None:
    body = "正文一段，足够长，不是目录里的一行，而是一节真正的文字，有好几十个字在这里。\n" * 3
    _, chapters = split_text_chapters("\n".join(f"{label}\n{body}" for label in labels))
    assert [(c.title, c.num) for c in chapters] == list(zip(labels, numbers, strict=True))


def test_a_sentence_that_starts_like_a_label_is_not_a_heading() -> None:
    from rag.index.chapters import heading_kind

    for line in ("Introduction of the new law was slow.", "Letters were sent out", "序幕拉开了", "前言不搭后语"):
        assert heading_kind(line) is None
    assert [heading_kind(t) for t in ("目录", "Table of Contents", "Letter IV", "附录", "第108章")] == [
        "contents", "contents", "matter", "matter", "chapter"]


def test_a_book_without_numbered_headings_is_numbered_in_reading_order() -> None:
    from rag.index.chapters import Chapter, number_chapters

    chapters = [Chapter(None, t, "正文") for t in ("导读：怎样读", "第一回至第七回：石猴", "附录：名物")]
    assert [c.num for c in number_chapters(chapters)] == [1, 2, 3]  # as the sample guide's TOC


def test_short_chapters_are_not_a_contents_list_but_a_repeated_list_is() -> None:
    short = "第一回 石猴\n仙石迸出石卵。\n第二回 龙宫\n讨了铁棒。\n第三回 蟠桃\n王母设宴。"
    assert [c.num for c in split_text_chapters(short)[1]] == [1, 2, 3]
    listed = "目录\n第一回 石猴\n第二回 龙宫\n第三回 蟠桃\n" + short
    _, chapters = split_text_chapters(listed)
    assert [(c.num, c.text) for c in chapters] == [(1, "仙石迸出石卵。"), (2, "讨了铁棒。"), (3, "王母设宴。")]


def test_a_contents_list_with_subtitles_matches_the_bare_headings() -> None:
    body = "The rabbit ran past, and she followed it down the hole without a thought of getting out.\n" * 2
    heads = ["CHAPTER I.", "CHAPTER II.", "CHAPTER III.", "CHAPTER IV."]
    contents = "CONTENTS\n" + "\n".join(f" {h}     Subtitle {n}" for n, h in enumerate(heads, start=1))
    listed = "\n".join(f" {h}     Subtitle {n}" for n, h in enumerate(heads, start=1))  # without a heading
    for front in (contents, listed):
        _, chapters = split_text_chapters(front + "\n" + "\n".join(f"{h}\n{body}" for h in heads))
        assert [(c.num, c.title) for c in chapters] == [(n, h) for n, h in enumerate(heads, start=1)]
