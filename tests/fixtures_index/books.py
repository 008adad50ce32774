"""Build test books from the project's own sample guide (assets/xiyouji-guide/*.md): EPUBs with
several chapters, TXT files in any encoding, broken and DRM variants. No test here needs the novels."""

from __future__ import annotations

import html
import re
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from rag.config import Settings

REPO = Path(__file__).resolve().parents[2]
GUIDE_DIR = REPO / "assets" / "xiyouji-guide"
GUIDE_EPUB = REPO / "assets" / "xiyouji-guide.epub"

_CN = "零一二三四五六七八九十"


# Texts an embedder must survive: spaces, full-width forms, rare and astral characters, empty, one letter
ODD_TEXTS = [
    "Hello world, this is an English sentence.",
    "  leading and   repeated  spaces ",
    "ＡＢＣ１２３ full-width forms and ｶﾀｶﾅ",
    "\u3000全角空格与tab\tand newline\nmixed",
    "rare characters: 㐀㐁𠀀𪚥 and an emoji \U0001f600",
    "",
    "a",
]


def chinese_numeral(n: int) -> str:
    """1..99 as Chinese numerals (一, 十, 十一, 二十七)."""
    tens, ones = divmod(n, 10)
    return (("" if tens == 1 else _CN[tens]) + "十" if tens else "") + (_CN[ones] if ones or not tens else "")


def _paragraphs(markdown: str) -> list[str]:
    """The guide's Markdown as plain paragraphs (written here, not by the loader under test): section
    headings kept as a line, list markers and table rules dropped, table cells joined by spaces."""
    out = []
    for raw in markdown.splitlines():
        line = raw.strip()
        if not line or line.startswith("# ") or re.fullmatch(r"\|[\s:|-]+\|", line):
            continue
        line = re.sub(r"^(##+\s+|[-*]\s+|\d+\.\s+)", "", line)
        if line.startswith("|"):
            line = " ".join(cell.strip() for cell in line.strip("|").split("|"))
        out.append(line)
    return out


@cache
def _guide_files() -> tuple[tuple[str, str], ...]:
    """(subtitle, text) of every guide file in order: 00-intro.md first, 10-facts.md last."""
    files = []
    for path in sorted(GUIDE_DIR.glob("*.md")):
        markdown = path.read_text(encoding="utf-8")
        heading = next(line[2:].strip() for line in markdown.splitlines() if line.startswith("# "))
        files.append((heading.split("：", 1)[-1], "\n".join(_paragraphs(markdown))))
    assert len(files) == 11, f"expected the guide's 11 files in {GUIDE_DIR}"
    return tuple(files)


def guide_chapters(first: int, last: int) -> list[tuple[str, str]]:
    """(title, text) of the guide's chapters ``first..last`` (01-havoc.md is chapter 1, 10-facts.md
    chapter 10), titled like a novel's chapters ("第一回 石猴出世与大闹天宫") so loaders can number
    them; text as paragraphs separated by "\\n"."""
    assert 1 <= first <= last <= 10
    return [(f"第{chinese_numeral(n)}回 {subtitle}", text)
            for n, (subtitle, text) in enumerate(_guide_files()) if first <= n <= last]


def guide_pieces(count: int, size: int = 256) -> list[str]:
    """``count`` pieces of ``size`` characters spread evenly over the guide's Markdown as written
    (headings and markup included): texts for the embedders' tests."""
    raw = "\n".join(p.read_text(encoding="utf-8") for p in sorted(GUIDE_DIR.glob("*.md")))
    step = len(raw) // count
    return [raw[i * step : i * step + size] for i in range(count)]


def guide_text() -> str:
    """The whole guide (all 11 files, ~8,000 characters) as one text of paragraphs."""
    return "\n".join(text for _, text in _guide_files())


def make_epub(
    path: Path,
    chapters: list[tuple[str, str]],
    title: str = "西游记导读选段",
    with_cover: bool = True,
    with_copyright: bool = True,
) -> Path:
    """A real EPUB 3 (ebooklib) with a nav page, optional cover and copyright pages."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"test-{title}")
    book.set_title(title)
    book.set_language("zh")
    spine: list[Any] = ["nav"]
    if with_cover:
        cover = epub.EpubHtml(title="封面", file_name="cover.xhtml", lang="zh")
        cover.content = "<h1>西游记</h1><p>封面</p>"
        book.add_item(cover)
        spine.append(cover)
    if with_copyright:
        page = epub.EpubHtml(title="版权信息", file_name="copyright.xhtml", lang="zh")
        page.content = "<p>版权所有 不得转载 出版社 2024</p>"
        book.add_item(page)
        spine.append(page)
    items = []
    for n, (chapter_title, text) in enumerate(chapters, start=1):
        item = epub.EpubHtml(title=chapter_title, file_name=f"text/ch{n:03d}.xhtml", lang="zh")
        paragraphs = "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n"))
        item.content = (f"<h2>{html.escape(chapter_title)}</h2><!-- a comment --><script>var x = 1;</script>"
                        f"{paragraphs}")
        book.add_item(item)
        items.append(item)
    book.toc = [epub.Link(i.file_name, i.title, f"c{n}") for n, i in enumerate(items)]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = spine + items
    epub.write_epub(str(path), book)
    return path


def add_to_zip(path: Path, name: str, data: str | bytes) -> None:
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr(name, data)


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data", **overrides)  # type: ignore[call-arg]
