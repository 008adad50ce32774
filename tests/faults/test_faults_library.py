"""Fault suite (issue 12), a public deployment's books: on a Hugging Face Space (SPACE_ID set) a book
uploaded in a browser session is that session's, unless the owner shares the library
(SHARED_LIBRARY). Another visitor neither lists nor searches it, not even by its id; books nobody
owns (the sample guide, the command line's) are everyone's. Real index (Chroma on disk + BM25, the
hash embedder), and the app's page handlers driven by two browser sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index
from fixtures_ui.pages import last, make_pages

from rag.agent.deps import Deps
from rag.errors import BookError

SHARED = ("第一回 导读", "本书是西游记的导读，介绍全书的结构与人物。" * 30)
ALICE = ("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 30)
BOB = ("第一回 火焰山", "火焰山八百里火焰，须借铁扇公主的芭蕉扇才能过去。" * 30)


def books(tmp_path: Path) -> dict[str, Path]:
    return {
        "shared": make_epub(tmp_path / "shared.epub", [SHARED, ("第二回 人物", "唐僧师徒四人。" * 30)], title="共享导读"),
        "alice": make_epub(tmp_path / "alice.epub", [ALICE, ("第二回 学艺", "石猴拜师学艺。" * 30)], title="甲的书"),
        "bob": make_epub(tmp_path / "bob.epub", [BOB, ("第二回 借扇", "悟空三借芭蕉扇。" * 30)], title="乙的书"),
    }


def titles(infos: list[Any]) -> set[str]:
    return {info.title for info in infos}


def test_a_visitor_sees_their_own_books_and_the_shared_ones(tmp_path: Path) -> None:
    files = books(tmp_path)
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    try:
        index.ingest(files["shared"], background=False)
        alice = index.ingest(files["alice"], background=False, owner="alice")
        index.ingest(files["bob"], background=False, owner="bob")
        assert titles(index.books()) == {"共享导读", "甲的书", "乙的书"}  # the whole library
        assert titles(index.books(owner="alice")) == {"共享导读", "甲的书"}
        assert titles(index.books(owner="bob")) == {"共享导读", "乙的书"}

        assert any(p.book_id == alice.id for p in index.retrieve("仙石 石猴", k=10))
        assert any(p.book_id == alice.id for p in index.retrieve("仙石 石猴", k=10, owner="alice"))
        bob_sees = index.retrieve("仙石 石猴", k=10, owner="bob")
        assert bob_sees and all(p.book_title in ("共享导读", "乙的书") for p in bob_sees)
        with pytest.raises(BookError, match="no book with id"):
            index.retrieve("仙石", book_id=alice.id, owner="bob")  # not even by its id
        with pytest.raises(BookError):
            index.book(alice.id, owner="bob")

        view = index.for_owner("bob")  # what a session's graph and book panel use
        assert titles(view.books()) == {"共享导读", "乙的书"} and view.find_book("甲的书") is None
        assert all(p.book_id != alice.id for p in view.retrieve("仙石 石猴", k=10))
        # the graph's retrieve_local calls search() (with its rewritten queries): the same scope
        assert all(p.book_id != alice.id for p in view.search("仙石 石猴", k=10, queries=["石猴"]).passages)

        index.ingest(files["alice"], background=False, owner="bob")  # the same book, uploaded by bob too
        assert "甲的书" in titles(index.books(owner="bob")) and "甲的书" in titles(index.books(owner="alice"))
    finally:
        index.close()
    manifest = json.loads((settings.keyword_dir / alice.id / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["owners"] == ["alice", "bob"]
    reopened = make_index(tmp_path, settings)  # the tags are on disk, not in memory
    try:
        assert titles(reopened.books(owner="carol")) == {"共享导读"}
    finally:
        reopened.close()


def test_the_library_is_shared_locally_and_private_on_a_space(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert make_settings().shared_library is True
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    assert make_settings().shared_library is False
    assert make_settings(shared_library=True).shared_library is True  # the owner may share it


@contextmanager
def served(settings: Any, index: Any) -> Iterator[Any]:
    """The app's pages (their handlers, as the page's events call them: tests/fixtures_ui/pages.py)."""
    deps = Deps(settings=settings, retriever=index)  # no model: answers list the passages found
    yield make_pages(deps, index=index, make_deps=lambda s, index=None: Deps(settings=s, retriever=index))


def visitor(pages: Any) -> tuple[Any, Any]:
    """A browser session, started as the page does when it opens."""
    return pages, pages.shell.on_load(None, {}, "__all__")[pages.layout.shell.session]


def upload(client: tuple[Any, Any], path: Path) -> str:
    pages, session = client
    return repr(pages.books.on_upload(session, str(path), "__all__"))


def listed(client: tuple[Any, Any]) -> str:
    pages, session = client
    return str(pages.books.on_tick(session, "__all__")[pages.layout.books.books_html])


def asked(client: tuple[Any, Any], question: str) -> str:
    pages, session = client
    pages.chat.on_submit(session, question)
    return repr(last(pages.chat.on_ask(session, "__all__", None, None, None, False)))


@pytest.mark.parametrize("space", [True, False])
def test_an_upload_on_a_space_is_the_uploaders_own(monkeypatch, tmp_path: Path, space: bool) -> None:
    if space:
        monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    else:
        monkeypatch.delenv("SPACE_ID", raising=False)
    files = books(tmp_path)
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    try:
        index.ingest(files["shared"], background=False)  # the sample guide: nobody's
        with served(settings, index) as url:
            alice, bob = visitor(url), visitor(url)
            uploaded = upload(alice, files["alice"])
            alice_list, bob_list = listed(alice), listed(bob)
            alice_answer, bob_answer = asked(alice, "仙石 石猴"), asked(bob, "仙石 石猴")
    finally:
        index.close()
    assert "甲的书" in uploaded and "甲的书" in alice_list and "仙石迸裂" in alice_answer
    assert "共享导读" in alice_list and "共享导读" in bob_list
    if space:  # before: bob listed and searched alice's book
        assert "甲的书" not in bob_list, bob_list
        assert "仙石迸裂" not in bob_answer  # the question is echoed; the passage is not
    else:  # a shared library, as before
        assert "甲的书" in bob_list and "仙石迸裂" in bob_answer
