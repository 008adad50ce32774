"""Read an EPUB into chapters: the ZIP checked before anything is inflated (ZIP bombs, DRM, a ZIP
that is no EPUB), every member read with a cap, the spine in reading order with the TOC's titles,
cover / navigation / copyright pages skipped, each page's XHTML turned into clean paragraphs.
Every failure raises ``BookError`` with a ``book.*`` message."""

from __future__ import annotations

import logging
import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from rag.errors import BookError
from rag.i18n import Msg
from rag.index.chapters import SUPPORTED, LoadedBook, number_chapters
from rag.index.epub_split import Block, Page, html_blocks, split_pages, toc_entries

log = logging.getLogger(__name__)

# Pages that carry no story: matched against the spine item's id / file name / title.
_SKIP_PAGE = re.compile(
    r"(^|[\W_])(cover|title[_-]?page|copyright|colophon|toc|contents|nav|imprint)([\W_]|$)|版权|封面|目录",
    re.IGNORECASE,
)

TITLE_PAGE_CHARS = 200  # a title page says little besides the book's title and author


def _key(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _title_page(blocks: list[Block], title: str, author: str) -> bool:
    """A title page whatever its file is called (Sigil's ``Section0001.xhtml``): it opens with the
    book's title and says little else (the author, a publisher, a year)."""
    if not blocks or not title or _key(blocks[0].text) != _key(title):
        return False
    rest = [b.text for b in blocks[1:] if _key(b.text) not in {_key(title), _key(author)}]
    return sum(len(t) for t in rest) <= TITLE_PAGE_CHARS


def html_to_text(content: bytes | str) -> tuple[str, str]:
    """(first heading, clean text with one paragraph per line) from an XHTML document."""
    blocks = html_blocks(content)
    heading = next((b.text for b in blocks if b.heading), "")
    return heading, "\n".join(b.text for b in blocks)


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


_ENTITY = re.compile(rb"<!\s*ENTITY", re.IGNORECASE)
_XML_MEMBER = (".xml", ".opf", ".ncx", ".xhtml", ".html", ".htm", ".svg", ".smil")


def _shown(member: str) -> str:
    """A member name as a message may show it: printable, at most 80 characters."""
    return "".join(ch if ch.isprintable() else "?" for ch in member)[:80]


def _check_member_name(member: str, name: str) -> str:
    """``member`` normalised; a name outside the archive ("../../x", "/etc/x") raises ``BookError``."""
    norm = posixpath.normpath(member.replace("\\", "/"))
    if norm == ".." or norm.startswith(("../", "/")) or re.match(r"^[A-Za-z]:", norm):
        raise BookError(Msg.of("book.epub_bad_path", level="error", name=name, member=_shown(member)))
    return norm


def _damaged(name: str, detail: str) -> Msg:
    return Msg.of("book.epub_damaged", level="error", name=name, detail=detail)


def check_zip_directory(zf: zipfile.ZipFile, name: str, limits: ZipLimits, archive_bytes: int) -> None:
    """Reject a ZIP bomb from its central directory alone, before any member is inflated."""
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise BookError(Msg.of("book.zip_members", level="error", name=name, count=len(infos),
                               limit=limits.max_members))
    total = 0
    for info in infos:
        size, packed = info.file_size, max(info.compress_size, 1)
        _check_member_name(info.filename, name)
        if size > limits.member_bytes:
            raise BookError(Msg.of("book.zip_member_size", level="error", name=name, member=info.filename,
                                   size=_mb(size), limit=_mb(limits.member_bytes)))
        if size > EPUB_RATIO_FLOOR and size / packed > limits.max_ratio:
            raise BookError(Msg.of("book.zip_member_ratio", level="error", name=name, member=info.filename,
                                   ratio=f"{size / packed:.0f}", packed=_mb(packed), size=_mb(size),
                                   limit=f"{limits.max_ratio:g}"))
        total += size
    if total > limits.total_bytes:
        raise BookError(Msg.of("book.zip_size", level="error", name=name, size=_mb(total),
                               limit=_mb(limits.total_bytes)))
    if total > EPUB_RATIO_FLOOR and total / max(archive_bytes, 1) > limits.max_ratio:
        raise BookError(Msg.of("book.zip_ratio", level="error", name=name,
                               ratio=f"{total / max(archive_bytes, 1):.0f}", limit=f"{limits.max_ratio:g}"))


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
                        raise BookError(Msg.of("book.zip_stream", level="error", name=self.name, member=member,
                                               limit=_mb(cap)))
                    parts.append(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise BookError(_damaged(self.name, f"{member}: {exc}")) from exc
        self.read_total += got
        data = b"".join(parts)
        if member.lower().endswith(_XML_MEMBER) and _ENTITY.search(data[:1 << 20]):
            # entity declarations ("billion laughs") are refused before any XML parser sees them
            raise BookError(Msg.of("book.epub_entities", level="error", name=self.name, member=_shown(member)))
        return data


def _check_epub_container(path: Path, name: str, limits: ZipLimits) -> None:
    if not zipfile.is_zipfile(path):
        raise BookError(Msg.of("book.not_epub", level="error", name=name, formats=SUPPORTED))
    try:
        with zipfile.ZipFile(path) as zf:
            check_zip_directory(zf, name, limits, path.stat().st_size)  # before anything is inflated
            names = set(zf.namelist())
            if "META-INF/container.xml" not in names:
                raise BookError(Msg.of("book.zip_not_epub", level="error", name=name))
            reader = BoundedZipReader(zf, name, limits)
            if "META-INF/encryption.xml" in names and _drm_encrypted(reader.read("META-INF/encryption.xml")):
                raise BookError(Msg.of("book.drm", level="error", name=name))
            bad = zf.testzip()  # streams each member once (sizes already bounded above)
            if bad is not None:
                raise BookError(_damaged(name, f"bad entry {bad}"))
    except zipfile.BadZipFile as exc:
        raise BookError(_damaged(name, str(exc))) from exc


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


def _toc_titles(entries: list[tuple[str, str, str]]) -> dict[str, str]:
    """file (without fragment) -> the first TOC title pointing at it."""
    titles: dict[str, str] = {}
    for file, _, title in entries:
        if title:
            titles.setdefault(file, title)
    return titles


# A spine page's media types besides EPUB's own application/xhtml+xml: ebooklib, for one, writes
# text/html for a page named *.html (calibre's index_split_000.html), which ebooklib then reads back
# as an item of unknown type; EPUB2 also allows the OEB 1 document type.
_DOCUMENT_MEDIA_TYPES = {"application/xhtml+xml", "text/html", "text/x-oeb1-document"}


def _is_document(item: Any, document_type: int) -> bool:
    """Whether a spine item is a page of text (not an image, a style sheet or an unknown file)."""
    media_type = str(getattr(item, "media_type", "") or "").split(";")[0].strip().lower()
    return bool(item.get_type() == document_type or media_type in _DOCUMENT_MEDIA_TYPES)


def _read_epub(path: Path, name: str, limits: ZipLimits) -> Any:
    """``ebooklib.epub.read_epub`` with every member read through a ``BoundedZipReader``."""
    from ebooklib import epub

    class Reader(epub.EpubReader):
        bounded: BoundedZipReader | None = None

        def read_file(self, member: str) -> bytes:
            if self.bounded is None or self.bounded.zf is not self.zf:
                self.bounded = BoundedZipReader(self.zf, name, limits)
            return self.bounded.read(_check_member_name(member, name))

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
        raise BookError(Msg.of("book.epub_unreadable", level="error", name=name,
                               detail=f"{type(exc).__name__}: {exc}")) from exc

    meta_title = book.get_metadata("DC", "title")
    title = meta_title[0][0].strip() if meta_title and meta_title[0][0] else ""
    creator = book.get_metadata("DC", "creator")
    author = creator[0][0].strip() if creator and creator[0][0] else ""
    entries = toc_entries(book.toc)
    toc = _toc_titles(entries)
    pages: list[Page] = []
    front: list[Page] = []  # title pages found by their text
    for entry in book.spine:
        idref = entry[0] if isinstance(entry, tuple) else entry
        item = book.get_item_with_id(idref)
        if item is None or not _is_document(item, ebooklib.ITEM_DOCUMENT) or isinstance(item, epub.EpubNav):
            continue
        file_name = posixpath.normpath(item.get_name())
        if "nav" in (getattr(item, "properties", None) or []):
            continue
        toc_title = toc.get(file_name) or toc.get(posixpath.basename(file_name), "")
        try:
            blocks = html_blocks(item.get_content())
        except Exception as exc:
            log.warning("%s: skipping unreadable page %s (%s)", name, file_name, exc)
            continue
        heading = next((b.text for b in blocks if b.heading), "")
        label = f"{idref} {posixpath.basename(file_name)} {toc_title or heading}"
        if _SKIP_PAGE.search(label) and sum(len(b.text) for b in blocks) < 2000:
            log.debug("%s: skipping %s (cover/nav/copyright page)", name, file_name)
            continue
        if _title_page(blocks, title, author):
            log.debug("%s: skipping %s (a title page by its text)", name, file_name)
            front.append(Page(file_name, blocks))
            continue
        pages.append(Page(file_name, blocks))
    chapters = split_pages(pages or front, entries)  # a book of one short page keeps it
    if not chapters:
        raise BookError(Msg.of("book.epub_no_text", level="error", name=name))
    return LoadedBook(title=title or path.stem, source=name, format="epub", chapters=number_chapters(chapters),
                      author=author)
