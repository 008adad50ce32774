"""An EPUB's chapters as the book has them, not as its files happen to be cut: the spine's pages as
one run of text blocks, split where the TOC / nav points (fragment anchors included) or, when the
TOC is missing or coarse, at the in-text chapter headings ("第七回 ...", "Chapter 7"). Several
chapters in one XHTML file are split; a chapter over several files (calibre's ``_split_NNN``, a
chapter cut in two) is joined; pages before the first chapter are front matter. Pure: the reader
in ``rag.index.epub`` hands in the pages, this returns ``Chapter``s (numbered by
``rag.index.chapters.number_chapters``)."""

from __future__ import annotations

import logging
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from rag.index.chapters import Chapter, clean_paragraphs, contents_entries, heading_kind, heading_number

log = logging.getLogger(__name__)

_BLOCK_TAGS = {
    "p", "div", "section", "article", "aside", "header", "footer", "blockquote", "pre", "li", "ul", "ol",
    "dl", "dt", "dd", "table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "br", "hr", "figure",
    "figcaption", "body", "main", "nav",
}  # fmt: skip
_HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_DROP_TAGS = {"script", "style", "head", "title", "svg", "math", "noscript", "template", "rt", "rp"}
MAX_HEADING_CHARS = 60  # an in-text heading is one short line


@dataclass
class Block:
    """One paragraph (or heading, table row) of a page, with the anchors (``id``) that point at it."""

    text: str
    ids: frozenset[str] = frozenset()
    heading: bool = False  # inside <h1>..<h6>


@dataclass
class Page:
    """One spine document: its file name (as the TOC names it), TOC title, and blocks."""

    name: str
    blocks: list[Block] = field(default_factory=list)


def html_blocks(content: bytes | str) -> list[Block]:
    """The blocks of an XHTML document in reading order; anchors on empty elements (``<a id="c7"/>``)
    belong to the next block with text."""
    import warnings

    from bs4 import BeautifulSoup, NavigableString, Tag, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(content, "lxml")
    blocks: list[Block] = []
    parts: list[str] = []
    ids: set[str] = set()
    state = {"heading": 0, "in_heading": False}

    def flush() -> None:
        text = clean_paragraphs("".join(parts))
        parts.clear()
        if text:
            blocks.append(Block(text, frozenset(ids), bool(state["in_heading"])))
            ids.clear()
        state["in_heading"] = False

    def walk(node: Any) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:  # skip comments, CDATA, doctype
                    parts.append(str(child).replace("\n", " "))
                    if state["heading"] and str(child).strip():
                        state["in_heading"] = True
            elif isinstance(child, Tag):
                name = (child.name or "").lower()
                if name in _DROP_TAGS:
                    continue
                if name == "tr":  # one table row per line, cells separated by " | "
                    flush()
                    cells = [re.sub(r"\s+", " ", c.get_text(" ", strip=True)) for c in child.find_all(["td", "th"])]
                    parts.append(" | ".join(c for c in cells if c))
                    flush()
                    continue
                block = name in _BLOCK_TAGS
                if block:
                    flush()
                for attr in ("id", "name"):
                    value = child.get(attr)
                    if isinstance(value, str) and value:
                        ids.add(value)
                heading = name in _HEADING_TAGS
                state["heading"] += heading
                walk(child)
                state["heading"] -= heading
                if block:
                    flush()

    walk(soup.body or soup)
    flush()
    return blocks


_OUTLINE_NUMBER = re.compile(r"^[0-9]{1,4}(?:\.[0-9]{1,4})*\.?\s+(?=\S)")


def section_label(title: str) -> str:
    """A heading or TOC title on one line, without the outline number a writer put before it ("2 第一回
    ..." from pandoc's ``--number-sections``, "1.3 Preface") when what follows is a chapter or front /
    back matter heading of its own."""
    title = re.sub(r"\s+", " ", title).strip()
    m = _OUTLINE_NUMBER.match(title)
    if m and heading_kind(title[m.end() :]) in {"chapter", "matter"}:
        return title[m.end() :]
    return title


def toc_entries(toc: Any) -> list[tuple[str, str, str]]:
    """(file, fragment, title) of every TOC / nav entry in reading order, nested ones included."""
    from ebooklib import epub

    out: list[tuple[str, str, str]] = []

    def add(href: str | None, title: str | None) -> None:
        if not href:
            return
        file, _, fragment = href.partition("#")
        out.append((posixpath.normpath(unquote(file)), unquote(fragment), section_label(title or "")))

    def visit(entries: Any) -> None:
        for entry in entries if isinstance(entries, list | tuple) else [entries]:
            if isinstance(entry, tuple) and len(entry) == 2:
                add(getattr(entry[0], "href", None), getattr(entry[0], "title", None))
                visit(entry[1])
            elif isinstance(entry, epub.Link | epub.Section):
                add(getattr(entry, "href", None), entry.title)
            elif isinstance(entry, list):
                visit(entry)

    visit(toc)
    return out


Point = tuple[int, str]  # (block index in the whole book, section title)


