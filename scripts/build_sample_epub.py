"""Build assets/xiyouji-guide.epub from the Markdown sources in assets/xiyouji-guide/.

    python scripts/build_sample_epub.py [--out PATH]

The guide is an original Chinese reading guide to 《西游记》 (summaries in our own words, no text of
the novel). Each Markdown file becomes one chapter; its first ``#`` heading is the chapter title
in the table of contents. A short copyright page is included on purpose: the loader must skip it.
"""

from __future__ import annotations

import argparse
import html
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "assets" / "xiyouji-guide"
OUTPUT = ROOT / "assets" / "xiyouji-guide.epub"
BOOK_ID = "enough-rag-xiyouji-guide"
TITLE = "《西游记》阅读指南"

log = logging.getLogger("build_sample_epub")

CSS = """body { font-family: serif; line-height: 1.6; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; }
table { border-collapse: collapse; } td, th { border: 1px solid #999; padding: 0.2em 0.4em; }"""

COPYRIGHT = """<h1>版权说明</h1>
<p>本指南由 Enough RAG 项目编写，用作演示书籍。内容为对明代小说《西游记》情节的概述，均为本项目自行撰写，不含原著文字。</p>"""


def markdown_to_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(text)


def first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise ValueError("every guide file needs a '# ' title")


def build(out: Path = OUTPUT, sources: Path = SOURCES) -> Path:
    from ebooklib import epub

    files = sorted(sources.glob("*.md"))
    if not files:
        raise SystemExit(f"no Markdown sources in {sources}")
    book = epub.EpubBook()
    book.set_identifier(BOOK_ID)
    book.set_title(TITLE)
    book.set_language("zh")
    book.add_author("Enough RAG")
    style = epub.EpubItem(uid="style", file_name="style/main.css", media_type="text/css", content=CSS)
    book.add_item(style)

    copyright_page = epub.EpubHtml(title="版权说明", file_name="copyright.xhtml", lang="zh")
    copyright_page.content = COPYRIGHT
    copyright_page.add_item(style)
    book.add_item(copyright_page)

    chapters = []
    for n, path in enumerate(files, start=1):
        text = path.read_text(encoding="utf-8")
        title = first_heading(text)
        chapter = epub.EpubHtml(title=title, file_name=f"chapter-{n:02d}.xhtml", lang="zh")
        chapter.content = markdown_to_html(text)
        chapter.add_item(style)
        book.add_item(chapter)
        chapters.append(chapter)
        log.info("chapter %d: %s (%d chars)", n, html.unescape(title), len(text))

    book.toc = [epub.Link(c.file_name, c.title, f"ch{n}") for n, c in enumerate(chapters, start=1)]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", copyright_page, *chapters]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".epub.tmp")
    epub.write_epub(str(tmp), book)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUTPUT)
    parser.add_argument("--sources", type=Path, default=SOURCES)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    path = build(args.out, args.sources)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
