"""Plain-text books as they come (issue 24): a Project Gutenberg file (cp1252, CRLF, a header with
Title and Author, a contents list that repeats every heading, letters before "Chapter 1", a licence
after the book) and a Chinese TXT with a 目录, 序 and 楔子 before 第一回 and a 后记 after the last.
Both are generated here with the structure of real files (no text of any novel), then indexed for
real (Chroma on disk, keyword search) and searched with a chapter scope and a spoiler limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_settings
from fixtures_index.books import chinese_numeral
from fixtures_index.embedders import HashEmbedder

from rag.index import IndexConfig, open_index
from rag.index.loaders import gutenberg_text, load_book, split_text_chapters
from rag.scope import limit_chapters

_ROMAN = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]
PLACES = ["harbour", "mill", "orchard", "bridge", "chapel", "market", "quarry", "lighthouse"]
LICENCE = ("Section 1. General Terms of Use and Redistributing Project Gutenberg electronic works. "
           "The Foundation collects royalties and donations under the trademark licence agreement.")


def english_chapter(label: str, n: int, paragraphs: int = 6) -> str:
    """Distinct sentences; every section mentions the lantern (a shared word) and its own token."""
    lines = []
    for i in range(paragraphs):
        place = PLACES[(i + n) % len(PLACES)]
        lines.append(f"In {label.lower()} the keeper walked to the {place} with the lantern, "
                     f"counting stones token{label.replace(' ', '').lower()}x{i} and thinking of winter {n}-{i}.")
    return "\r\n\r\n".join(lines)


def gutenberg_book(path: Path, letters: int = 4, chapters: int = 24, roman: bool = False) -> Path:
    """A Gutenberg-style TXT: header, START line, title lines, CONTENTS, letters, chapters, END, licence."""
    heads = [f"Letter {n}" for n in range(1, letters + 1)]
    heads += [f"Chapter {_ROMAN[n] if roman else n}" for n in range(1, chapters + 1)]
    parts = ["The Project Gutenberg eBook of The Lantern Keeper, by Mara Quill",
             "This eBook is for the use of anyone anywhere at no cost. Foundation royalties licence.",
             "Title: The Lantern Keeper\r\n       or, the Modern Lamplighter", "Author: Mara Quill",
             "Release Date: May 1, 2001 [eBook #99999]", "Character set encoding: UTF-8",
             "*** START OF THE PROJECT GUTENBERG EBOOK THE LANTERN KEEPER ***",
             "The Lantern Keeper;\r\nor, the Modern Lamplighter", "by Mara Quill", "CONTENTS",
             "\r\n".join(f" {h}" for h in heads)]
    for n, head in enumerate(heads, start=1):
        parts.append(f"{head}\r\n\r\n{english_chapter(head, n)}\r\n\r\nCaf\u00e9 \u201cnotes\u201d of {head}.")
    parts += ["*** END OF THE PROJECT GUTENBERG EBOOK THE LANTERN KEEPER ***", LICENCE * 40]
    path.write_bytes("\r\n\r\n\r\n".join(parts).encode("cp1252"))
    return path


def chinese_section(name: str, n: int, lines: int = 12) -> str:
    return "\n".join(f"{name}第{i + 1}日到了石桥，说起长安的旧事{n}-{i}，记号{name}{i}。" for i in range(lines))


NAMES = ["青龙", "白虎", "朱雀", "玄武", "麒麟", "凤凰", "白鹤", "金鹿", "银狐", "赤兔", "黑熊", "灵龟"]


def chinese_book(path: Path, chapters: int = 12, encoding: str = "gb18030") -> Path:
    """《石桥记》 with a 目录 block (序, 楔子, every 第N回 with its title, 后记), then the sections."""
    heads = [f"第{chinese_numeral(n)}回 {NAMES[n - 1]}过桥" for n in range(1, chapters + 1)]
    parts = ["《石桥记》", "作者：无名氏", "目录", "序", "楔子", *heads, "后记"]
    parts += ["序", chinese_section("说书人", 0), "楔子", chinese_section("老渔翁", 0)]
    for n, head in enumerate(heads, start=1):
        parts += [head, chinese_section(NAMES[n - 1], n)]
    parts += ["后记", chinese_section("抄书人", 99)]
    path.write_bytes("\r\n".join(parts).encode(encoding))
    return path


def test_gutenberg_book_has_the_books_labels_numbers_title_and_author(tmp_path: Path) -> None:
    book = load_book(gutenberg_book(tmp_path / "lantern.txt"))
    assert book.title == "The Lantern Keeper or, the Modern Lamplighter" and book.author == "Mara Quill"
    labelled = [(c.num, c.title) for c in book.chapters]
    assert labelled == ([(0, "Front matter")] + [(0, f"Letter {n}") for n in range(1, 5)]
                        + [(n, f"Chapter {n}") for n in range(1, 25)])  # the title lines: front matter, not "Chapter 0"
    assert "by Mara Quill" in book.chapters[0].text
    everything = "\n".join(c.text for c in book.chapters)
    assert "royalties" not in everything and "Release Date" not in everything and "START OF" not in everything
    assert "Caf\u00e9 \u201cnotes\u201d of Chapter 7." in everything  # cp1252 decoded
    chapter_7 = next(c for c in book.chapters if c.num == 7)
    assert "tokenchapter7x0" in chapter_7.text and "tokenchapter8" not in chapter_7.text


def test_roman_chapter_numbers_are_the_books(tmp_path: Path) -> None:
    book = load_book(gutenberg_book(tmp_path / "roman.txt", letters=0, chapters=12, roman=True))
    assert [(c.num, c.title) for c in book.chapters if c.num] == [(n, f"Chapter {_ROMAN[n]}") for n in range(1, 13)]


def test_text_without_gutenberg_lines_is_kept_whole() -> None:
    assert gutenberg_text("Title: x\nbody") == ("Title: x\nbody", {})


def test_chinese_book_with_a_contents_list(tmp_path: Path) -> None:
    book = load_book(chinese_book(tmp_path / "shiqiao.txt"))
    assert (book.title, book.author) == ("石桥记", "无名氏")
    got = [(c.num, c.title) for c in book.chapters]
    assert got == [(0, "序"), (0, "楔子")] + [(n, f"第{chinese_numeral(n)}回 {NAMES[n - 1]}过桥")
                                            for n in range(1, 13)] + [(None, "后记")]
    assert "记号青龙0" in book.chapters[2].text and "过桥" not in book.chapters[2].text


def test_a_contents_list_without_its_heading_and_real_short_sections() -> None:
    heads = [f"第{chinese_numeral(n)}回 {NAMES[n - 1]}" for n in range(1, 6)]
    text = "\n".join(["《书》", *heads, "这是目录之后、第一回之前的一段说明文字，足够长，要留在书里作为前言部分的内容，不能丢掉，也不能算作第五回。"])
    text += "\n" + "\n".join(f"{h}\n{chinese_section(NAMES[i], i + 1)}" for i, h in enumerate(heads))
    _, chapters = split_text_chapters(text)
    assert [c.num for c in chapters] == [0, 1, 2, 3, 4, 5]
    assert chapters[0].text.startswith("这是目录之后")


def test_markdown_yaml_title_names_the_book(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("---\ntitle: \"The Quiet Mill\"\nauthor: A. Writer\nlang: en\n---\n\n# Chapter 1\n\n"
                    + english_chapter("Chapter 1", 1).replace("\r\n", "\n") + "\n\n# Chapter 2\n\n"
                    + english_chapter("Chapter 2", 2).replace("\r\n", "\n") + "\n", encoding="utf-8")
    book = load_book(path)
    assert (book.title, book.author) == ("The Quiet Mill", "A. Writer")
    assert [(c.num, c.title) for c in book.chapters] == [(1, "Chapter 1"), (2, "Chapter 2")]
    assert "title:" not in book.chapters[0].text


# ------------------------------------------------------------------------- on a real index
@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("txt")
    index = open_index(make_settings(data_dir=tmp / "data"), embedder=HashEmbedder(), config=IndexConfig())
    english = index.ingest(gutenberg_book(tmp / "lantern.txt"), background=False)
    chinese = index.ingest(chinese_book(tmp / "shiqiao.txt"), background=False)
    yield index, english, chinese
    index.close()


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "vector"])
def test_chapter_scope_and_spoiler_limit_on_the_gutenberg_book(indexed, mode: str) -> None:
    index, english, _ = indexed
    found = index.search("the keeper walked with the lantern", k=10, book_id=english.id, mode=mode, chapters=(5, 5))
    assert found.passages and {(p.chapter_num, p.chapter_title) for p in found.passages} == {(5, "Chapter 5")}
    limited = index.search("the keeper walked with the lantern", k=30, book_id=english.id, mode=mode,
                           chapters=limit_chapters(None, 3))
    nums = {p.chapter_num for p in limited.passages}
    assert nums and nums <= {0, 1, 2, 3}
    if mode == "keyword":
        titles = {p.chapter_title for p in index.search("letter keeper lantern", k=30, book_id=english.id,
                                                       mode=mode, chapters=limit_chapters(None, 3)).passages}
        assert titles & {"Letter 1", "Letter 2", "Letter 3", "Letter 4"}  # front matter is allowed
    licence = index.search("Foundation royalties trademark licence agreement", k=10, book_id=english.id, mode=mode)
    assert not any("royalties" in p.text or "Foundation" in p.text for p in licence.passages)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_chapter_scope_and_spoiler_limit_on_the_chinese_book(indexed, mode: str) -> None:
    index, _, chinese = indexed
    found = index.search("到了石桥 说起长安的旧事", k=10, book_id=chinese.id, mode=mode, chapters=(7, 7))
    assert found.passages and {p.chapter_title for p in found.passages} == {f"第七回 {NAMES[6]}过桥"}
    limited = index.search("到了石桥 说起长安的旧事 说书人 老渔翁", k=40, book_id=chinese.id, mode=mode,
                           chapters=limit_chapters(None, 2))
    titles = {p.chapter_title for p in limited.passages}
    assert titles <= {"序", "楔子", "第一回 青龙过桥", "第二回 白虎过桥"} and titles & {"序", "楔子"}
    back = index.search("抄书人", k=5, book_id=chinese.id, mode="keyword")
    assert back.passages and back.passages[0].chapter_title == "后记"  # searchable, under its label


# -- issue 24: untitled front matter gets a label, not "Chapter 0"


def test_untitled_front_matter_of_a_chinese_book_is_labelled(tmp_path: Path) -> None:
    path = tmp_path / "qianyan.txt"
    opening = "这本书写的是石桥边的旧事，说书人在开篇先交代来历，没有另起标题，直接进入正文之前的这段话。"
    path.write_text("\n".join([opening, *(f"第{chinese_numeral(n)}回 {NAMES[n - 1]}过桥\n"
                                          + chinese_section(NAMES[n - 1], n) for n in range(1, 4))]), encoding="utf-8")
    book = load_book(path)
    assert [(c.num, c.title) for c in book.chapters][:2] == [(0, "前言"), (1, "第一回 青龙过桥")]
    assert book.chapters[0].text == opening


def test_front_matter_keeps_its_own_first_line_as_label() -> None:
    from rag.index.chapters import Chapter
    from rag.index.loaders import label_front_matter

    chapters = [Chapter(0, "", "Introduction\nThe keeper's story begins before the first chapter."),
                Chapter(0, "", "Some untitled words before the first chapter, without any heading."),
                Chapter(1, "Chapter 1", "The lantern was lit."), Chapter(None, "", "an untitled part later on")]
    label_front_matter(chapters)
    assert [c.title for c in chapters] == ["Introduction", "Front matter", "Chapter 1", ""]


def test_front_matter_is_searched_with_its_label_and_before_chapter_1(tmp_path: Path) -> None:
    index = open_index(make_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(),
                       config=IndexConfig(piece_chars=64))
    try:
        info = index.ingest(gutenberg_book(tmp_path / "lantern.txt"), embed=False)
        hits = index.retrieve("by Mara Quill Modern Lamplighter", k=3, book_id=info.id, mode="keyword",
                              chapters=limit_chapters(None, 1))
        front = [p for p in hits if "by Mara Quill" in p.text]
        assert front and front[0].label() == "Front matter" and front[0].chapter_num == 0
    finally:
        index.close()
