"""Chapter numbers: one numeral parser (``rag.checks.text.cn_to_int``) for the headings a loader
files chapters under and the chapters a question names; book errors as message codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.checks.text import cn_to_int
from rag.errors import BookError
from rag.i18n import text
from rag.index.chapters import chapter_word, heading_number, parse_number
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


def test_the_chapter_word_is_the_one_the_headings_use() -> None:
    hui = ["第一回 山前遇雨 石猴初出洞", "第二回 渡口问路 石猴夜过江", "《石猴记》 第三回 老渔赠网"]
    assert chapter_word(hui) == ("回", "")
    assert chapter_word([f"第{n}章 风起" for n in "一二三四五六七八九十"] + ["第十一章", "第十二章 终"]) == ("章", "")
    assert chapter_word(["第一章 起", "第二章 承", "第三节 转"]) == ("章", "")  # the word most headings use
    assert chapter_word(["CHAPTER I. Down", "Chapter II. Up"]) == ("", "chapter")
    assert chapter_word(["Part One", "PART 2 The Road", "Part 3"]) == ("", "part")
    assert chapter_word(["序", "正文", "孔乙己", "Preface", "Letter 1"]) == ("", "")  # nothing numbered
    assert chapter_word([]) == ("", "")


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


def _story(seed: int, sections: int = 2, numerals: bool = True) -> list[str]:
    """A story's body: paragraphs one blank line apart, a short line of dialogue standing alone, and
    inner sections numbered "一", "二" after a wider gap (as 鲁迅's stories are laid out)."""
    out: list[str] = []
    for s in range(sections):
        if numerals:
            out += ["", "", f"\u3000\u3000{'一二三四'[s]}", ""]
        for p in range(6):
            out += [f"\u3000\u3000第{seed}篇第{s}节第{p}段的文字，讲一件事情的经过，" * 3, ""]
        out += ["\u3000\u3000“没有。”", ""]
    return out


def _collection(with_inner_headings: bool = False) -> str:
    lines = ["                    《小集》自序", "", "                      ·作者·", ""]
    lines += [f"\u3000\u3000自序的文字，说这本集子为什么编成。{n}" * 4 for n in range(6)]
    for n, title in enumerate(["月光", "酒店", "长路", "小船"]):
        lines += ["", "", "", "", f"{' ' * 20}\u3000\u3000{title}", "", f"{' ' * 22}·作者·", ""]
        if with_inner_headings and n == 2:
            for k, sub in enumerate(["序", "优胜", "革命"], start=1):
                lines += ["", "", f"\u3000\u3000第{'一二三'[k - 1]}章\u3000{sub}", ""]
                lines += _story(10 + k, sections=1, numerals=False)
        else:
            lines += _story(n)
        lines += ["\u3000" * 20 + "一九二一年一月。", ""]
    return "\n".join(lines)


def test_a_collection_is_cut_at_its_story_titles_by_layout() -> None:
    _, chapters = split_text_chapters(_collection())
    # no numbered heading: every section numbered in reading order, the preface too (number_chapters)
    assert [(c.num, c.title) for c in chapters] == [(1, "《小集》自序"), (2, "月光"), (3, "酒店"), (4, "长路"), (5, "小船")]
    assert all(c.text.count("第") >= 12 for c in chapters[1:])  # the inner "一", "二" stay in their story
    assert chapters[2].text.startswith("·作者·") and "第1篇" in chapters[2].text and "第2篇" not in chapters[2].text


def test_a_story_with_numbered_inner_chapters_keeps_them_under_its_title() -> None:
    _, chapters = split_text_chapters(_collection(with_inner_headings=True))
    assert [(c.num, c.title) for c in chapters] == [
        (0, "《小集》自序"), (1, "月光"), (2, "酒店"), (3, "长路 第一章 序"), (4, "第二章 优胜"), (5, "第三章 革命"),
        (6, "小船")]  # the preface before chapter 1
    assert "第3篇" not in chapters[5].text and "第3篇" in chapters[6].text


def test_a_novel_cut_by_its_headings_takes_no_title_from_layout() -> None:
    chapters_text = []
    for n in range(1, 6):
        body = [f"第{n}回的一段正文，说到此处众人都笑了起来。" * 3 for _ in range(8)]
        body[3:3] = ["", "", "", "诗曰", ""]  # a short line after a wide gap inside a chapter
        chapters_text += [f"第{'一二三四五'[n - 1]}回 标题{n}", *body, ""]
    _, chapters = split_text_chapters("\n".join(chapters_text))
    assert [c.title for c in chapters] == [f"第{'一二三四五'[n - 1]}回 标题{n}" for n in range(1, 6)]
    assert all("诗曰" in c.text for c in chapters)
