"""``python -m rag ingest|books|search``: the book index on the command line.

``add_commands(subparsers)`` registers the commands; each handler is ``func(args, settings) -> int``.
Results go to stdout, progress bars and errors to stderr. ``add_commands(..., open_index=...)`` sets
how the commands open the index (tests pass one with a test embedder).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rag.config import Settings
from rag.errors import RagError
from rag.scope import chapter_arg, chapter_range_arg, limit_chapters


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
        info = index.ingest(args.path, name=args.name, progress=bars, background=False, embed=not args.keyword_only)
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
    print(f"{info.id}  {info.title}  {info.chapters} chapters, {info.chunks} chunks, "
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
    print(f"{'id':<12}  {'status':<13}  {'chapters':>8}  {'chunks':>6}  {'embedded':>8}  title (source)", file=out)
    for b in books:
        status = b.status if not b.error else f"{b.status}: {b.error}"
        print(f"{b.id:<12}  {status:<13}  {b.chapters:>8}  {b.chunks:>6}  {b.embedded:>8}  {b.title} ({b.source})",
              file=out)
    return 0


def cmd_search(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    index = _open(args, settings)
    try:
        book_id = None
        if args.book:
            found = index.find_book(args.book)
            if found is None:
                print(f"error: no book matches '{args.book}' (see: python -m rag books)", file=err)
                return 1
            book_id = found.id
        mode = args.mode or settings.retrieval_mode
        waiting = [b.title for b in index.books() if b.status != "ready" and (book_id in (None, b.id))]
        if mode != "keyword" and waiting:
            print(f"note: still embedding {', '.join(waiting)}: hybrid search uses keywords only for it", file=err)
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
        text = " ".join(p.text.split())
        snippet = text if len(text) <= width else text[: width - 1] + "…"
        print(f"{rank}. [{p.source} {p.score:.4f}] {p.book_title} · {p.label()} · chunk {p.chunk_index} "
              f"({p.start}-{p.end})", file=out)
        print(f"   {snippet}", file=out)
    return 0


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
    search.add_argument("--book", help="limit to one book (id, id prefix, title or file name)")
    search.add_argument("--chars", type=int, default=160, help="characters of each passage to show")
    search.add_argument("--chapter", type=chapter_range_arg, metavar="A-B",
                        help="search only these chapters (a number or a range, e.g. 27 or 3-7)")
    search.add_argument("--read-up-to", type=chapter_arg, metavar="N",
                        help="spoiler limit: nothing after chapter N")
    search.set_defaults(func=cmd_search, open_index=open_index)
