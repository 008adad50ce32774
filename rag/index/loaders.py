"""Read a book file (EPUB, TXT, Markdown) into clean chapters.

Every failure a user can cause (wrong file type, DRM, no text, unknown encoding, too large) raises
``BookError`` with a message that says what is wrong and, when possible, what to do.
"""

from __future__ import annotations

import logging
import posixpath
import re
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from rag.errors import BookError

log = logging.getLogger(__name__)

TEXT_SUFFIXES = {".txt", ".text"}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown"}
EPUB_SUFFIXES = {".epub"}
SUPPORTED = ".epub, .txt, .md"

# Pages that carry no story: matched against the spine item's id / file name / title.
_SKIP_PAGE = re.compile(
    r"(^|[\W_])(cover|titlepage|title-page|copyright|colophon|toc|contents|nav|imprint)([\W_]|$)|版权|封面|目录",
    re.IGNORECASE,
)
_MIN_FRONT_MATTER_CHARS = 40  # text before the first heading shorter than this is dropped (e.g. the title line)

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_NUM = r"[0-9０-９零〇一二三四五六七八九十百千两]+"
# "第二十七回 ...", optionally after a short prefix such as "《》目录 " (seen in real files).
_CN_HEADING = re.compile(rf"^(?:\S{{0,8}}\s+)?(第\s*({_NUM})\s*[回章节卷部篇集](?:[\s:：、.·—-].*)?)$")
_EN_HEADING = re.compile(r"^((?:chapter|book|part)\s+([0-9]+|[ivxlcdm]+)\b.*)$", re.IGNORECASE)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_MAX_HEADING_CHARS = 60


@dataclass
class Chapter:
    num: int | None
    title: str
    text: str  # paragraphs separated by "\n", no leading/trailing blanks


@dataclass
class LoadedBook:
    title: str
    source: str  # file name
    format: str  # "epub" | "txt" | "md"
    chapters: list[Chapter] = field(default_factory=list)

    @property
    def chars(self) -> int:
        return sum(len(c.text) for c in self.chapters)


# ----------------------------------------------------------------------------------------- helpers


def parse_number(token: str) -> int | None:
    """'二十七' -> 27, '一百' -> 100, '27' -> 27, 'xii' -> 12; None when it is not a number."""
    token = unicodedata.normalize("NFKC", token.strip()).lower()
    if not token:
        return None
    if token.isdigit():
        return int(token)
    if re.fullmatch(r"[ivxlcdm]+", token):
        values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
        total = 0
        for i, ch in enumerate(token):
            v = values[ch]
            total += -v if i + 1 < len(token) and values[token[i + 1]] > v else v
        return total
    total, current = 0, 0
    for ch in token:
        if ch in _CN_DIGITS:
            current = current * 10 + _CN_DIGITS[ch] if current and ch in "零〇" else _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            total += (current or 1) * _CN_UNITS[ch]
            current = 0
        else:
            return None
    return total + current


def clean_paragraphs(text: str) -> str:
    """Strip every line, drop blank ones, collapse inner runs of spaces (keeps paragraph breaks)."""
    lines = []
    for raw in text.splitlines():
        line = re.sub(r"[ \t\u00a0\u3000]+", " ", raw).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


# A chapter's last line that only says the chapter (or book) ends: "(本章完)", "（全书完）", "本回完",
# "(未完待续)". It carries nothing to retrieve and made every chapter's last chunk alike.
_TRAILER = re.compile(r"^[(（\[【]?\s*(?:本[章回卷节]完|全书完|全文完|未完待续|待续|完)\s*[)）\]】]?$")


def drop_trailers(text: str) -> str:
    """``text`` without its trailing end-of-chapter lines."""
    lines = text.split("\n")
    while lines and (not lines[-1].strip() or _TRAILER.match(lines[-1].strip())):
        lines.pop()
    return "\n".join(lines)


def heading_number(title: str) -> int | None:
    m = _CN_HEADING.match(title.strip())
    if m:
        return parse_number(m.group(2))
    m = _EN_HEADING.match(title.strip())
    if m:
        return parse_number(m.group(2))
    return None


