"""Reading books: EPUB (spine, TOC titles, skipped pages), TXT encodings, Markdown, and bad input."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from conftest import CORPUS
from fixtures_index.books import GUIDE_EPUB, add_to_zip, guide_chapters, make_epub

from rag.errors import BookError
from rag.index.chapters import parse_number
from rag.index.chunking import chunk_chapters
from rag.index.epub import html_to_text
from rag.index.loaders import decode_text, load_book, split_text_chapters


def test_epub_reads_spine_in_order_with_toc_titles_and_skips_cover_copyright_nav(tmp_path: Path) -> None:
    chapters = guide_chapters(1, 3)
    path = make_epub(tmp_path / "book.epub", chapters)
    book = load_book(path)
    assert book.format == "epub" and book.title == "西游记导读选段"
    assert [c.title for c in book.chapters] == [t for t, _ in chapters]
    assert [c.num for c in book.chapters] == [1, 2, 3]  # parsed from 第一回..第三回
    assert "版权所有" not in "".join(c.text for c in book.chapters)  # copyright page skipped
    assert "封面" not in "".join(c.text for c in book.chapters)
    first = book.chapters[0].text
    assert first.startswith("花果山石猴（第一回）\n东胜神洲傲来国")  # heading removed, paragraphs kept
    assert "var x" not in first and "a comment" not in first  # script and comments dropped
    assert first.count("\n") >= 9
    # every paragraph of every source chapter survives
    assert [c.text.split("\n") for c in book.chapters] == [text.split("\n") for _, text in chapters]


def test_epub_title_override(tmp_path: Path) -> None:
    path = make_epub(tmp_path / "b.epub", guide_chapters(5, 5))
    assert load_book(path, name="  我的书 ").title == "我的书"


def test_sample_guide_epub_answers_half_of_the_demo_question() -> None:
    book = load_book(GUIDE_EPUB)
    text = "\n".join(c.text for c in book.chapters)
    assert book.title == "《西游记》阅读指南" and len(book.chapters) >= 10
    assert "第二十七回" in text and "尸魔三戏唐三藏" in text and "三打白骨精" in text
    for fact in ("十万八千里", "五行山", "一万三千五百斤", "八十一难", "五千零四十八卷", "斗战胜佛"):
        assert fact in text, fact
    assert "版权说明" not in [c.title for c in book.chapters]  # the copyright page is skipped
    # the TV-series half must come from the web
    for absent in ("电视剧", "央视", "1986", "第几集"):
        assert absent not in text, absent


@pytest.mark.corpus
def test_sample_guide_facts_are_in_the_novel() -> None:
    novel = (CORPUS / "xiyouji.txt").read_text(encoding="utf-8")
    for fact in ("十万八千里", "一万三千五百斤", "五行山", "尸魔三戏唐三藏", "白骨夫人", "贬书", "六耳猕猴",
                 "五千零四十八卷", "旃檀功德佛", "善财童子", "小须弥山", "一千一百一十一"):
        assert fact in novel, fact


def test_txt_splits_on_chapter_headings_with_a_prefix_and_takes_the_title(tmp_path: Path) -> None:
    chapters = guide_chapters(1, 10)
    # the layout of the public-domain TXT files: a 《title》 line, headings after "《》目录 ", indented text
    lines = ["《西游记导读》"]
    for title, text in chapters:
        number, name = title.split(" ", 1)
        lines += [f"《》目录 {number}\u3000{name}", *(f"    {p}" for p in text.split("\n"))]
    path = tmp_path / "guide.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    book = load_book(path)
    assert book.format == "txt" and book.title == "西游记导读"
    assert [c.num for c in book.chapters] == list(range(1, 11))
    assert [c.title for c in book.chapters] == [t for t, _ in chapters]
    assert [c.text for c in book.chapters] == [text for _, text in chapters]


@pytest.mark.corpus
def test_the_real_novel_splits_into_its_hundred_chapters() -> None:
    book = load_book(CORPUS / "xiyouji.txt")
    assert book.format == "txt" and book.title == "西游记"
    assert len(book.chapters) == 100
    assert [c.num for c in book.chapters] == list(range(1, 101))
    assert book.chapters[26].title == "第二十七回 尸魔三戏唐三藏 圣僧恨逐美猴王"
    assert book.chapters[0].text.startswith("诗曰：")


@pytest.mark.parametrize("encoding", ["gb18030", "gbk", "utf-16", "utf-8-sig"])
def test_txt_encodings(tmp_path: Path, encoding: str) -> None:
    chapters = guide_chapters(2, 3)
    text = "\n\n".join(f"{t}\n{body}" for t, body in chapters)
    path = tmp_path / "book.txt"
    path.write_bytes(text.encode(encoding))  # strict: every character of the guide is in GBK
    book = load_book(path)
    assert [c.num for c in book.chapters] == [2, 3]
    assert [c.text for c in book.chapters] == [body for _, body in chapters]


def test_english_txt_chapters(tmp_path: Path) -> None:
    path = tmp_path / "novel.txt"
    path.write_text("The Book\n\nCHAPTER I\nIt was a dark night. Rain fell.\n\nChapter 2: Dawn\nMorning came.\n",
                    encoding="utf-8")
    book = load_book(path)
    assert [(c.num, c.title) for c in book.chapters] == [(1, "CHAPTER I"), (2, "Chapter 2: Dawn")]


def test_markdown_top_heading_is_title_and_sections_are_chapters(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text("# 读书笔记\n\n## 第一部分\n**孙悟空**拜师，见[链接](http://x)。\n\n- 要点一\n\n## 第二部分\n"
                    "| a | b |\n|---|---|\n| 筋斗云 | 十万八千里 |\n", encoding="utf-8")
    book = load_book(path)
    assert book.title == "读书笔记" and book.format == "md"
    assert [c.title for c in book.chapters] == ["第一部分", "第二部分"]
    assert book.chapters[0].text == "孙悟空拜师，见链接。\n要点一"
    assert "筋斗云 十万八千里" in book.chapters[1].text


def test_text_without_headings_is_one_chapter(tmp_path: Path) -> None:
    title, chapters = split_text_chapters("第一段。\n\n第二段，没有标题。")
    assert title is None and len(chapters) == 1 and chapters[0].text == "第一段。\n第二段，没有标题。"


def test_parse_number() -> None:
    assert [parse_number(s) for s in ("二十七", "一百", "十", "九十九", "一百零八", "27", "xii", "iv", "两")] == [
        27, 100, 10, 99, 108, 27, 12, 4, 2]
    assert parse_number("abc") is None


def test_html_to_text_keeps_paragraphs_and_drops_ruby() -> None:
    heading, text = html_to_text(b"<html><body><h1>Title</h1><p>a <b>b</b>\n c</p><div>d<br/>e</div>"
                                 b"<p><ruby>\xe5\xad\x99<rt>sun</rt></ruby></p></body></html>")
    assert heading == "Title"
    assert text == "Title\na b c\nd\ne\n孙"


# ------------------------------------------------------------------------------------ bad input


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with pytest.raises(BookError, match=r"empty \(0 bytes\)"):
        load_book(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BookError, match="not found"):
        load_book(tmp_path / "nope.epub")


def test_too_large_says_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes("很长的书。".encode() * 80_000)  # ~1.2 MB
    with pytest.raises(BookError, match=r"too large \(1\.1 MB\); the limit is 0\.5 MB \(setting MAX_BOOK_MB\)"):
        load_book(path, max_mb=0.5)


def test_epub_that_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "fake.epub"
    path.write_text("this is not a zip", encoding="utf-8")
    with pytest.raises(BookError, match="not a valid EPUB .*not a ZIP"):
        load_book(path)


def test_zip_that_is_not_an_epub(tmp_path: Path) -> None:
    path = tmp_path / "archive.epub"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(BookError, match="not an EPUB"):
        load_book(path)


def test_zip_renamed_txt_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.txt", "hello")
    with pytest.raises(BookError, match="ZIP archive, not a text file"):
        load_book(path)


def test_drm_encrypted_epub(tmp_path: Path) -> None:
    path = make_epub(tmp_path / "drm.epub", guide_chapters(1, 1))
    add_to_zip(path, "META-INF/encryption.xml", """<?xml version="1.0"?>
