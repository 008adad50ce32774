"""The books page's handlers called directly (no server), on the real index (hash embedder): an
upload is indexed and picked, a broken file is explained in the page's language, the upload is not
kept, a cancelled upload leaves nothing, deletion takes two clicks and only for one's own upload,
a private library shows a visitor's book to that visitor only, ACTIVE_BOOK is the starting book."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index
from fixtures_ui.pages import make_pages, new_session, value

from rag.agent.deps import Deps


@pytest.fixture
def library(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = make_settings(data_dir=tmp_path / "data", max_book_mb=1)
    index = make_index(tmp_path, settings)
    yield settings, index
    index.close()


def uploaded(tmp_path: Path, source: Path) -> str:
    """``source`` as Gradio leaves an upload: a file in its upload folder."""
    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()) / f"u{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    return str(shutil.copy(source, folder / source.name))


def book(tmp_path: Path, title: str = "小书测试") -> Path:
    return make_epub(tmp_path / f"{title}.epub", [("第一回 开篇", "很久很久以前，有一座山。" * 20),
                                                  ("第二回 下山", "山里有一只猴子，后来下山学艺。" * 20)],
                     title=title, with_cover=False, with_copyright=False)


def test_an_upload_is_indexed_picked_and_not_kept(tmp_path, library):
    settings, index = library
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    v, session = pages.layout.books, new_session(pages)
    pages.books.uploads.grace = 0  # no other visitor's handler waits for this file (tests/faults/test_store_uploads.py)
    path = uploaded(tmp_path, book(tmp_path))
    seen: list[str] = []
    out = pages.books.on_upload(session, path, "__all__", lambda fraction, desc="": seen.append(desc))
    assert not Path(path).exists()  # the upload is deleted once no handler needs it
    assert "现在就可以按关键词提问" in out[v.books_html] and "小书测试" in out[v.books_html]
    books = index.books()
    assert [b.title for b in books] == ["小书测试"] and books[0].chapters == 2
    assert out[v.active_book]["value"] == books[0].id and books[0].id in session.uploaded
    assert seen and any("关键词检索已就绪" in s for s in seen)  # progress says it can be asked about already
    assert value(out, v.upload) is None
    ticked = pages.books.on_tick(session, books[0].id)
    assert "小书测试" in ticked[v.books_html] and ticked[v.active_book]["value"] == books[0].id


def test_a_broken_upload_is_explained_in_the_page_language_and_not_kept(tmp_path, library):
    settings, index = library
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    v = pages.layout.books
    pages.books.uploads.grace = 0
    bad = tmp_path / "broken.epub"
    bad.write_bytes(b"PK\x03\x04 this is not an epub")
    path = uploaded(tmp_path, bad)
    out = pages.books.on_upload(new_session(pages, "zh"), path, "__all__")
    assert ("无法索引这本书：broken.epub：不是有效的 EPUB（它不是 ZIP 压缩包）。支持的格式：.epub, .txt, .md。"
            in out[v.books_html]) and "book-msg note error" in out[v.books_html]
    assert not Path(path).exists() and index.books() == []
    en = pages.books.on_upload(new_session(pages, "en"), uploaded(tmp_path, bad), "__all__")
    assert "not a valid EPUB" in en[v.books_html]


def test_a_cancelled_upload_leaves_nothing(tmp_path, library):
    settings, index = library

    class SlowIngest:
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.started = threading.Event()

        def for_owner(self, owner):
            return self

        def ingest(self, *args, **kwargs):
            self.started.set()
            time.sleep(1.0)
            return self.inner.ingest(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    slow = SlowIngest(index)
    pages = make_pages(Deps(settings=settings, retriever=index), index=slow)
    session = new_session(pages, "en")
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(
        pages.books.on_upload(session, uploaded(tmp_path, book(tmp_path, "取消的书")), "__all__")))
    worker.start()
    assert slow.started.wait(10)
    assert pages.books.on_upload_cancel(session)["visible"] is False
    worker.join(60)
    assert "The upload was cancelled." in result[pages.layout.books.books_html]
    assert index.books() == []


def test_deleting_takes_two_clicks_and_only_for_ones_own_upload(tmp_path, library):
    settings, index = library
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    v, owner, other = pages.layout.books, new_session(pages), new_session(pages)
    pages.books.on_upload(owner, uploaded(tmp_path, book(tmp_path)), "__all__")
    book_id = index.books()[0].id
    assert "请先在“当前书籍”里选一本书。" in pages.books.on_delete(owner, "__all__")[v.books_html]
    refused = pages.books.on_delete(other, book_id)
    assert "只能删除你在本次会话中上传的书。" in refused[v.books_html] and index.books()
    first = pages.books.on_delete(owner, book_id)
    assert "再点一次确认删除《小书测试》" in first[v.books_html]
    assert first[v.delete_btn]["value"] == "确认删除《小书测试》" and first[v.delete_btn]["variant"] == "stop"
    assert [b.id for b in index.books()] == [book_id]
    picked = pages.books.on_pick(owner, "__all__")  # another book: the pending deletion is off
    assert owner.pending_delete is None and picked[v.delete_btn]["variant"] == "secondary"
    pages.books.on_delete(owner, book_id)
    done = pages.books.on_delete(owner, book_id)
    assert "已删除《小书测试》。" in done[v.books_html] and index.books() == []
    assert done[v.active_book]["value"] == "__all__"
    en = pages.shell.on_language(owner, "en", {}, "__all__")  # the line follows the language
    assert "Deleted “小书测试”." in en[v.books_html]


def test_a_private_library_shows_a_visitors_book_to_that_visitor_only(tmp_path, library):
    settings, index = library
    private = settings.model_copy(update={"shared_library": False})
    pages = make_pages(Deps(settings=private, retriever=index), index=index)
    mine, theirs = new_session(pages), new_session(pages)
    pages.books.on_upload(mine, uploaded(tmp_path, book(tmp_path)), "__all__")
    assert "小书测试" in pages.books.on_tick(mine, None)[pages.layout.books.books_html]
    assert "小书测试" not in pages.books.on_tick(theirs, None)[pages.layout.books.books_html]


def test_active_book_setting_is_the_book_a_page_starts_with(tmp_path, library):
    settings, index = library
    info = index.ingest(str(book(tmp_path, "默认的书")), background=False)
    pages = make_pages(Deps(settings=settings.model_copy(update={"active_book": "默认的书"}), retriever=index),
                       index=index)
    loaded = pages.shell.on_load(None, {}, "__all__")
    assert loaded[pages.layout.books.active_book]["value"] == info.id
    unknown = make_pages(Deps(settings=settings.model_copy(update={"active_book": "nope"}), retriever=index),
                         index=index)
    assert unknown.shell.on_load(None, {}, "__all__")[unknown.layout.books.active_book]["value"] == "__all__"


def test_without_an_index_the_books_page_says_so(tmp_path):
    pages = make_pages(Deps(settings=make_settings(data_dir=tmp_path / "data")))
    out = pages.books.on_upload(new_session(pages, "en"), str(tmp_path / "x.epub"), None)
    assert "book-msg note error" in out[pages.layout.books.books_html]
    assert "book-msg" in pages.books.on_delete(new_session(pages, "en"), "b1")[pages.layout.books.books_html]


def test_the_active_book_is_kept_in_the_browser_across_a_reload(tmp_path, library):
    """Issue 25, item 5: the picked book is written to the browser's state and a reloaded page (a
    fresh page, the session found again or not) starts with it; a book gone since falls back."""
    settings, index = library
    info = index.ingest(str(book(tmp_path, "留下的书")), background=False)
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    session = new_session(pages)
    stored = pages.shell.on_load(session, {}, "__all__")[pages.layout.shell.browser]
    stored = pages.books.keep_book(info.id, stored)
    assert stored["book"] == info.id and stored["sid"] == session.id
    for held in (None, session):  # a reload: the page holds no session, the browser names it
        reloaded = pages.shell.on_load(held, stored, "__all__")
        assert reloaded[pages.layout.books.active_book]["value"] == info.id
        assert reloaded[pages.layout.shell.browser]["book"] == info.id
    gone = pages.shell.on_load(None, {**stored, "book": "no-such-book"}, "__all__")
    assert gone[pages.layout.books.active_book]["value"] == "__all__"
    assert pages.books.keep_book("__all__", stored)["book"] is None


def test_the_scope_panel_says_on_apply_what_its_fields_mean(tmp_path):
    """Issue 25, item 1: empty fields mean the whole book; Apply says what is searched, or which
    field is not a chapter number, in the page's language."""
    pages = make_pages(Deps(settings=make_settings(data_dir=tmp_path / "data")))
    zh, en = new_session(pages, "zh"), new_session(pages, "en")
    assert "整本书" in value(pages.books.on_scope_apply(zh, "", "", ""), pages.layout.books.scope_status)
    said = value(pages.books.on_scope_apply(en, "3", "二十七", "5"), pages.layout.books.scope_status)
    assert "chapters 3 to 27" in said and "nothing after chapter 5" in said
    wrong = value(pages.books.on_scope_apply(zh, "abc", "", ""), pages.layout.books.scope_status)
    assert "从第几章" in wrong and "abc" in wrong and "不是第几章的数字" in wrong  # no book: the generic word
    assert "不是第几章的数字" in value(pages.books.on_scope_apply(zh, "", "", "0"), pages.layout.books.scope_status)
    # The last Apply's line follows a language switch (it is kept as a message, not as text).
    switched = pages.shell.on_language(en, "zh", {}, "__all__")
    assert "第 3 至 27 章" in value(switched, pages.layout.books.scope_status)
    assert value(pages.shell.on_language(en, "en", {}, "__all__"), pages.layout.books.scope_status) == said


