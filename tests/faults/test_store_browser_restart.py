"""Faults, a restart of a public deployment seen from a browser (SPACE_ID set, a private library):
a book uploaded in the page is still in that browser's list after the server restarts with the
same DATA_DIR and the page is reloaded (the browser keeps the owner token, ``gr.BrowserState``),
and a new browser does not see it. The real app (rag.ui.build_app) served twice on one loopback port
(the browser's storage is per origin), each time with a new index and session store, driven by
Playwright in headless Chromium.

Run alone: ``pytest -m browser tests/faults/test_store_browser_restart.py``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import launch_chromium, make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import free_port, make_index

from rag.agent.deps import Deps
from rag.testing.fakes import FakeWebSearch

pytestmark = pytest.mark.browser


@contextmanager
def app_run(settings: Any, tmp_path: Path, port: int) -> Iterator[str]:
    """One run of the server: a new index and session store over ``settings.data_dir``."""
    from rag.ui import build_app
    from rag.ui.serve import launch

    index = make_index(tmp_path, settings)
    demo = build_app(Deps(settings=settings, retriever=index, web_search=FakeWebSearch([])), index=index)
    launch(demo, settings, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
        index.close()


def test_an_uploaded_book_is_in_the_visitors_list_after_a_restart(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = make_settings(data_dir=tmp_path / "data", ui_language="en")
    assert settings.shared_library is False
    source = make_epub(tmp_path / "restart-book.epub", [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 20),
                                                       ("第二回 学艺", "石猴拜师学艺，得名孙悟空。" * 20)],
                       title="重启之书", with_cover=False, with_copyright=False)
    port = free_port()
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            context = browser.new_context(locale="en-US", viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            books = page.locator("#rag-books")
            with app_run(settings, tmp_path, port) as url:
                page.goto(url, wait_until="domcontentloaded")
                expect(page.locator("#rag-banner .badge").first).to_be_visible(timeout=30_000)
                page.get_by_role("tab", name="Books").click()
                page.locator("#rag-upload input[type=file]").set_input_files(str(source))
                expect(books).to_contain_text("重启之书", timeout=60_000)
            with app_run(settings, tmp_path, port) as url:  # the restart: same DATA_DIR, same origin
                page.reload(wait_until="domcontentloaded")
                expect(page.locator("#rag-banner .badge").first).to_be_visible(timeout=30_000)
                page.get_by_role("tab", name="Books").click()
                # before: "No books yet." (the book was the forgotten session's)
                expect(books).to_contain_text("重启之书", timeout=30_000)
                stranger = browser.new_context(locale="en-US").new_page()
                stranger.goto(url, wait_until="domcontentloaded")
                expect(stranger.locator("#rag-banner .badge").first).to_be_visible(timeout=30_000)
                stranger.get_by_role("tab", name="Books").click()
                expect(stranger.locator("#rag-books")).to_contain_text("No books yet", timeout=30_000)
                expect(stranger.locator("#rag-books")).not_to_contain_text("重启之书")
        finally:
            browser.close()
