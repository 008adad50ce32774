"""Fault battery, a cancel pressed before the upload handler starts (the upload queued behind another
book's indexing): it is honoured, nothing is indexed; the next upload starts afresh. The books
page's handlers in the order the page calls them (``on_upload_start`` unqueued, then the queued
``on_upload``), on the real index with the hash embedder."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index
from fixtures_ui.pages import make_pages, new_session

from rag.agent.deps import Deps


def _uploaded(source: Path) -> str:
    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()) / f"u{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    return str(shutil.copy(source, folder / source.name))


def _book(tmp_path: Path, title: str) -> Path:
    return make_epub(tmp_path / f"{title}.epub", [("第一回 开篇", "很久很久以前，有一座山。" * 20),
                                                  ("第二回 下山", "山里有一只猴子，后来下山学艺。" * 20)],
                     title=title, with_cover=False, with_copyright=False)


def test_a_cancel_before_the_handler_starts_is_honoured(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = make_settings(data_dir=tmp_path / "data", max_book_mb=1)
    index = make_index(tmp_path, settings)
    try:
        pages = make_pages(Deps(settings=settings, retriever=index), index=index)
        session = new_session(pages, "en")
        path = _uploaded(_book(tmp_path, "早取消的书"))
        assert pages.books.on_upload_start(path, session)["visible"] is True  # the Cancel button shows
        pages.books.on_upload_cancel(session)  # pressed while the upload waits in the queue
        result = pages.books.on_upload(session, path, "__all__")
        assert "The upload was cancelled." in result[pages.layout.books.books_html]
        assert index.books() == []
        # the next upload is not cancelled by the old click
        again = _uploaded(_book(tmp_path, "后来的书"))
        pages.books.on_upload_start(again, session)
        pages.books.on_upload(session, again, "__all__")
        assert [b.title for b in index.books()] == ["后来的书"]
    finally:
        index.close()
