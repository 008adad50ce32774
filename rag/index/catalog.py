"""Books on disk: one directory per book under ``settings.keyword_dir``. No threads, no Chroma.

    <book_id>/manifest.json   ``Manifest``: title, source, chapters, chunk settings, owners
    <book_id>/manifest.bak.json  a second copy of it, read when the first is unreadable (its owners
                              cannot be told from the chunks)
    <book_id>/chunks.jsonl    one ``Chunk`` per line (text, chapter, offsets, pieces to embed)
    <book_id>/bm25/           BM25 over characters, bigrams and words (rag.index.keyword; older books: bm25s files)
    <book_id>/vectors.json    ``VectorProgress`` per vector space (rewritten atomically)

A book directory is built under a temporary name and renamed into place in one step, so a crash or
a cancelled upload leaves the previous index as it was; leftovers of a crash are removed later. The
book id is a hash of the content, so the same book is the same directory whatever its file name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rag.aliases import build_aliases
from rag.crosslingual import BookText
from rag.errors import BookError, IndexError_
from rag.i18n import Msg
from rag.index.chapters import LoadedBook, chapter_word
from rag.index.chunking import Chunk, chunk_chapters
from rag.index.keyword import KeywordIndex, fsync_dir
from rag.index.progress import VectorProgress
from rag.lang import text_lang

log = logging.getLogger(__name__)

INDEX_VERSION = 1
# What the keyword index covers: 1 = chunk text; 2 = chapter title + chunk text (titles such as
# 白骨精 or 三调芭蕉扇 name the episode, and the text often does not); 3 = single characters as well
# as bigrams (rag.index.keyword). A book indexed with an older version gets its keyword index rebuilt
# in memory when loaded, and on disk when it is ingested again.
KEYWORD_VERSION = 3


def keyword_text(chunk: Chunk) -> str:
    """What BM25 indexes for a chunk: its chapter title, then its text."""
    title = chunk.chapter_title.strip()
    return f"{title}\n{chunk.text}" if title else chunk.text


@dataclass(frozen=True)
class ChapterEntry:
    num: int | None
    title: str
    chars: int


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: what the book is and how it was chunked."""

    id: str
    title: str
    source: str  # file name as uploaded
    path: str  # path given to ingest
    format: str  # epub | txt | md
    chars: int
    chapters: tuple[ChapterEntry, ...]
    chunks: int
    pieces: int
    created: float
    chunk_size: int
    chunk_overlap: int
    piece_chars: int
    version: int = INDEX_VERSION
    # The visitors (browser sessions) who uploaded it, when the library is not shared (SHARED_LIBRARY):
    # only they see it. Empty: everyone does (the sample guide, books indexed from the command line).
    owners: tuple[str, ...] = ()
    keyword: int = 1  # KEYWORD_VERSION of the saved keyword index
    rebuilt: bool = False  # True: rebuilt from the chunks (the manifest was unreadable); title unknown
    author: str = ""  # from the book's own metadata (a Gutenberg header, YAML ``author:``, the EPUB's dc:creator)
    lang: str = ""  # the language of the book's text ("zh" | "en"; "" in manifests written before it was kept)

    def chunking(self) -> tuple[int, int, int]:
        return self.chunk_size, self.chunk_overlap, self.piece_chars

    def visible_to(self, owner: str | None) -> bool:
        """Whether ``owner``'s library holds this book (None: the whole library)."""
        return owner is None or not self.owners or owner in self.owners

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        """Raises ``ValueError`` for a manifest of another index version or a malformed one."""
        if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
            raise ValueError(f"index version {data.get('version') if isinstance(data, dict) else None}")
        try:
            chapters = tuple(ChapterEntry(c.get("num"), str(c["title"]), int(c.get("chars", 0))) for c in data["chapters"])
            return cls(
                id=str(data["id"]), title=str(data["title"]), source=str(data["source"]),
                path=str(data.get("path", "")), format=str(data["format"]), chars=int(data.get("chars", 0)),
                chapters=chapters, chunks=int(data["chunks"]), pieces=int(data.get("pieces", 0)),
                created=float(data.get("created", 0.0)), chunk_size=int(data["chunk_size"]),
                chunk_overlap=int(data["chunk_overlap"]), piece_chars=int(data["piece_chars"]),
                owners=tuple(str(o) for o in data.get("owners") or ()),
                keyword=int(data.get("keyword", 1)), rebuilt=bool(data.get("rebuilt", False)),
                author=str(data.get("author") or ""), lang=str(data.get("lang") or ""),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed manifest ({exc!r})") from exc


_ROW_FIELDS = ("id", "chapter_idx", "chapter_num", "chapter_title", "chunk_index", "start", "end", "text")


def chunk_row(chunk: Chunk) -> dict[str, Any]:
    """A chunk as one line of ``chunks.jsonl`` (its book is the directory's)."""
    row = {name: getattr(chunk, name) for name in _ROW_FIELDS}
    row["pieces"] = [[a, b] for a, b in chunk.pieces]
    return row


def chunk_from_row(book_id: str, row: dict[str, Any]) -> Chunk:
    return Chunk(book_id=book_id, pieces=[(int(a), int(b)) for a, b in row["pieces"]],
                 **{name: row[name] for name in _ROW_FIELDS})


def no_such_book(book_id: str) -> BookError:
    """The error for a book id the index does not hold (or the asker may not see)."""
    return BookError(Msg.of("book.no_such_id", level="error", id=book_id))


def book_id_of(loaded: LoadedBook) -> str:
    digest = hashlib.sha256()
    for c in loaded.chapters:
        digest.update(f"{c.num}\x1f{c.title}\x1f{c.text}\x1e".encode())
    return digest.hexdigest()[:12]


def plan_book(loaded: LoadedBook, path: str | Path, chunk_size: int, chunk_overlap: int,
              piece_chars: int) -> tuple[Manifest, list[Chunk]]:
    """The manifest and chunks that ``loaded`` becomes. Raises ``BookError`` when there is no text."""
    book_id = book_id_of(loaded)
    chapters = [(c.num, c.title, c.text) for c in loaded.chapters]
    chunks = chunk_chapters(book_id, chapters, size=chunk_size, overlap=chunk_overlap, piece_size=piece_chars)
    if not chunks:
        raise BookError(Msg.of("book.no_text_to_index", level="error", name=loaded.source))
    manifest = Manifest(
        id=book_id, title=loaded.title, source=loaded.source, path=str(path), format=loaded.format,
        chars=loaded.chars, chapters=tuple(ChapterEntry(n, t, len(x)) for n, t, x in chapters),
        chunks=len(chunks), pieces=sum(len(c.pieces) for c in chunks), created=time.time(),
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, piece_chars=piece_chars, keyword=KEYWORD_VERSION,
        author=loaded.author.strip(), lang=text_lang(c.text for c in loaded.chapters),
    )
    return manifest, chunks


@dataclass
class BookInfo:
    """What the index tells about a book (``BookIndex.books()``)."""

    id: str
    title: str
    source: str  # file name as uploaded
    path: str  # path given to ingest
    format: str  # epub | txt | md
    chapters: int
    chunks: int
    embedded: int  # chunks whose vectors are all stored
    status: str  # keyword_ready | embedding | ready | error
    error: Msg | str | None = None  # what went wrong, or what is damaged (then listed, never hidden)
    chars: int = 0
    created: float = 0.0
    author: str = ""  # the book's own (Gutenberg header, YAML, dc:creator); "" when it names none
    lang: str = ""  # the language of its text: "zh" | "en"
    notice: Msg | None = None  # e.g. that embedding will take long (index.embed_slow), while it is pending
    unit_zh: str = ""  # its word for a chapter in its Chinese headings (回, 章, 节...); "" when they are not
    unit_en: str = ""  # in its English headings (chapter, part, book); "" when they are not

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_book(infos: list[BookInfo], name_or_id: str) -> BookInfo | None:
    """The one book matching by exact id, else title or file name, else file name without its
    extension (``xiyouji`` finds ``xiyouji.txt``), else id prefix (case-insensitive)."""
    needle = name_or_id.strip().lower()
    for test in (
        lambda b: b.id == needle,
        lambda b: b.title.lower() == needle or b.source.lower() == needle,
        lambda b: Path(b.source).stem.lower() == needle,
        lambda b: b.id.startswith(needle),
    ):
        hits = [b for b in infos if test(b)]
        if len(hits) == 1:
            return hits[0]
    return None


class StoredBook:
    """A book directory: its manifest, and its chunks and keyword index once first needed."""

    def __init__(self, manifest: Manifest, directory: Path) -> None:
        self.manifest = manifest
        self.directory = directory
        self._loaded: tuple[list[Chunk], KeywordIndex, dict[str, int]] | None = None
        self._aliases: dict[str, tuple[str, ...]] | None = None
        self._text: BookText | None = None
        self._lang: str | None = manifest.lang or None  # None: not read yet
        self._word: tuple[str, str] | None = None
        self.damage: Msg | None = None  # what the self-check or a load found broken (listed with the book)
        self.unusable = False  # True: nothing of it can be searched (its chunks are unreadable)
        if manifest.rebuilt:
            self.damage = Msg.of("index.manifest_rebuilt", level="warning", id=manifest.id)

    @property
    def id(self) -> str:
        return self.manifest.id

    def _load(self) -> tuple[list[Chunk], KeywordIndex, dict[str, int]]:
        loaded = self._loaded
        if loaded is None:  # two threads may both load; either result is the same
            try:
                chunks, bad = self._read_chunks()
                keyword = self._keyword(chunks, rebuild=bad > 0)
            except IndexError_ as exc:
                self.damage, self.unusable = exc.msg, True
                raise
            if bad:
                log.warning("book %s: %d lines of chunks.jsonl are unreadable; %d chunks kept", self.id, bad, len(chunks))
                self.damage = Msg.of("index.chunks_partly_unreadable", level="warning", bad=bad, kept=len(chunks))
            loaded = self._loaded = (chunks, keyword, {c.id: pos for pos, c in enumerate(chunks)})
        return loaded

    def _unreadable(self, part: str, detail: object) -> IndexError_:
        return IndexError_(Msg.of("index.unreadable", level="error", title=self.manifest.title,
                                  detail=f"{part}: {detail}"))

    def _read_chunks(self) -> tuple[list[Chunk], int]:
        """The readable chunks, and how many lines were not. Raises ``IndexError_`` when none is."""
        chunks, bad = [], 0
        try:
            with (self.directory / "chunks.jsonl").open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if not line.strip():
                        continue
                    try:
                        chunks.append(chunk_from_row(self.id, json.loads(line)))
                    except (ValueError, KeyError, TypeError, AttributeError):
                        bad += 1
        except OSError as exc:
            raise self._unreadable("chunks.jsonl", exc.strerror or exc) from exc
        if not chunks:
            raise self._unreadable("chunks.jsonl", f"no readable chunk ({bad} unreadable lines)")
        return chunks, bad

    def _keyword(self, chunks: list[Chunk], *, rebuild: bool) -> KeywordIndex:
        """The saved keyword index; rebuilt from the chunks when it is older, unreadable or does not
        match them (then saved again where the directory allows)."""
        if self.manifest.keyword < KEYWORD_VERSION:
            log.info("rebuilding the keyword index of %s in memory (older index)", self.id)
            return KeywordIndex.build(keyword_text(c) for c in chunks)
        if not rebuild:
            try:
                keyword = KeywordIndex.load(self.directory / "bm25", len(chunks))
                if len(keyword.scores(chunks[0].text[:8])) != len(chunks):
                    detail: object = "it does not match the chunks"
                elif not keyword.finds_itself(_samples(chunks)):
                    log.warning("the keyword index of book %s finds nothing for its own text; rebuilding it from "
                                "its chunks", self.id)
                    detail = None
                else:
                    return keyword
            except Exception as exc:  # noqa: BLE001 - any damage to the files: rebuilt below
                detail = exc
            if detail is not None:
                log.warning("the keyword index of book %s is unreadable (%s); rebuilding it from its chunks",
                            self.id, detail)
        keyword = KeywordIndex.build(keyword_text(c) for c in chunks)
        self._save_keyword(keyword)
        return keyword

    def _save_keyword(self, keyword: KeywordIndex) -> None:
        tmp = self.directory / f".bm25-{uuid.uuid4().hex[:8]}"
        old = self.directory / f".bm25-old-{uuid.uuid4().hex[:8]}"
        try:
            keyword.save(tmp)
            with contextlib.suppress(FileNotFoundError):
                os.replace(self.directory / "bm25", old)
            os.replace(tmp, self.directory / "bm25")
            fsync_dir(self.directory)
            log.info("book %s: keyword index rebuilt and saved", self.id)
        except OSError as exc:
            log.warning("book %s: the rebuilt keyword index could not be saved (%s); kept in memory", self.id,
                        exc.strerror or exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)

    def check(self) -> None:
        """The self-check on open, cheap: the chunks file is there and its first line reads."""
        try:
            with (self.directory / "chunks.jsonl").open(encoding="utf-8", errors="replace") as fh:
                first = fh.readline()
            chunk_from_row(self.id, json.loads(first))
        except OSError as exc:
            self.damage, self.unusable = self._unreadable("chunks.jsonl", exc.strerror or exc).msg, True
        except (ValueError, KeyError, TypeError, AttributeError):
            with contextlib.suppress(IndexError_):
                self._load()  # the first line is damaged: are the others?
        if self.damage is not None:
            log.warning("book %s is damaged: %s", self.id, self.damage)

    def info(self, status: str, embedded: int, error: Msg | str | None = None) -> BookInfo:
        m = self.manifest
        unit_zh, unit_en = self.chapter_word()
        return BookInfo(id=m.id, title=m.title, source=m.source, path=m.path, format=m.format,
                        chapters=len(m.chapters), chunks=m.chunks, embedded=embedded,
                        status="error" if self.unusable else status, error=self.damage or error,
                        chars=m.chars, created=m.created, author=m.author, lang=self.lang(),
                        unit_zh=unit_zh, unit_en=unit_en)

    def chunks(self) -> list[Chunk]:
        return self._load()[0]

    def lang(self) -> str:
        """The language of the book's text: the manifest's, or (a manifest written before it was kept)
        read off the first lines of its chunks once; "" when they cannot be read."""
        if self._lang is None:
            texts: list[str] = []
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError), \
                    (self.directory / "chunks.jsonl").open(encoding="utf-8", errors="replace") as fh:
                texts = [str(json.loads(line)["text"]) for line, _ in zip(fh, range(40), strict=False)]
            self._lang = text_lang(texts) if texts else ""
        return self._lang

    def chapter_word(self) -> tuple[str, str]:
        """The book's words for a chapter (``rag.index.chapters.chapter_word``), read off its
        chapter titles once: every search's notices name its chapters in them."""
        if self._word is None:
            self._word = chapter_word(c.title for c in self.manifest.chapters)
        return self._word

    def keyword(self) -> KeywordIndex:
        return self._load()[1]

    def position(self, chunk_id: str) -> int | None:
        return self._load()[2].get(chunk_id)

    def aliases(self) -> dict[str, tuple[str, ...]]:
        """Other names of the book's people, from its own introductions (``rag.aliases``)."""
        found = self._aliases
        if found is None:
            found = self._aliases = build_aliases(c.text for c in self.chunks())
        return found

    def text(self) -> BookText:
        """The book's text for cross-lingual lookups (``rag.crosslingual``), built when first needed."""
        found = self._text
        if found is None:
            found = self._text = BookText(c.text for c in self.chunks())
        return found