def _number_chapters(chapters: list[Chapter]) -> list[Chapter]:
    """Use the number in the heading ("第二十七回" -> 27) when every numbered heading is increasing;
    otherwise number chapters 1..n in reading order. Front matter before chapter 1 gets 0."""
    parsed = [heading_number(c.title) for c in chapters]
    numbered = [p for p in parsed if p is not None]
    use_parsed = len(numbered) >= max(1, len(chapters) // 2) and all(
        a < b for a, b in zip(numbered, numbered[1:], strict=False)
    )
    out: list[Chapter] = []
    seq = 0
    for chapter, num in zip(chapters, parsed, strict=True):
        if use_parsed:
            chapter.num = num if num is not None else (0 if not out or out[-1].num in (None, 0) else None)
        else:
            seq += 1
            chapter.num = seq
        out.append(chapter)
    return out


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
                raise BookError(f"{name}: starts with a {encoding} byte-order mark but is not valid {encoding} ({exc.reason}).") from exc
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
    raise BookError(
        f"{name}: unknown text encoding (not UTF-8, UTF-16 with BOM or GB18030/GBK). "
        "Save the file as UTF-8 and try again."
    )


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
        raise BookError(f"{name}: decoding as {encoding} gives binary garbage; unknown text encoding or not a text file.")
    return text


