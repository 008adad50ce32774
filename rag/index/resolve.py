"""The command line's one ``--book``: an indexed book by id, id prefix, title or file name, or a
book file, indexed on the spot (``ask``, ``search`` and ``eval route`` share it, so
they find the same book).

A file not yet indexed is made keyword-searchable (seconds) and its vectors follow in the
background, so a question is answered from keyword search at once instead of after the whole book
is embedded. A name that finds no book is a ``BookNotFound`` error, never an unscoped answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import BookError
from rag.i18n import Msg

#: ``--book``'s help, the same for ``ask``, ``search`` and ``eval route``.
BOOK_HELP = ("an indexed book's id, id prefix, title or file name, or a book file (indexed if needed; "
             "keyword search answers at once while its vectors follow in the background)")

#: ``BookInfo.status`` of a book whose vectors are complete.
READY = "ready"


class BookNotFound(BookError):
    """``--book`` names neither an indexed book nor a readable file."""


@dataclass(frozen=True)
class ResolvedBook:
    """The book ``--book`` named: its id and title, and a notice when its vectors are not complete
    yet (retrieval uses keyword search for it meanwhile)."""

    id: str
    title: str
    notice: Msg | None = None


#: How many of an ambiguous name's books the error lists.
_MAX_LISTED = 5


def candidates(infos: Any, spec: str) -> list[Any]:
    """Every book ``spec`` could mean (any of ``find_book``'s tests: id, title, file name, file stem,
    id prefix), so that a name two books share is told apart from a name no book has."""
    needle = spec.strip().lower()
    return [b for b in infos if b.id == needle or b.title.lower() == needle or b.source.lower() == needle
            or Path(b.source).stem.lower() == needle or b.id.startswith(needle)]


def _notice(info: Any) -> Msg | None:
    if info.status == READY:
        return None
    return Msg.of("cli.book_keyword_first", level="warning", title=info.title, embedded=info.embedded,
                  chunks=info.chunks)


def resolve_book(index: Any, spec: str, *, ingest: bool = True, progress: Any = None) -> ResolvedBook:
    """The book ``spec`` names in ``index`` (a ``BookIndex`` or ``LibraryView``): an existing file is
    indexed (a no-op when its content already is; ``ingest=False``: only looked up), vectors in the
    background; otherwise the one indexed book with that id, title, file name, file stem or id
    prefix (``rag.index.catalog.find_book``). Raises ``BookNotFound``."""
    spec = (spec or "").strip()
    path = Path(spec).expanduser() if spec else None
    if ingest and path is not None and path.is_file():
        info = index.ingest(path, progress=progress, background=True)
        return ResolvedBook(id=str(info.id), title=str(info.title), notice=_notice(info))
    found = lookup_book(index, spec)
    return ResolvedBook(id=str(found.id), title=str(found.title), notice=_notice(found))


def lookup_book(index: Any, spec: str) -> Any:
    """The one indexed book ``spec`` names (``find_book``), for the CLI and the script API. Raises
    ``BookNotFound``: a name no book has, or one several books share (listed with their ids)."""
    spec = (spec or "").strip()
    found = index.find_book(spec) if spec else None
    if found is not None:
        return found
    matches = candidates(index.books(), spec) if spec else []
    if len(matches) > 1:
        names = "; ".join(f"{b.title} ({b.id[:8]})" for b in matches[:_MAX_LISTED])
        raise BookNotFound(Msg.of("cli.book_ambiguous", level="error", book=spec, count=len(matches),
                                  candidates=names + ("; …" if len(matches) > _MAX_LISTED else "")))
    raise BookNotFound(Msg.of("cli.book_not_found", level="error", book=spec))