def _samples(chunks: list[Chunk]) -> list[tuple[int, str]]:
    """A few chunks spread over the book (first, middle, last) for the keyword index's self-check."""
    picks = sorted({0, len(chunks) // 2, len(chunks) - 1})
    return [(i, keyword_text(chunks[i])) for i in picks]


MANIFEST = "manifest.json"
MANIFEST_BACKUP = "manifest.bak.json"


def _read_manifest(path: Path) -> Manifest:
    return Manifest.from_json(json.loads(path.read_text(encoding="utf-8")))


def _write_manifest(directory: Path, manifest: Manifest) -> None:
    """The manifest and its backup copy, each written atomically (one damaged file leaves the other)."""
    data = asdict(manifest)
    _write_json_atomic(directory / MANIFEST, data)
    _write_json_atomic(directory / MANIFEST_BACKUP, data)


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class Catalog:
    """The book directories under ``root``, read once (``books()``) and kept up to date by ``write``
    and ``remove``."""

    def __init__(self, root: Path, stale_tmp_seconds: float = 600.0,
                 build_keyword: Callable[[Iterable[str]], KeywordIndex] | None = None) -> None:
        self.root = Path(root)
        self.stale_tmp_seconds = stale_tmp_seconds
        self._build_keyword = build_keyword
        self._books: dict[str, StoredBook] | None = None

    def books(self) -> dict[str, StoredBook]:
        """Every readable book by id, oldest first (the first call also removes stale temporary
        directories)."""
        if self._books is None:
            self._books = self._scan()
        return self._books

    def get(self, book_id: str) -> StoredBook:
        book = self.books().get(book_id)
        if book is None:
            raise no_such_book(book_id)
        return book

    def _scan(self) -> dict[str, StoredBook]:
        books: dict[str, StoredBook] = {}
        if not self.root.is_dir():
            return books
        now = time.time()
        for entry in sorted(self.root.iterdir()):
            if entry.name.startswith("."):
                if entry.is_dir() and now - entry.stat().st_mtime > self.stale_tmp_seconds:
                    shutil.rmtree(entry, ignore_errors=True)  # leftovers of a crash
                continue
            book = self.read(entry)
            if book is not None:
                books[book.id] = book
        return dict(sorted(books.items(), key=lambda kv: kv[1].manifest.created))

    def read(self, directory: Path) -> StoredBook | None:
        """The book in ``directory``, self-checked (``StoredBook.check``); an unreadable manifest is
        restored from its backup copy, else rebuilt from the chunks. None for what is not a book directory."""
        try:
            manifest = _read_manifest(directory / MANIFEST)
        except (OSError, ValueError) as exc:
            if not (directory / "chunks.jsonl").is_file():
                log.warning("ignoring %s: %s", directory, exc)
                return None
            try:
                manifest = _read_manifest(directory / MANIFEST_BACKUP)
                if manifest.id != directory.name:
                    raise ValueError(f"it holds book {manifest.id}")
                log.warning("the manifest of book %s is unreadable (%s); restored from its backup copy",
                            directory.name, exc)
                with contextlib.suppress(OSError):
                    _write_json_atomic(directory / MANIFEST, asdict(manifest))
            except (OSError, ValueError) as backup_exc:
                log.warning("the manifest of book %s is unreadable (%s), its backup too (%s); rebuilding it from "
                            "its chunks", directory.name, exc, backup_exc)
                manifest = self._rebuilt_manifest(directory)
        if manifest.id != directory.name:
            log.warning("ignoring %s: it holds book %s", directory, manifest.id)
            return None
        book = StoredBook(manifest, directory)
        book.check()
        return book

    def _rebuilt_manifest(self, directory: Path) -> Manifest:
        """A manifest from what the chunks tell (chapters, counts); the title is the id and the
        chunk settings unknown (an upload of the book indexes it again); owners unknown, so only the
        operator sees it. Saved where the directory allows."""
        probe = StoredBook(Manifest(directory.name, directory.name, "", "", "txt", 0, (), 0, 0, 0.0, 0, 0, 0,
                                    owners=(UNKNOWN_OWNER,), rebuilt=True), directory)
        try:
            chunks, _ = probe._read_chunks()
        except IndexError_:
            chunks = []
        spans: dict[int, tuple[int | None, str, int, int]] = {}
        for c in chunks:
            num, title, start, end = spans.get(c.chapter_idx, (c.chapter_num, c.chapter_title, c.start, c.end))
            spans[c.chapter_idx] = (num, title, min(start, c.start), max(end, c.end))
        chapters = tuple(ChapterEntry(n, t, e - s) for _, (n, t, s, e) in sorted(spans.items()))
        manifest = replace(probe.manifest, chapters=chapters, chunks=len(chunks), chars=sum(c.chars for c in chapters),
                           pieces=sum(len(c.pieces) for c in chunks), created=directory.stat().st_mtime)
        with contextlib.suppress(OSError):
            _write_json_atomic(directory / MANIFEST, asdict(manifest))  # the backup keeps what it held
        return manifest

    def write(self, manifest: Manifest, chunks: list[Chunk]) -> StoredBook:
        """Write the book's directory and swap it into place in one step (replacing an older one)."""
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / manifest.id
        tmp = self.root / f".tmp-{manifest.id}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        old = None
        try:
            with (tmp / "chunks.jsonl").open("w", encoding="utf-8") as fh:
                for c in chunks:
                    fh.write(json.dumps(chunk_row(c), ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            build = self._build_keyword or KeywordIndex.build
            build(keyword_text(c) for c in chunks).save(tmp / "bm25")
            _write_manifest(tmp, manifest)
            fsync_dir(tmp)
            if final.exists():  # same content, new chunk settings: swap the directories
                old = self.root / f".old-{manifest.id}-{uuid.uuid4().hex[:8]}"
                os.replace(final, old)
            try:
                os.replace(tmp, final)
            except OSError:
                if not (final / "manifest.json").exists():
                    raise
                # another process indexed the same book at the same time: keep its copy
                log.info("book %s was indexed concurrently; keeping the existing copy", manifest.id)
                shutil.rmtree(tmp, ignore_errors=True)
            fsync_dir(self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        books = self.books()
        books.pop(manifest.id, None)  # listed as the newest
        book = books[manifest.id] = StoredBook(manifest, final)
        return book

    def set_owners(self, book_id: str, owners: tuple[str, ...]) -> StoredBook:
        """Rewrite the book's manifest (atomically) with these owners."""
        return self.update(book_id, owners=owners)

    def update(self, book_id: str, **fields: Any) -> StoredBook:
        """Rewrite the book's manifest (atomically) with these fields changed (owners, author)."""
        book = self.get(book_id)
        book.manifest = replace(book.manifest, **fields)
        _write_manifest(book.directory, book.manifest)
        return book

    def claim(self, book: StoredBook, owner: str | None) -> StoredBook:
        """``book`` with ``owner`` among its owners (see ``owners_after``)."""
        owners = owners_after(book.manifest.owners, owner)
        return book if owners == book.manifest.owners else self.set_owners(book.id, owners)

    def remove(self, book_id: str) -> None:
        """The book's directory disappears in one step, then its files are deleted."""
        self.books().pop(book_id, None)
        trash = self.root / f".trash-{book_id}-{uuid.uuid4().hex[:8]}"
        os.replace(self.root / book_id, trash)
        shutil.rmtree(trash, ignore_errors=True)

    def read_progress(self, book_id: str, space: str) -> VectorProgress:
        return VectorProgress.from_json(self._progress_file(book_id).get(space))

    def write_progress(self, book_id: str, space: str, progress: VectorProgress) -> None:
        """Record ``progress`` for ``space``, keeping other spaces'; nothing if the book is gone."""
        directory = self.root / book_id
        if not directory.is_dir():
            return
        states = self._progress_file(book_id)
        states[space] = {k: v for k, v in asdict(progress).items() if v is not None}
        with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
            _write_json_atomic(directory / "vectors.json", states)

    def _progress_file(self, book_id: str) -> dict[str, Any]:
        try:
            states = json.loads((self.root / book_id / "vectors.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return states if isinstance(states, dict) else {}


#: The owner of a book whose manifest was rebuilt: nobody knows who uploaded it, so only the operator sees it.
UNKNOWN_OWNER = "(unknown)"


def owners_after(current: tuple[str, ...] | None, owner: str | None) -> tuple[str, ...]:
    """A book's owners after ``owner`` ingests it (``current`` None: a new book). Without an owner
    the book is shared; a shared book stays shared; an owned one gains the new owner."""
    if owner is None or current == ():
        return ()
    return tuple(dict.fromkeys([*(current or ()), owner]))