def split_text_chapters(text: str, markdown: bool = False) -> tuple[str | None, list[Chapter]]:
    """Split plain text (or Markdown) on chapter headings. Returns (title found in the text, chapters)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    title: str | None = None
    headings: list[tuple[int, str]] = []  # (line index, heading title)
    if markdown:
        levels: dict[int, list[tuple[int, str]]] = {}
        in_code = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else _MD_HEADING.match(line)
            if m:
                levels.setdefault(len(m.group(1)), []).append((i, _strip_inline_markdown(m.group(2))))
        if levels:
            top = min(levels)
            if len(levels[top]) == 1 and len(levels) > 1:
                # A single top heading is the book title; chapters are the next level down.
                title = levels[top][0][1]
                headings = [h for lvl, hs in levels.items() if lvl == min(k for k in levels if k > top) for h in hs]
            else:
                headings = levels[top]
    else:
        for i, line in enumerate(lines):
            stripped = line.strip()
            if not stripped or len(stripped) > _MAX_HEADING_CHARS:
                continue
            m = _CN_HEADING.match(stripped) or _EN_HEADING.match(stripped)
            if m:
                headings.append((i, re.sub(r"[\s\u3000]+", " ", m.group(1)).strip()))
        first = next((ln.strip() for ln in lines if ln.strip()), "")
        m = re.fullmatch(r"《(.{1,40})》", first)
        if m:
            title = m.group(1)
    headings.sort()

    def body(a: int, b: int) -> str:
        chunk = "\n".join(lines[a:b])
        if markdown:
            chunk = "\n".join(_strip_inline_markdown(ln) for ln in chunk.split("\n") if not _MD_HEADING.match(ln))
        return clean_paragraphs(chunk)

    chapters: list[Chapter] = []
    first_line = headings[0][0] if headings else len(lines)
    front = body(0, first_line)
    if title and front.startswith(f"《{title}》"):
        front = front[len(title) + 2 :].strip()
    if len(front) >= _MIN_FRONT_MATTER_CHARS or not headings:
        chapters.append(Chapter(None, "" if headings else (title or ""), front))
    for n, (line_no, heading) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(lines)
        chapters.append(Chapter(None, heading, body(line_no + 1, end)))
    chapters = [c for c in chapters if c.text.strip()]
    return title, _number_chapters(chapters)


def _strip_inline_markdown(line: str) -> str:
    line = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", line)  # images -> alt text
    line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)  # links -> text
    line = re.sub(r"(\*\*|__|\*|`)", "", line)
    line = re.sub(r"^\s{0,3}>\s?", "", line)  # block quotes
    line = re.sub(r"^\s*([-*+]|\d+\.)\s+", "", line)  # list markers
    if re.fullmatch(r"\s*(-{3,}|\*{3,}|_{3,}|\|?[\s:|-]+\|?)\s*", line):
        return ""  # rules and table separators
    return line.replace("|", " ").strip() if line.count("|") >= 2 else line


# -------------------------------------------------------------------------------------------- EPUB

_BLOCK_TAGS = {
    "p", "div", "section", "article", "aside", "header", "footer", "blockquote", "pre", "li", "ul", "ol",
    "dl", "dt", "dd", "table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "br", "hr", "figure",
    "figcaption", "body", "main", "nav",
}  # fmt: skip
_DROP_TAGS = {"script", "style", "head", "title", "svg", "math", "noscript", "template"}


def html_to_text(content: bytes | str) -> tuple[str, str]:
    """(first heading, clean text with one paragraph per line) from an XHTML document."""
    import warnings

    from bs4 import BeautifulSoup, NavigableString, Tag, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        # XHTML through the lenient HTML parser on purpose: real EPUBs are often not well-formed XML.
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(content, "lxml")
    heading = ""
    for level in ("h1", "h2", "h3"):
        tag = soup.find(level)
        if tag is not None and tag.get_text(strip=True):
            heading = re.sub(r"\s+", " ", tag.get_text(" ", strip=True))
            break
    root = soup.body or soup
    parts: list[str] = []

    def walk(node: Any) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:  # skip comments, CDATA, doctype
                    parts.append(str(child).replace("\n", " "))
            elif isinstance(child, Tag):
                name = (child.name or "").lower()
                if name in _DROP_TAGS:
                    continue
                if name in {"rt", "rp"}:  # ruby annotations (pinyin) would pollute the text
                    continue
                if name == "tr":  # one table row per line, cells separated by " | "
                    cells = [
                        re.sub(r"\s+", " ", cell.get_text(" ", strip=True)) for cell in child.find_all(["td", "th"])
                    ]
                    parts.append("\n" + " | ".join(c for c in cells if c) + "\n")
                    continue
                block = name in _BLOCK_TAGS
                if block:
                    parts.append("\n")
                walk(child)
                if block:
                    parts.append("\n")

    walk(root)
    return heading, clean_paragraphs("".join(parts))


# Zip-bomb limits. A book's text compresses about 2-6 times (Chinese 2-3, markup-heavy XHTML more);
# a member that inflates 1000 times (the deflate maximum) is a bomb, not a book.
EPUB_INFLATE_FACTOR = 4  # everything inside may inflate to at most 4 x MAX_BOOK_MB
EPUB_MEMBER_FACTOR = 2  # one member to at most 2 x MAX_BOOK_MB
EPUB_MAX_RATIO = 100  # uncompressed / compressed, checked on members (and archives) above RATIO_FLOOR
EPUB_RATIO_FLOOR = 1 << 20  # bytes; tiny members may compress very well (a CSS file of spaces)
EPUB_MAX_MEMBERS = 10_000
_READ_CHUNK = 1 << 16


@dataclass
class ZipLimits:
    """What an EPUB may inflate to, derived from MAX_BOOK_MB (see ``for_book``)."""

    member_bytes: int
    total_bytes: int
    max_ratio: float = EPUB_MAX_RATIO
    max_members: int = EPUB_MAX_MEMBERS

    @classmethod
    def for_book(cls, max_mb: float) -> ZipLimits:
        mb = max(float(max_mb), 1.0) * 1024 * 1024
        return cls(member_bytes=int(EPUB_MEMBER_FACTOR * mb), total_bytes=int(EPUB_INFLATE_FACTOR * mb))


def _mb(n: float) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


def check_zip_directory(zf: zipfile.ZipFile, name: str, limits: ZipLimits, archive_bytes: int) -> None:
    """Reject a ZIP bomb from its central directory alone, before any member is inflated."""
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise BookError(f"{name}: the EPUB holds {len(infos)} files; the limit is {limits.max_members}.")
    total = 0
    for info in infos:
        size, packed = info.file_size, max(info.compress_size, 1)
        if size > limits.member_bytes:
            raise BookError(
                f"{name}: {info.filename} inflates to {_mb(size)}, more than the {_mb(limits.member_bytes)} "
                "allowed for one file inside an EPUB (setting MAX_BOOK_MB); this looks like a ZIP bomb."
            )
        if size > EPUB_RATIO_FLOOR and size / packed > limits.max_ratio:
            raise BookError(
                f"{name}: {info.filename} inflates {size / packed:.0f} times ({_mb(packed)} -> {_mb(size)}); "
                f"more than {limits.max_ratio:g} times is a ZIP bomb, not a book."
            )
        total += size
    if total > limits.total_bytes:
        raise BookError(
            f"{name}: the EPUB inflates to {_mb(total)}, more than the {_mb(limits.total_bytes)} allowed "
            "(setting MAX_BOOK_MB); this looks like a ZIP bomb."
        )
    if total > EPUB_RATIO_FLOOR and total / max(archive_bytes, 1) > limits.max_ratio:
        raise BookError(
            f"{name}: the EPUB inflates {total / max(archive_bytes, 1):.0f} times; "
            f"more than {limits.max_ratio:g} times is a ZIP bomb, not a book."
        )


class BoundedZipReader:
    """Reads members of a checked ZIP with a cap per member and in total: the central directory can
    lie about sizes, so the inflated stream itself is counted and cut off."""

    def __init__(self, zf: zipfile.ZipFile, name: str, limits: ZipLimits) -> None:
        self.zf, self.name, self.limits = zf, name, limits
        self.read_total = 0

    def read(self, member: str) -> bytes:
        info = self.zf.getinfo(member)  # KeyError for a missing member, as ZipFile.read
        cap = min(info.file_size, self.limits.member_bytes, self.limits.total_bytes - self.read_total)
        parts: list[bytes] = []
        got = 0
        try:
            with self.zf.open(info) as fh:
                while True:
                    chunk = fh.read(_READ_CHUNK)
                    if not chunk:
                        break
                    got += len(chunk)
                    if got > cap:
                        raise BookError(
                            f"{self.name}: {member} inflates to more than its directory says or the limit allows "
                            f"({_mb(cap)}); the EPUB is damaged or a ZIP bomb."
                        )
                    parts.append(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise BookError(f"{self.name}: the EPUB archive is damaged ({member}: {exc}).") from exc
        self.read_total += got
        return b"".join(parts)


def _check_epub_container(path: Path, name: str, limits: ZipLimits) -> None:
    if not zipfile.is_zipfile(path):
        raise BookError(f"{name}: not a valid EPUB (it is not a ZIP archive). Supported formats: {SUPPORTED}.")
    try:
        with zipfile.ZipFile(path) as zf:
            check_zip_directory(zf, name, limits, path.stat().st_size)  # before anything is inflated
            names = set(zf.namelist())
            if "META-INF/container.xml" not in names:
                raise BookError(f"{name}: this ZIP file is not an EPUB (no META-INF/container.xml).")
            reader = BoundedZipReader(zf, name, limits)
            if "META-INF/encryption.xml" in names and _drm_encrypted(reader.read("META-INF/encryption.xml")):
                raise BookError(
                    f"{name}: this EPUB is DRM-protected (its text is encrypted, see META-INF/encryption.xml) "
                    "and cannot be read. Use a DRM-free copy."
                )
            bad = zf.testzip()  # streams each member once (sizes already bounded above)
            if bad is not None:
                raise BookError(f"{name}: the EPUB archive is damaged (bad entry {bad}).")
    except zipfile.BadZipFile as exc:
        raise BookError(f"{name}: the EPUB archive is damaged ({exc}).") from exc


_FONT_OBFUSCATION = {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}


def _drm_encrypted(xml: bytes) -> bool:
    """True if encryption.xml encrypts anything besides obfuscated fonts (which is harmless)."""
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError:
        return True
    found = False
    for data in root.iter():
        if not data.tag.endswith("EncryptedData"):
            continue
        method = next((el for el in data.iter() if el.tag.endswith("EncryptionMethod")), None)
        algorithm = method.get("Algorithm", "") if method is not None else ""
        ref = next((el for el in data.iter() if el.tag.endswith("CipherReference")), None)
        uri = (ref.get("URI", "") if ref is not None else "").lower()
        is_font = uri.endswith((".otf", ".ttf", ".woff", ".woff2")) or algorithm in _FONT_OBFUSCATION
        if not is_font:
            found = True
    return found


def _toc_titles(toc: Any) -> dict[str, str]:
    """href file (without fragment) -> first TOC title pointing at it."""
    from ebooklib import epub

    titles: dict[str, str] = {}

    def visit(entries: Any) -> None:
        for entry in entries:
            if isinstance(entry, tuple) and len(entry) == 2:
                section, children = entry
                if getattr(section, "href", None):
                    _add(section.href, section.title)
                visit(children)
            elif isinstance(entry, epub.Link | epub.Section):
                if getattr(entry, "href", None):
                    _add(entry.href, entry.title)
            elif isinstance(entry, list):
                visit(entry)

    def _add(href: str, title: str | None) -> None:
        key = posixpath.normpath(unquote(href.split("#", 1)[0]))
        if title and key not in titles:
            titles[key] = re.sub(r"\s+", " ", title).strip()

    visit(toc)
    return titles


def _read_epub(path: Path, name: str, limits: ZipLimits) -> Any:
    """``ebooklib.epub.read_epub`` with every member read through a ``BoundedZipReader``."""
    from ebooklib import epub

    class Reader(epub.EpubReader):
        def read_file(self, member: str) -> bytes:
            bounded = getattr(self, "_bounded", None)
            if bounded is None or bounded.zf is not self.zf:
                bounded = self._bounded = BoundedZipReader(self.zf, name, limits)
            return bounded.read(posixpath.normpath(member))

    reader = Reader(str(path), {"ignore_ncx": False})
    book = reader.load()
    reader.process()
    return book


def load_epub(path: Path, name: str, max_mb: float = 50.0) -> LoadedBook:
    limits = ZipLimits.for_book(max_mb)
    _check_epub_container(path, name, limits)
    import ebooklib
    from ebooklib import epub

    try:
        book = _read_epub(path, name, limits)
    except BookError:
        raise
    except Exception as exc:  # ebooklib raises many kinds (KeyError, EpubException, XML errors)
        raise BookError(f"{name}: the EPUB could not be read ({type(exc).__name__}: {exc}).") from exc

    meta_title = book.get_metadata("DC", "title")
    title = meta_title[0][0].strip() if meta_title and meta_title[0][0] else ""
    toc = _toc_titles(book.toc)
    chapters: list[Chapter] = []
    for entry in book.spine:
        idref = entry[0] if isinstance(entry, tuple) else entry
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or isinstance(item, epub.EpubNav):
            continue
        file_name = posixpath.normpath(item.get_name())
        if "nav" in (getattr(item, "properties", None) or []):
            continue
        toc_title = toc.get(file_name) or toc.get(posixpath.basename(file_name), "")
        try:
            heading, text = html_to_text(item.get_content())
        except Exception as exc:
            log.warning("%s: skipping unreadable page %s (%s)", name, file_name, exc)
            continue
        chapter_title = toc_title or heading
        label = f"{idref} {posixpath.basename(file_name)} {chapter_title}"
        if _SKIP_PAGE.search(label) and len(text) < 2000:
            log.debug("%s: skipping %s (cover/nav/copyright page)", name, file_name)
            continue
        if not text:
            continue
        if heading and text.startswith(heading):
            text = text[len(heading) :].lstrip("\n")
        chapters.append(Chapter(None, chapter_title, text))
    chapters = [c for c in chapters if c.text.strip()]
    if not chapters:
        raise BookError(f"{name}: the EPUB contains no readable text (only images, or empty pages).")
    return LoadedBook(title=title or path.stem, source=name, format="epub", chapters=_number_chapters(chapters))


# ------------------------------------------------------------------------------------------ public


def load_book(path: str | Path, max_mb: float = 50.0, name: str | None = None) -> LoadedBook:
    """Read ``path`` into chapters. ``name`` overrides the title. Raises ``BookError``."""
    path = Path(path)
    display = path.name or str(path)
    if not path.exists():
        raise BookError(f"{display}: file not found.")
    if not path.is_file():
        raise BookError(f"{display}: not a file.")
    size = path.stat().st_size
    if size == 0:
        raise BookError(f"{display}: the file is empty (0 bytes).")
    if size > max_mb * 1024 * 1024:
        raise BookError(
            f"{display}: the file is too large ({size / 1024 / 1024:.1f} MB); the limit is {max_mb:g} MB "
            "(setting MAX_BOOK_MB)."
        )
    suffix = path.suffix.lower()
    with path.open("rb") as fh:
        magic = fh.read(4)
    if suffix in EPUB_SUFFIXES or (suffix not in TEXT_SUFFIXES | MARKDOWN_SUFFIXES and magic == b"PK\x03\x04"):
        book = load_epub(path, display, max_mb)
    elif suffix in TEXT_SUFFIXES | MARKDOWN_SUFFIXES or suffix == "":
        if magic == b"PK\x03\x04":
            raise BookError(f"{display}: this is a ZIP archive, not a text file. Supported formats: {SUPPORTED}.")
        markdown = suffix in MARKDOWN_SUFFIXES
        text = decode_text(path.read_bytes(), display)
        found_title, chapters = split_text_chapters(text, markdown=markdown)
        book = LoadedBook(
            title=found_title or path.stem, source=display, format="md" if markdown else "txt", chapters=chapters
        )
    else:
        raise BookError(f"{display}: unsupported file type '{suffix}'. Supported formats: {SUPPORTED}.")
    for chapter in book.chapters:
        chapter.text = drop_trailers(chapter.text)
    if book.chars == 0 or not any(c.text.strip() for c in book.chapters):
        raise BookError(f"{display}: the book contains no text.")
    if name and name.strip():
        book.title = name.strip()
    return book

