"""Read a book file (EPUB, TXT, Markdown) into clean chapters: ``load_book``. TXT and Markdown are
read here (encodings, chapter headings, Markdown markup); EPUB in ``rag.index.epub``.

Every failure a user can cause (wrong file type, DRM, no text, unknown encoding, too large) raises
``BookError`` with a ``book.*`` message that says what is wrong and, when possible, what to do.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from pathlib import Path

from rag.errors import BookError
from rag.i18n import Msg, t
from rag.index.chapters import (
    CN_HEADING,
    CONTENTS_HEADING,
    EN_HEADING,
    MATTER_HEADING,
    SUPPORTED,
    Chapter,
    LoadedBook,
    clean_paragraphs,
    contents_entries,
    drop_trailers,
    heading_kind,
    layout_titles,
    number_chapters,
)
from rag.index.epub import load_epub
from rag.lang import detect_lang

log = logging.getLogger(__name__)

TEXT_SUFFIXES = {".txt", ".text"}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown"}
EPUB_SUFFIXES = {".epub"}

_MIN_FRONT_MATTER_CHARS = 40  # text before the first heading shorter than this is dropped (e.g. the title line)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_MAX_HEADING_CHARS = 60


# --------------------------------------------------------------------------------------------- TXT


def decode_text(data: bytes, name: str) -> str:
    """Decode bytes with a BOM, else UTF-8, else the detected encoding (GB18030/GBK, Big5, ...)."""
    boms = [
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe\x00\x00", "utf-32"),
        (b"\x00\x00\xfe\xff", "utf-32"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ]
    for bom, encoding in boms:
        if data.startswith(bom):
            try:
                return _check_text(data.decode(encoding), name, encoding)
            except UnicodeDecodeError as exc:
                raise BookError(Msg.of("book.bad_bom", level="error", name=name, encoding=encoding,
                                       reason=exc.reason)) from exc
    try:
        return _check_text(data.decode("utf-8"), name, "utf-8")
    except UnicodeDecodeError:
        pass
    if b"\x00" not in data[:4096]:
        # Chinese files without BOM are almost always GB18030 (a superset of GBK and GB2312).
        try:
            return _check_text(data.decode("gb18030"), name, "gb18030")
        except (UnicodeDecodeError, BookError):
            pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:400_000]).best()
    if best is not None and best.encoding and best.chaos < 0.2:
        try:
            return _check_text(data.decode(best.encoding), name, best.encoding)
        except (UnicodeDecodeError, LookupError):
            pass
    raise BookError(Msg.of("book.unknown_encoding", level="error", name=name))


def _check_text(text: str, name: str, encoding: str) -> str:
    """Reject decodings that produce binary garbage (control characters, private-use or unassigned)."""
    sample = text[:200_000]
    if not sample.strip():
        return text
    bad = sum(
        1
        for ch in sample
        if (unicodedata.category(ch) in {"Cc", "Co", "Cn", "Cs"} and ch not in "\n\r\t\f\v")
        or ch == "\ufffd"
    )
    if bad / len(sample) > 0.01:
        raise BookError(Msg.of("book.binary_garbage", level="error", name=name, encoding=encoding))
    return text


Headings = list[tuple[int, str]]  # (line index, heading title)


def _markdown_headings(lines: list[str]) -> tuple[str | None, Headings]:
    """(the book's title, the chapter headings) of Markdown: the top level's headings, or the next
    level's when a single top heading is the title. Fenced code is not searched."""
    levels: dict[int, Headings] = {}
    in_code = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else _MD_HEADING.match(line)
        if m:
            levels.setdefault(len(m.group(1)), []).append((i, _strip_inline_markdown(m.group(2))))
    if not levels:
        return None, []
    top = min(levels)
    if len(levels[top]) == 1 and len(levels) > 1:
        # A single top heading is the book title; chapters are the next level down.
        below = min(k for k in levels if k > top)
        return levels[top][0][1], list(levels[below])
    return None, list(levels[top])


def _text_headings(lines: list[str]) -> tuple[str | None, Headings]:
    """(the title of a first line "《书名》", the headings) of plain text: chapters ("第N回 ...",
    "Chapter N"), front and back matter ("序", "Preface", "Letter 1") and contents lists ("目录")."""
    headings: Headings = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or len(stripped) > _MAX_HEADING_CHARS:
            continue
        m = CN_HEADING.match(stripped) or EN_HEADING.match(stripped)
        if m:
            headings.append((i, re.sub(r"[\s\u3000]+", " ", m.group(1)).strip()))
        elif MATTER_HEADING.match(stripped) or CONTENTS_HEADING.match(stripped):
            headings.append((i, re.sub(r"[\s\u3000]+", " ", stripped)))
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    m = re.fullmatch(r"《(.{1,40})》", first)
    return (m.group(1) if m else None), headings


# A Project Gutenberg file: the book is between these lines; the header before them names it.
_PG_START = re.compile(r"^\s*\*{3}\s*START OF\b.*$", re.IGNORECASE | re.MULTILINE)
_PG_END = re.compile(r"^\s*\*{3}\s*END OF\b.*$", re.IGNORECASE | re.MULTILINE)
_PG_FIELD = re.compile(r"^(Title|Author):[ \t]*(.+(?:\n[ \t]+\S.*)*)", re.IGNORECASE | re.MULTILINE)
_PG_TRAILER = re.compile(r"^\s*End of (?:the )?Project Gutenberg.*$", re.IGNORECASE | re.MULTILINE)


def gutenberg_text(text: str) -> tuple[str, dict[str, str]]:
    """(the book's text, {"title": ..., "author": ...} from the header) of a Project Gutenberg file:
    only what lies between ``*** START OF`` and ``*** END OF`` (licence and boilerplate out). Text
    without those lines comes back as it is, with no fields."""
    start = _PG_START.search(text)
    if start is None:
        return text, {}
    end = _PG_END.search(text, start.end())
    fields = {m.group(1).lower(): re.sub(r"\s+", " ", m.group(2)).strip()
              for m in _PG_FIELD.finditer(text, 0, start.start())}
    body = text[start.end() : end.start() if end else len(text)]
    trailer = _PG_TRAILER.search(body)
    return (body[: trailer.start()] if trailer else body), fields


_CN_AUTHOR = re.compile(r"^[ \t\u3000]*(?:作者|著者|作\s*者)[:：][ \t\u3000]*(\S.{0,40}?)[ \t\u3000]*$", re.MULTILINE)


def header_author(text: str) -> str:
    """The author a Chinese TXT names in its first lines ("作者：吴承恩"), else ""."""
    m = _CN_AUTHOR.search(text, 0, 2000)
    return m.group(1) if m else ""


_YAML = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_YAML_FIELD = re.compile(r"^(title|author):[ \t]*(.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)


def yaml_front_matter(text: str) -> tuple[str, dict[str, str]]:
    """(the Markdown without its YAML block, {"title": ..., "author": ...} from it)."""
    m = _YAML.match(text)
    if m is None:
        return text, {}
    fields = {}
    for f in _YAML_FIELD.finditer(m.group(1)):
        value = f.group(2).strip().strip("\"'").strip()
        if value:
            fields[f.group(1).lower()] = value
    return text[m.end() :], fields


# Hard-wrapped text (鲁迅 e-texts at ~36 characters, Project Gutenberg at ~70): most lines stop at
# nearly the same width, wherever the sentence is. A wrap is not a paragraph break: joined back, a
# sentence is not split between chunks and a quote across the wrap is found. Texts whose lines are
# paragraphs (a 95th-percentile line far longer than this) are left alone.
_MAX_WRAP_WIDTH = 100
_FULL_LINE = 0.75  # of the wrap width: a line this long was (probably) wrapped, not ended
_MIN_WRAPPED_SHARE = 0.5  # of the non-blank lines: this many full lines make a text hard-wrapped
_MIN_LINES = 40
_CJK_EDGE = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f“”‘’…—]")


def wrap_width(lines: list[str]) -> int | None:
    """The width ``lines`` are hard-wrapped at, or None when they are not: most lines reach nearly
    the same width, and a full line is often followed by another (a paragraph runs over several
    lines; one short paragraph a line, or headings between one-line sections, do not)."""
    lengths = [len(ln.rstrip()) if ln.strip() else 0 for ln in lines]
    widths = sorted(n for n in lengths if n)
    if len(widths) < _MIN_LINES:
        return None
    width = widths[int(len(widths) * 0.95)]
    if width > _MAX_WRAP_WIDTH:
        return None
    full = [n >= _FULL_LINE * width for n in lengths]
    runs = sum(1 for a, b in zip(full, full[1:], strict=False) if a and b)
    wrapped = sum(full) >= _MIN_WRAPPED_SHARE * len(widths) and runs >= _MIN_WRAPPED_SHARE * sum(full)
    return width if wrapped else None


def unwrap_lines(lines: list[str]) -> list[str]:
    """``lines`` with hard wraps joined: in a hard-wrapped text (``wrap_width``), a line that reaches
    the wrap width continues on the next line unless that one is blank, indented (a new paragraph)
    or a heading (a lower-case line is not: a wrapped sentence may go on with "postscript to this
    effect:", which would look like front matter). Indented means more than the text's usual indent (a Gutenberg text may indent
    every line). Chinese joins without a space, other text with one. Anything else as it was."""
    width = wrap_width(lines)
    if width is None:
        return lines
    indents = Counter(len(ln) - len(ln.lstrip()) for ln in lines if ln.strip())
    base = indents.most_common(1)[0][0]
    out: list[str] = []
    joinable = False  # whether out[-1] reached the wrap width
    for line in lines:
        stripped = line.strip()
        continues = (joinable and stripped and len(line) - len(line.lstrip()) <= base
                     and (heading_kind(stripped) is None or stripped[:1].islower()))
        if continues:
            prev = out[-1].rstrip()
            glue = "" if _CJK_EDGE.match(prev[-1:]) or _CJK_EDGE.match(stripped[:1]) else " "
            out[-1] = prev + glue + stripped
        else:
            out.append(line)
        joinable = bool(stripped) and len(line.rstrip()) >= _FULL_LINE * width
    return out


def split_text_chapters(text: str, markdown: bool = False) -> tuple[str | None, list[Chapter]]:
    """Split plain text (or Markdown) on its headings. Returns (title found in the text, chapters).
    A contents list (``contents_entries``) is not taken for chapters: what follows its last entry
    before the next heading stays, as untitled front matter."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n") if markdown else unwrap_lines(text.split("\n"))
    title, headings = _markdown_headings(lines) if markdown else _text_headings(lines)
    by_layout: set[int] = set()
    if not markdown:
        by_layout = set(layout_titles(lines, [h[0] for h in headings]))
        headings += [(i, re.sub(r"[\s\u3000]+", " ", lines[i]).strip()) for i in by_layout]
    headings.sort()

    def body(a: int, b: int) -> str:
        chunk = "\n".join(lines[a:b])
        if markdown:
            chunk = "\n".join(_strip_inline_markdown(ln) for ln in chunk.split("\n") if not _MD_HEADING.match(ln))
        return clean_paragraphs(chunk)

    ends = [h[0] for h in headings[1:]] + [len(lines)] if headings else []
    bodies = [body(line_no + 1, end) for (line_no, _), end in zip(headings, ends, strict=True)]
    contents = contents_entries([h for _, h in headings], [len(b) for b in bodies])
    chapters: list[Chapter] = []
    first_line = headings[0][0] if headings else len(lines)
    front = body(0, first_line)
    if title and front.startswith(f"《{title}》"):
        front = front[len(title) + 2 :].strip()
    if len(front) >= _MIN_FRONT_MATTER_CHARS or not headings:
        chapters.append(Chapter(None, "" if headings else (title or ""), front))
    # A layout title straight above a heading ("阿Q正传" over "第一章 序", a byline at most between
    # them) heads that chapter.
    prefix, carried = "", ""
    for n, (line_no, heading) in enumerate(headings):
        if line_no in by_layout and len(bodies[n]) < _MIN_FRONT_MATTER_CHARS and n + 1 < len(headings):
            prefix, carried = f"{prefix}{heading} ", f"{carried}{bodies[n]}\n"
            bodies[n + 1] = f"{carried}{bodies[n + 1]}".strip()
            continue
        heading, prefix, carried = prefix + heading, "", ""
        if n not in contents:
            chapters.append(Chapter(None, heading, bodies[n]))
        elif len(bodies[n]) >= _MIN_FRONT_MATTER_CHARS:
            if chapters and not chapters[-1].title:
                chapters[-1].text = f"{chapters[-1].text}\n{bodies[n]}".strip()
            else:
                chapters.append(Chapter(None, "", bodies[n]))
    if contents:
        log.debug("contents list: %d headings not taken for chapters", len(contents))
    chapters = [c for c in chapters if c.text.strip()]
    return title, number_chapters(chapters, reading_order=bool(by_layout))


def _strip_inline_markdown(line: str) -> str:
    line = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", line)  # images -> alt text
    line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)  # links -> text
    line = re.sub(r"(\*\*|__|\*|`)", "", line)
    line = re.sub(r"^\s{0,3}>\s?", "", line)  # block quotes
    line = re.sub(r"^\s*([-*+]|\d+\.)\s+", "", line)  # list markers
    if re.fullmatch(r"\s*(-{3,}|\*{3,}|_{3,}|\|?[\s:|-]+\|?)\s*", line):
        return ""  # rules and table separators
    return line.replace("|", " ").strip() if line.count("|") >= 2 else line


def label_front_matter(chapters: list[Chapter]) -> None:
    """Give untitled front matter (text before the first chapter, without a heading of its own) a
    label instead of "Chapter 0": its own first line when that is a front-matter heading ("序言",
    "Introduction"), else ``book.front_matter`` ("前言" / "Front matter") in the book's language. It
    stays outside the numbering (number 0: before chapter 1 under a spoiler limit)."""
    untitled = [c for c in chapters if c.num == 0 and not c.title.strip()]
    if not untitled:
        return
    sample = "".join(c.text[:1000] for c in chapters[:20])
    label = t(detect_lang(sample), "book.front_matter")
    for chapter in untitled:
        first = chapter.text.split("\n", 1)[0].strip()
        own = first if len(first) <= _MAX_HEADING_CHARS and heading_kind(first) == "matter" else ""
        chapter.title = own or label


# ------------------------------------------------------------------------------------------ public


def _check_file(path: Path, display: str, max_mb: float) -> None:
    """Raise ``BookError`` unless ``path`` is a non-empty file within ``max_mb``."""
    if not path.exists():
        raise BookError(Msg.of("book.not_found", level="error", name=display))
    if not path.is_file():
        raise BookError(Msg.of("book.not_a_file", level="error", name=display))
    size = path.stat().st_size
    if size == 0:
        raise BookError(Msg.of("book.empty_file", level="error", name=display))
    if size > max_mb * 1024 * 1024:
        raise BookError(Msg.of("book.too_large", level="error", name=display, size=f"{size / 1024 / 1024:.1f}",
                               limit=f"{max_mb:g}"))


def load_book(path: str | Path, max_mb: float = 50.0, name: str | None = None) -> LoadedBook:
    """Read ``path`` into chapters. ``name`` overrides the title. Raises ``BookError``."""
    path = Path(path)
    display = path.name or str(path)
    _check_file(path, display, max_mb)
    suffix = path.suffix.lower()
    with path.open("rb") as fh:
        magic = fh.read(4)
    if suffix in EPUB_SUFFIXES or (suffix not in TEXT_SUFFIXES | MARKDOWN_SUFFIXES and magic == b"PK\x03\x04"):
        book = load_epub(path, display, max_mb)
    elif suffix in TEXT_SUFFIXES | MARKDOWN_SUFFIXES or suffix == "":
        if magic == b"PK\x03\x04":
            raise BookError(Msg.of("book.zip_not_text", level="error", name=display, formats=SUPPORTED))
        markdown = suffix in MARKDOWN_SUFFIXES
        text = decode_text(path.read_bytes(), display).replace("\r\n", "\n").replace("\r", "\n")
        text, fields = yaml_front_matter(text) if markdown else gutenberg_text(text)
        found_title, chapters = split_text_chapters(text, markdown=markdown)
        book = LoadedBook(title=fields.get("title") or found_title or path.stem, source=display,
                          format="md" if markdown else "txt", chapters=chapters, author=fields.get("author") or header_author(text))
    else:
        raise BookError(Msg.of("book.unsupported_type", level="error", name=display, suffix=suffix,
                               formats=SUPPORTED))
    for chapter in book.chapters:
        chapter.text = drop_trailers(chapter.text)
    label_front_matter(book.chapters)
    if book.chars == 0 or not any(c.text.strip() for c in book.chapters):
        raise BookError(Msg.of("book.no_text", level="error", name=display))
    if name and name.strip():
        book.title = name.strip()
    return book