<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
  <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
    <enc:CipherData><enc:CipherReference URI="EPUB/text/ch001.xhtml"/></enc:CipherData></enc:EncryptedData>
</encryption>""")
    with pytest.raises(BookError, match="DRM-protected"):
        load_book(path)


def test_font_obfuscation_is_not_drm(tmp_path: Path) -> None:
    path = make_epub(tmp_path / "fonts.epub", guide_chapters(1, 1))
    add_to_zip(path, "META-INF/encryption.xml", """<?xml version="1.0"?>
<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
  <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>
    <enc:CipherData><enc:CipherReference URI="EPUB/fonts/a.otf"/></enc:CipherData></enc:EncryptedData>
</encryption>""")
    assert len(load_book(path).chapters) == 1


def test_epub_without_text(tmp_path: Path) -> None:
    path = make_epub(tmp_path / "images.epub", [("第一章", "")], with_cover=False, with_copyright=False)
    with pytest.raises(BookError, match="no readable text"):
        load_book(path)


def test_txt_with_only_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "blank.txt"
    path.write_text("  \n\n \u3000 \n", encoding="utf-8")
    with pytest.raises(BookError, match="no text"):
        load_book(path)


def test_unknown_encoding(tmp_path: Path) -> None:
    path = tmp_path / "noise.txt"
    path.write_bytes(os.urandom(20_000))
    with pytest.raises(BookError, match="unknown text encoding"):
        load_book(path)


def test_bad_utf16_after_bom() -> None:
    with pytest.raises(BookError, match="byte-order mark"):
        decode_text(b"\xff\xfe\x00\xd8", "x.txt")


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(b"%PDF-1.4 ...")
    with pytest.raises(BookError, match="unsupported file type '.pdf'"):
        load_book(path)


def _wrap(paragraph: str, width: int, indent: str) -> list[str]:
    return [indent + paragraph[:width]] + [paragraph[i : i + width] for i in range(width, len(paragraph), width)]


def test_hard_wrapped_chinese_is_joined_so_no_sentence_is_split_at_a_wrap(tmp_path: Path) -> None:
    # A 鲁迅-style e-text: every line cut at 36 characters mid-sentence, paragraphs indented.
    sentence = "他于是并排坐下去了，倘是别的闲人们，阿Ｑ本不敢大意坐下去，但这王胡旁边，他有什么怕呢？"
    paragraphs = [f"第{n}段说的是一件事情，" * 6 + sentence for n in range(12)]
    lines = ["第一章　开头", ""] + [ln for p in paragraphs for ln in _wrap(p, 36, "    ")]
    path = tmp_path / "wrapped.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = load_book(path).chapters[-1].text
    assert text.split("\n") == paragraphs  # each paragraph one line again, nothing added or lost
    chunks = chunk_chapters("b", [(c.num, c.title, c.text) for c in load_book(path).chapters], size=120, overlap=20)
    assert all(sentence in c.text or "阿Ｑ本不敢" not in c.text for c in chunks)
    assert any(sentence in c.text for c in chunks)


def test_hard_wrapped_english_with_every_line_indented_joins_with_spaces(tmp_path: Path) -> None:
    # A Project Gutenberg text: every line indented the same, paragraphs apart by blank lines.
    paragraph = " ".join(f"word{n} and some more words to fill the line" for n in range(12))
    wrapped: list[str] = []
    for _ in range(8):
        line = ""
        for word in paragraph.split():
            if len(line) + len(word) + 1 > 70:
                wrapped.append("  " + line)
                line = word
            else:
                line = f"{line} {word}".strip()
        wrapped += ["  " + line, ""]
    path = tmp_path / "pg.txt"
    path.write_text("Chapter 1\n\n" + "\n".join(wrapped), encoding="utf-8")
    assert load_book(path).chapters[-1].text.split("\n") == [paragraph] * 8


def test_lines_that_are_paragraphs_are_left_alone(tmp_path: Path) -> None:
    paragraphs = [f"第{n}段。" + "这是一段很长的话，" * (5 + n % 7) + "完了。" for n in range(60)]
    path = tmp_path / "paras.txt"
    path.write_text("第一回　开头\n" + "\n".join(paragraphs), encoding="utf-8")
    assert load_book(path).chapters[-1].text.split("\n") == paragraphs
