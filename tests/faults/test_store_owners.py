"""Faults, a restart of a public deployment (SPACE_ID set, a private library): a visitor's books are
theirs through an owner token the browser keeps (``gr.BrowserState``), not the server's in-memory
session id, so after the server restarts with the same DATA_DIR the visitor's reloaded page lists
their books again and may delete them; another visitor still neither sees nor removes them. Real
index (Chroma on disk + BM25, the hash embedder), the pages' handlers of two server runs."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index
from fixtures_ui.pages import make_pages

from rag.agent.deps import Deps


@pytest.fixture
def space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = make_settings(data_dir=tmp_path / "data")
    assert settings.shared_library is False
    return settings


def server(tmp_path: Path, settings: Any) -> tuple[Any, Any]:
    """One run of the app: its index and pages (a new session store)."""
    index = make_index(tmp_path, settings)
    return index, make_pages(Deps(settings=settings, retriever=index), index=index)


def uploaded(source: Path) -> str:
    from gradio.utils import get_upload_folder

    where = Path(get_upload_folder()) / f"u{time.monotonic_ns()}"
    where.mkdir(parents=True, exist_ok=True)
    return str(shutil.copy(source, where / source.name))


def load(pages: Any, stored: dict[str, Any]) -> tuple[Any, dict[str, Any], str]:
    """A page load by a browser that kept ``stored``: its session, what the browser keeps now, the book list."""
    out = pages.shell.on_load(None, stored, "__all__")
    return out[pages.layout.shell.session], out[pages.layout.shell.browser], str(out[pages.layout.books.books_html])


def test_a_visitors_books_survive_a_restart(tmp_path: Path, space: Any) -> None:
    settings = space
    source = make_epub(tmp_path / "甲的书.epub", [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 20),
                                                 ("第二回 学艺", "石猴拜师学艺，得名孙悟空。" * 20)], title="甲的书")
    index, pages = server(tmp_path, settings)
    try:
        alice, alice_browser, _ = load(pages, {})
        _, bob_browser, _ = load(pages, {})
        pages.books.on_upload(alice, uploaded(source), "__all__")
        book_id = index.books()[0].id
        alice_browser = pages.books.keep_book(book_id, alice_browser)
    finally:
        index.close()

    index, pages = server(tmp_path, settings)  # the restart: no session survives in memory
    try:
        alice, _, listed = load(pages, alice_browser)
        # before: "No books yet." (the book was owned by the old session's id)
        assert "甲的书" in listed, listed
        assert [b.title for b in pages.ctx.library(alice).books()] == ["甲的书"]
        assert pages.ctx.library(alice).retrieve("仙石 石猴", k=3)
        bob, _, bob_listed = load(pages, bob_browser)
        assert "甲的书" not in bob_listed and pages.ctx.library(bob).books() == []
        pages.books.on_delete(bob, book_id)
        said = str(pages.books.on_delete(bob, book_id)[pages.layout.books.books_html])
        assert "Deleted" not in said and "已删除" not in said and (settings.keyword_dir / book_id).is_dir()
        pages.books.on_delete(alice, book_id)  # her own book: she may delete it after the restart
        said = str(pages.books.on_delete(alice, book_id)[pages.layout.books.books_html])
        assert "甲的书" in said and not (settings.keyword_dir / book_id).exists(), said
    finally:
        index.close()


def test_a_forged_or_missing_owner_token_gets_a_fresh_one(tmp_path: Path, space: Any) -> None:
    settings = space
    index, pages = server(tmp_path, settings)
    try:
        first, browser, _ = load(pages, {})
        token = browser.get("owner")
        assert isinstance(token, str) and len(token) >= 32 and token != first.id
        for bad in ("", "x", "../../etc", 42, "(unknown)"):
            session, kept, _ = load(pages, {"owner": bad})
            assert pages.ctx.owner_of(session) not in ("", "x", "../../etc", "42", "(unknown)")
            assert kept["owner"] == pages.ctx.owner_of(session)
    finally:
        index.close()
