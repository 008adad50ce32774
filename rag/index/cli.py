"""``python -m rag ingest|books|search``: the book index on the command line.

``add_commands(subparsers)`` registers the commands; each handler is ``func(args, settings) -> int``.
Results go to stdout, progress bars and errors to stderr. ``add_commands(..., open_index=...)`` sets
how the commands open the index (tests pass one with a test embedder).
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from collections.abc import Callable
from typing import Any, TextIO

from rag.config import Settings
from rag.errors import RagError
from rag.i18n import Msg, t
from rag.index.resolve import BOOK_HELP
from rag.scope import chapter_arg, chapter_range_arg, limit_chapters

#: Characters a terminal would act on rather than show: controls (newlines, escape sequences),
#: format characters (right-to-left marks and overrides, zero-width ones), line and paragraph separators.
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def terminal_safe(value: object) -> str:
    """``value`` as text that prints as itself on one line: each control, bidi or other format
    character written as an escape (``\\n``, ``\\u202e``), so a file name cannot break a table or
    reorder it."""
    return "".join(
        (_ESCAPES.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"))
        if unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch
        for ch in str(value)
    )


class _Bars:
    """A tqdm bar for the current stage (reading, chunking, keyword, embedding), on stderr."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._stage = ""
        self._bar: Any = None

    def __call__(self, stage: str, done: int, total: int, message: str) -> None:
        from tqdm import tqdm

        if stage in {"ready", "error"}:
            self.close()
            if stage == "error":
                print(f"embedding failed: {message}", file=self._stream)
            return
        if stage != self._stage or self._bar is None:
            self.close()
            unit = {"embedding": "chunk", "keyword": "chunk", "chunking": "char"}.get(stage, "step")
            # The rate counts only the progress this bar sees: a stage that starts part-done (a resumed
            # embedding) or is reported once, finished, shows no absurd rate.
            self._bar = tqdm(total=max(total, 1), initial=min(done, max(total, 1)), desc=f"{stage:<9}", unit=unit,
                             unit_scale=unit == "char", file=self._stream, dynamic_ncols=True)
            self._stage = stage
        self._bar.total = max(total, 1)
        self._bar.n = min(done, self._bar.total)
        self._bar.set_postfix_str(message[:40], refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._stage = ""


def _open(args: argparse.Namespace, settings: Settings) -> Any:
    from rag.index import open_index

    return (getattr(args, "open_index", None) or open_index)(settings)


def cmd_ingest(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    index = _open(args, settings)
    bars = _Bars(err)
    try:
        def notice(msg: Msg) -> None:  # before embedding starts: how long it will take
            bars.close()
            print(f"note: {terminal_safe(msg)}", file=err)

        info = index.ingest(args.path, name=args.name, progress=bars, background=False, embed=not args.keyword_only,
                            on_notice=notice)
    except KeyboardInterrupt:
        bars.close()
        index.close()
        print("interrupted: the keyword index is kept; run the same command again to finish embedding", file=err)
        return 130
    except RagError as exc:
        bars.close()
        index.close()
        print(f"error: {exc}", file=err)
        return 1
    except OSError:  # reported in one line by rag.cli.main (exit code 2); the previous index stays
        bars.close()
        index.close()
        raise
    bars.close()
    index.close()
    print(f"{info.id}  {terminal_safe(info.title)}  {info.chapters} chapters, {info.chunks} chunks, "
          f"{info.embedded}/{info.chunks} embedded, status {info.status}", file=out)
    return 0


def cmd_books(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    index = _open(args, settings)
    try:
        books = index.books()
    except RagError as exc:
        print(f"error: {exc}", file=err)
        return 1
    finally:
        index.close()
    if not books:
        print("no books indexed yet: python -m rag ingest PATH", file=out)
        return 0
    print(f"{'id':<12}  {'status':<13}  {'chapters':>8}  {'chunks':>6}  {'embedded':>8}  title · author (source)", file=out)
    for b in books:
        status = terminal_safe(b.status if not b.error else f"{b.status}: {b.error}")
        author = getattr(b, "author", "")
        by = f" · {terminal_safe(author)}" if author else ""
        print(f"{b.id:<12}  {status:<13}  {b.chapters:>8}  {b.chunks:>6}  {b.embedded:>8}  "
              f"{terminal_safe(b.title)}{by} ({terminal_safe(b.source)})", file=out)
    return 0


def cmd_search(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    index = _open(args, settings)
    try:
        book_id = None
        if args.book:
            from rag.index.resolve import resolve_book

            book_id = resolve_book(index, args.book).id
        mode = args.mode or settings.retrieval_mode
        waiting = [b.title for b in index.books() if b.status != "ready" and (book_id in (None, b.id))]
        if mode != "keyword" and waiting:
            print(f"note: still embedding {terminal_safe(', '.join(waiting))}: hybrid search uses keywords only for it",
                  file=err)
        chapters = limit_chapters(args.chapter, args.read_up_to)
        if chapters is not None and chapters[0] > chapters[1]:
            print(f"error: chapters {args.chapter[0]}-{args.chapter[1]} all come after --read-up-to {args.read_up_to}",
                  file=err)
            return 1
        outcome = index.search(args.query, k=args.k, book_id=book_id, mode=mode, chapters=chapters)
        passages = outcome.passages
        for note in outcome.notes:
            print(f"note: {note}", file=err)
    except RagError as exc:
        print(f"error: {exc}", file=err)
        return 1
    finally:
        index.close()
    if not passages:
        print("no results", file=out)
        return 0
    width = args.chars
    for rank, p in enumerate(passages, start=1):
        flat = " ".join(p.text.split())
        snippet = flat if len(flat) <= width else flat[: width - 1] + "…"
        print(f"{rank}. {terminal_safe(p.book_title)} · {terminal_safe(p.label())} · chunk {p.chunk_index} "
              f"({p.start}-{p.end})  [{score_label(p, mode)}]", file=out)
        print(f"   {terminal_safe(snippet)}", file=out)
    return 0


def score_label(passage: Any, mode: str, lang: str = "en") -> str:
    """How a result was found and what its score is, named by the retriever that gave the score:
    in hybrid mode every score is the fused one, also for a passage only keyword search found, so
    "found by keyword; hybrid score 0.0164" after "hybrid score 0.0300" is no sorting bug."""
    found = t(lang, "cli.found_by", sources=" + ".join(SOURCES.get(passage.source, [passage.source or mode])))
    return f"{found}; {t(lang, 'cli.score', mode=mode, score=f'{passage.score:.4f}')}"


#: ``Passage.source`` -> the retrievers that found it.
SOURCES = {"hybrid": ["keyword", "vector"], "keyword": ["keyword"], "vector": ["vector"]}


def add_commands(subparsers: Any, open_index: Callable[[Settings], Any] | None = None) -> None:
    """Register ``ingest``, ``books`` and ``search`` on an argparse subparsers object."""
    ingest = subparsers.add_parser("ingest", help="index a book (EPUB, TXT or Markdown)")
    ingest.add_argument("path", help="the book file")
    ingest.add_argument("--name", help="title to show instead of the one in the file")
    ingest.add_argument("--keyword-only", action="store_true",
                        help="stop once keyword search works; embedding resumes on the next ingest or app start")
    ingest.set_defaults(func=cmd_ingest, open_index=open_index)

    books = subparsers.add_parser("books", help="list indexed books with chunk counts and status")
    books.set_defaults(func=cmd_books, open_index=open_index)

    search = subparsers.add_parser("search", help="search the indexed books")
    search.add_argument("query")
    search.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default=None,
                        help="retrieval mode (default: RETRIEVAL_MODE, hybrid)")
    search.add_argument("-k", type=int, default=None, help="number of passages (default: RETRIEVAL_K)")
    search.add_argument("--book", help=f"limit to one book: {BOOK_HELP}")
    search.add_argument("--chars", type=int, default=160, help="characters of each passage to show")
    search.add_argument("--chapter", type=chapter_range_arg, metavar="A-B",
                        help="search only these chapters (a number or a range, e.g. 27 or 3-7)")
    search.add_argument("--read-up-to", type=chapter_arg, metavar="N",
                        help="spoiler limit: nothing after chapter N")
    search.set_defaults(func=cmd_search, open_index=open_index)
