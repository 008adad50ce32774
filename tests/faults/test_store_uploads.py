"""Faults, one file uploaded by two visitors at once on a public deployment: Gradio keeps identical
uploads at one path and runs the ingest handlers one after the other, so the second visitor's
handler starts after the first one's has finished. Neither may lose the file to the other: an
upload is deleted only once no handler has needed it for a while (Gradio's hourly sweep takes the
rest). Real index (Chroma on disk + BM25, the hash embedder), the books page's handlers."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_ui.pages import new_session, space_pages, visitor_book


@pytest.fixture
def space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    yield from space_pages(tmp_path, monkeypatch)


def gradio_upload(source: Path) -> str:
    """``source`` as Gradio leaves it: identical uploads share one folder of its cache."""
    from gradio.utils import get_upload_folder

    where = Path(get_upload_folder()) / "same-content"
    where.mkdir(parents=True, exist_ok=True)
    return str(shutil.copy(source, where / source.name))


def test_the_second_visitors_handler_still_finds_the_shared_upload(tmp_path: Path, space: Any) -> None:
    _, index, pages = space
    alice, bob = new_session(pages, "en"), new_session(pages, "en")
    path = gradio_upload(visitor_book(tmp_path))
    html = pages.layout.books.books_html
    first = pages.books.on_upload(alice, path, "__all__")  # the ingest queue runs one handler at a time...
    second = pages.books.on_upload(bob, path, "__all__")  # ...so bob's starts once alice's has ended
    assert "Indexed" in str(first[html]), first[html]
    # before: "Could not index this book: 甲的书.epub: file not found" (alice's handler deleted it)
    assert "Indexed" in str(second[html]) and "not found" not in str(second[html]), second[html]
    assert [b.title for b in index.books()] == ["甲的书"]
    book_id = index.books()[0].id
    assert book_id in alice.uploaded and book_id in bob.uploaded
    assert Path(path).exists()  # kept for a while: a third visitor's handler may still be queued


def test_an_upload_nobody_needs_any_more_is_deleted_after_the_grace(tmp_path: Path, space: Any) -> None:
    _, _, pages = space
    now = [1000.0]
    leases = pages.books.uploads
    leases.clock = lambda: now[0]
    source = visitor_book(tmp_path)
    path = gradio_upload(source)
    pages.books.on_upload(new_session(pages, "en"), path, "__all__")
    now[0] += leases.grace - 1
    leases.sweep()
    assert Path(path).exists()  # within the grace
    time.sleep(0.01)
    assert gradio_upload(source) == path  # the same file uploaded again: its handler is on the way
    now[0] += 2
    leases.sweep()
    assert Path(path).exists()
    now[0] += leases.grace
    leases.sweep()
    assert not Path(path).exists() and not Path(path).parent.exists()
