"""Build test books from the shared corpus (read at test time, never copied into the repo)."""

from __future__ import annotations

import re
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import Settings
from rag.index.embeddings import HashEmbedder

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
XIYOUJI = CORPUS / "xiyouji.txt"
QUESTIONS = CORPUS / "xiyouji.questions.jsonl"
REPO = Path(__file__).resolve().parents[2]
GUIDE_EPUB = REPO / "assets" / "xiyouji-guide.epub"

_HEADING = re.compile(r"^《》目录 (第.{1,5}回.*)$", re.MULTILINE)


def corpus_chapters(first: int, last: int) -> list[tuple[str, str]]:
    """(title, text) of chapters ``first..last`` (1-based) of 西游记, text as paragraphs."""
    text = XIYOUJI.read_text(encoding="utf-8")
    parts = _HEADING.split(text)
    chapters = []
    for i in range(1, len(parts), 2):
        title = re.sub(r"\s+", " ", parts[i].replace("\u3000", " ")).strip()
        body = "\n".join(line.strip() for line in parts[i + 1].splitlines() if line.strip())
        chapters.append((title, body))
    return chapters[first - 1 : last]


def make_epub(
    path: Path,
    chapters: list[tuple[str, str]],
    title: str = "西游记选段",
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
        paragraphs = "".join(f"<p>{line}</p>" for line in text.split("\n"))
        item.content = f"<h2>{chapter_title}</h2><!-- a comment --><script>var x = 1;</script>{paragraphs}"
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


class GatedEmbedder(HashEmbedder):
    """A HashEmbedder whose passage calls block until ``gate`` is set (to observe the index while
    embedding is in progress); ``fail_after`` makes the n-th call raise."""

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Event()
        self.fail_after = fail_after

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.started.set()
        if not self.gate.wait(timeout=30):
            raise TimeoutError("test gate never opened")
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("embedder exploded")
        return super().embed_passages(texts)
