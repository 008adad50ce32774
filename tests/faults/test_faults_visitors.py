"""Fault suite (issue 22), visitors of a public deployment (SPACE_ID set, a private library): no
visitor removes another's book. Deleting or cancelling takes back that visitor's claim only; the
book goes once nobody owns it, and a book nobody owns only by the operator. Two visitors uploading
one file at once (Gradio keeps identical uploads at one path) both succeed, and it is indexed once.
Real index (Chroma on disk + BM25, the hash embedder), the books page's handlers, two sessions."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_ui.pages import new_session, space_pages, visitor_book

from rag.errors import BookError


@pytest.fixture
def space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    yield from space_pages(tmp_path, monkeypatch)


def uploaded(source: Path, folder: str | None = None) -> str:
    """``source`` as Gradio leaves an upload; the same ``folder`` for identical uploads."""
    from gradio.utils import get_upload_folder

    where = Path(get_upload_folder()) / (folder or f"u{time.monotonic_ns()}")
    where.mkdir(parents=True, exist_ok=True)
    return str(shutil.copy(source, where / source.name))


def listed(pages: Any, session: Any) -> str:
    return str(pages.books.on_tick(session, "__all__")[pages.layout.books.books_html])


def delete(pages: Any, session: Any, book_id: str) -> str:
    pages.books.on_delete(session, book_id)  # the first click asks
    return str(pages.books.on_delete(session, book_id)[pages.layout.books.books_html])


def test_a_visitor_deleting_a_shared_upload_removes_only_their_claim(tmp_path: Path, space: Any) -> None:
    settings, index, pages = space
    alice, bob = new_session(pages, "en"), new_session(pages, "en")
    source = visitor_book(tmp_path)
    pages.books.on_upload(alice, uploaded(source), "__all__")
    book_id = index.books()[0].id
    pages.books.on_upload(bob, uploaded(source), "__all__")  # the same book, uploaded by bob too
    assert book_id in bob.uploaded
    said = delete(pages, bob, book_id)
    # before: the book was gone for everyone (directory removed, alice's search found nothing)
    assert "Removed “甲的书” from your books" in said, said
    assert "甲的书" in listed(pages, alice) and "No books yet" in listed(pages, bob)
    assert (settings.keyword_dir / book_id).is_dir()
    assert any(p.book_id == book_id for p in index.for_owner(alice.owner).retrieve("仙石 石猴", k=5))
    assert "Deleted “甲的书”." in delete(pages, alice, book_id)  # the last owner: now it goes
    assert index.books() == [] and not (settings.keyword_dir / book_id).exists()


def test_a_cancelled_upload_of_anothers_book_leaves_it_theirs(tmp_path: Path, space: Any) -> None:
    settings, index, pages = space
    alice, bob = new_session(pages, "en"), new_session(pages, "en")
    source = visitor_book(tmp_path)
    pages.books.on_upload(alice, uploaded(source), "__all__")
    book_id = index.books()[0].id

    def cancel(fraction: Any, desc: str = "") -> None:
        pages.books.on_upload_cancel(bob)  # bob clicks Cancel while his upload is indexed

    out = pages.books.on_upload(bob, uploaded(source), "__all__", cancel)
    assert "The upload was cancelled." in out[pages.layout.books.books_html]
    assert "甲的书" in listed(pages, alice) and "No books yet" in listed(pages, bob)  # before: gone for alice too
    assert index.book(book_id).id == book_id and (settings.keyword_dir / book_id).is_dir()


def test_a_book_nobody_owns_is_deleted_only_by_the_operator(tmp_path: Path, space: Any) -> None:
    settings, index, _ = space
    shared = index.ingest(visitor_book(tmp_path), background=False)  # the command line's: nobody's
    with pytest.raises(BookError, match="only the server's operator"):
        index.for_owner("bob").release(shared.id)
    assert index.book(shared.id).id == shared.id
    assert index.release(shared.id) is True and index.books() == []


def test_two_visitors_uploading_one_file_at_once_both_succeed(tmp_path: Path, space: Any,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    settings, index, pages = space
    alice, bob = new_session(pages, "en"), new_session(pages, "en")
    source = visitor_book(tmp_path)
    path = uploaded(source, "same")
    assert uploaded(source, "same") == path  # Gradio: identical uploads, one path
    started, go = threading.Event(), threading.Event()

    def held(fraction: Any, desc: str = "") -> None:
        started.set()
        assert go.wait(30)

    result: dict[Any, Any] = {}
    worker = threading.Thread(target=lambda: result.update(pages.books.on_upload(alice, path, "__all__", held)))
    caplog.set_level(logging.INFO, logger="rag.index.store")
    worker.start()
    try:
        assert started.wait(30)  # alice's upload is under way...
        bob_out = pages.books.on_upload(bob, path, "__all__")  # ...when bob's is done (and its file deleted)
    finally:
        go.set()
        worker.join(60)
    html = pages.layout.books.books_html
    assert "Indexed" in str(bob_out[html]), bob_out[html]
    # before: "Could not index this book: …: file not found", and alice's upload was lost
    assert "Indexed" in str(result[html]) and "not found" not in str(result[html]), result[html]
    assert [b.title for b in index.books()] == ["甲的书"]
    assert "甲的书" in listed(pages, alice) and "甲的书" in listed(pages, bob)
    assert sum("indexed " in r.getMessage() and "chunks" in r.getMessage() for r in caplog.records) == 1