def _toc_points(pages: list[Page], starts: list[int], toc: list[tuple[str, str, str]]) -> list[Point]:
    by_name: dict[str, int] = {}
    for i, each in enumerate(pages):
        by_name.setdefault(each.name, i)
        by_name.setdefault(posixpath.basename(each.name), i)
    points: dict[int, str] = {}
    for file, fragment, title in toc:
        page = by_name.get(file, by_name.get(posixpath.basename(file)))
        if page is None or not title or heading_kind(title) == "contents":  # "目录" starts no chapter
            continue
        at = starts[page]
        if fragment:
            at = next((starts[page] + k for k, b in enumerate(pages[page].blocks) if fragment in b.ids), at)
        # of two entries at one place (a part and its first chapter), the numbered chapter names it
        if at not in points or (heading_number(title) is not None and heading_number(points[at]) is None):
            points[at] = title
    return sorted(points.items())


def _heading_points(blocks: list[Block], kinds: frozenset[str] = frozenset({"chapter", "matter"})) -> list[Point]:
    points = []
    for i, block in enumerate(blocks):
        line = block.text.strip()
        label = section_label(line)
        if len(line) <= MAX_HEADING_CHARS and "\n" not in line and heading_kind(label) in kinds:
            points.append((i, label))
    return points


def _contents_blocks(blocks: list[Block]) -> set[int]:
    """The blocks of a contents list in the text, wherever the files cut it: a "目录" / "Contents"
    line and the entries after it that come again as headings, or a run of headings with little text
    between them that come again later (``contents_entries``), and the short lines between two of
    its entries."""
    points = _heading_points(blocks, frozenset({"chapter", "matter", "contents"}))
    if not points:  # a book without in-text headings (its TOC alone says where chapters start)
        return set()
    ends = [p[0] for p in points[1:]] + [len(blocks)]
    gaps = [sum(len(b.text) for b in blocks[a + 1 : e]) for (a, _), e in zip(points, ends, strict=True)]
    drop = contents_entries([t for _, t in points], gaps)
    out = {points[n][0] for n in drop}
    for n in drop:
        if n + 1 in drop:
            out.update(range(points[n][0] + 1, points[n + 1][0]))
    return out


def _numbered(points: list[Point]) -> int:
    return sum(heading_number(t) is not None for _, t in points)


def split_pages(pages: list[Page], toc: list[tuple[str, str, str]]) -> list[Chapter]:
    """The book's chapters from its pages: at the TOC's places when the TOC numbers as many chapters
    as the text's headings do, else at the headings (with the TOC's labelled entries before them);
    a book with neither is split by page, titled by each page's first heading."""
    contents = _contents_blocks([b for page in pages for b in page.blocks])
    blocks: list[Block] = []
    starts: list[int] = []
    seen = 0
    for page in pages:
        starts.append(len(blocks))
        blocks.extend(b for k, b in enumerate(page.blocks, start=seen) if k not in contents)
        seen += len(page.blocks)
    pages = [Page(p.name, blocks[a:b]) for p, a, b in zip(pages, starts, [*starts[1:], len(blocks)], strict=True)]
    if contents:
        log.debug("EPUB: %d lines of a contents list left out", len(contents))
    by_toc = _toc_points(pages, starts, toc)
    by_heading = _heading_points(blocks)
    if by_heading and _numbered(by_heading) > _numbered(by_toc):
        first, end = by_heading[0][0], by_heading[-1][0]
        points = sorted([p for p in by_toc if not first <= p[0] <= end and heading_number(p[1]) is None]
                        + by_heading)
        log.debug("EPUB: %d chapters from in-text headings (the TOC has %d)", len(by_heading), len(by_toc))
    elif by_toc:
        # a page the TOC leaves out starts a section of its own when it opens with a heading
        covered = {at for at, _ in by_toc}
        points = sorted(by_toc + [(s, section_label(p.blocks[0].text)) for s, p in zip(starts, pages, strict=True)
                                  if p.blocks and p.blocks[0].heading and s not in covered])
    else:
        points = [(s, section_label(next((b.text for b in p.blocks if b.heading), "")))
                  for s, p in zip(starts, pages, strict=True) if p.blocks]
    chapters: list[Chapter] = []
    if not points or points[0][0] > 0:
        front = blocks[: points[0][0] if points else len(blocks)]
        chapters.append(Chapter(None, "", "\n".join(b.text for b in front)))
    for n, (at, title) in enumerate(points):
        end = points[n + 1][0] if n + 1 < len(points) else len(blocks)
        body = blocks[at:end]
        if body and (body[0].heading or _same(body[0].text, title)):
            body = body[1:]  # the heading the title already says
        chapters.append(Chapter(None, title, "\n".join(b.text for b in body)))
    return [c for c in chapters if c.text.strip()]


def _same(a: str, b: str) -> bool:
    def key(s: str) -> str:
        return re.sub(r"\W+", "", s).lower()

    return bool(key(a)) and (key(a) == key(b) or key(b).startswith(key(a)))
