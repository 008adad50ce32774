"""Per-visitor books on a public deployment (``SHARED_LIBRARY=false``): who owns a book after an
upload, and ``LibraryView``, the book index as one visitor sees it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from rag.i18n import Msg
from rag.index.catalog import BookInfo, find_book
from rag.index.worker import Progress
from rag.schemas import Passage, RetrievalOutcome
from rag.scope import Chapters


class Library(Protocol):
    """What a ``LibraryView`` needs of the whole library (``rag.index.store.BookIndex``)."""

    def books(self, owner: str | None = None) -> list[BookInfo]: ...

    def book(self, book_id: str, owner: str | None = None) -> BookInfo: ...

    def for_owner(self, owner: str | None) -> Library | LibraryView: ...

    def ingest(self, path: str | Path, name: str | None = None, progress: Progress | None = None,
               background: bool = True, embed: bool = True, *, owner: str | None = None,
               on_notice: Callable[[Msg], None] | None = None) -> BookInfo: ...

    def release(self, book_id: str, owner: str | None = None) -> bool: ...

    def owns(self, book_id: str, owner: str | None = None) -> bool: ...

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None,
                 *, chapters: Chapters | None = None, owner: str | None = None) -> list[Passage]: ...

    def search(self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None,
               *, chapters: Chapters | None = None, queries: Sequence[str] = (),
               owner: str | None = None) -> RetrievalOutcome: ...


class LibraryView:
    """A ``BookIndex`` as one visitor sees it (``SHARED_LIBRARY=false``): their own books and the
    shared ones are listed, searched (``book_id`` None: all of these) and found by id; what they
    upload is theirs. Every other attribute is the index's."""

    def __init__(self, index: Library, owner: str) -> None:
        self.index = index
        self.owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)

    def __repr__(self) -> str:
        return f"LibraryView(owner={self.owner[:8]})"

    def for_owner(self, owner: str | None) -> Library | LibraryView:
        return self if owner == self.owner else self.index.for_owner(owner)

    def books(self) -> list[BookInfo]:
        return self.index.books(owner=self.owner)

    def book(self, book_id: str) -> BookInfo:
        return self.index.book(book_id, owner=self.owner)

    def find_book(self, name_or_id: str) -> BookInfo | None:
        return find_book(self.books(), name_or_id)

    def ingest(self, path: str | Path, name: str | None = None, progress: Progress | None = None,
               background: bool = True, embed: bool = True, *,
               on_notice: Callable[[Msg], None] | None = None) -> BookInfo:
        return self.index.ingest(path, name, progress, background, embed, owner=self.owner, on_notice=on_notice)

    def owns(self, book_id: str) -> bool:
        """Whether this visitor is among the book's owners (may delete it)."""
        return self.index.owns(book_id, owner=self.owner)

    def release(self, book_id: str) -> bool:
        """This visitor's claim on the book goes; the book itself only when nobody else owns it."""
        return self.index.release(book_id, owner=self.owner)

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None,
                 **kwargs: Any) -> list[Passage]:
        return self.index.retrieve(query, k, book_id, mode, owner=self.owner, **kwargs)

    def search(self, query: str, k: int | None = None, book_id: str | None = None, mode: str | None = None,
               **kwargs: Any) -> RetrievalOutcome:
        return self.index.search(query, k, book_id, mode, owner=self.owner, **kwargs)