def test_the_scope_fields_are_text_that_is_empty_when_empty(tmp_path):
    """Issue 25, item 1: no number field that shows (and sends) a hidden 0 which Gradio then refuses
    before the turn can say why."""
    import gradio as gr

    pages = make_pages(Deps(settings=make_settings(data_dir=tmp_path / "data")))
    v = pages.layout.books
    for field in (v.chapter_from, v.chapter_to, v.read_up_to):
        assert isinstance(field, gr.Textbox) and field.value == ""
        assert field.preprocess("") == ""  # nothing to refuse


def test_the_embedding_estimate_is_steady():
    """Issue 25, item 5: batches land every few seconds and the page ticks every 2 s; the estimate
    (smoothed measured throughput) never jumps up by a third from one tick to the next, and it ends
    near the truth."""
    from rag.ui.pages.books import EtaTracker

    now = [0.0]
    tracker = EtaTracker(clock=lambda: now[0])
    landed, at = {}, 0
    for gap in [4] * 10 + [20] + [4] * 10 + [3] * 10:  # a batch of 64 every 4 s, a 20 s stall, faster
        at += gap
        landed[at] = 64
    embedded, seen = 0, []
    for tick in range(0, 120, 2):
        now[0] = float(tick)
        embedded += sum(n for when, n in landed.items() if tick - 2 < when <= tick)
        seen.append(tracker.observe("b", embedded, 2000, True))
    estimates = [s for s in seen if s is not None]
    assert len(estimates) > 40
    jumps = [b / a for a, b in zip(estimates, estimates[1:], strict=False) if a > 5]
    assert max(jumps) < 1.3, [round(e) for e in estimates]
