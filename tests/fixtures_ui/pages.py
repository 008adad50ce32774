"""The app's pages built without a server (tests/test_ui_pages_*.py): ``make_pages`` builds the
layout inside a throwaway ``gr.Blocks`` and returns the ``Pages``, whose handlers a test calls with
a ``Session``; ``value`` reads a component's new value out of a handler's updates."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fixtures_index.books import make_epub

from fixtures_ui.live import PASSAGES, WEB, SlowScriptedChatModel, make_index, scripted_responder
from rag.agent.deps import Deps
from rag.testing.fakes import FakeRetriever, FakeWebSearch
from rag.ui.pages import AppContext, Pages
from rag.ui.session import Session


def make_pages(deps: Deps, index: Any | None = None, make_deps: Any | None = None, **options: Any) -> Pages:
    import gradio as gr

    from rag.ui.blocks import build_pages

    with gr.Blocks():
        return build_pages(AppContext(deps, index=index, make_deps=make_deps, **options))


def scripted_deps(settings: Any, delay_s: float = 0.0) -> Deps:
    """The browser tests' scripted turn: route complex, not enough, a web round, enough, answer."""
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=delay_s)
    return Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))


def value(updates: dict[Any, Any], component: Any) -> Any:
    """A component's new value in a handler's updates (a plain value or ``gr.update(value=...)``)."""
    out = updates[component]
    return out.get("value") if isinstance(out, dict) and out.get("__type__") == "update" else out


def last(updates: Iterable[dict[Any, Any]]) -> dict[Any, Any]:
    """All of a streaming handler's updates, merged (the page after the last one)."""
    merged: dict[Any, Any] = {}
    for update in updates:
        merged.update(update)
    return merged


def new_session(pages: Pages, lang: str = "zh") -> Session:
    return pages.ctx.store.add(Session(lang))


def space_pages(tmp_path: Path, monkeypatch: Any) -> Iterator[tuple[Any, Any, Pages]]:
    """(settings, index, pages) of an app configured as a Hugging Face Space (private libraries), for a
    fixture to yield from; the index is closed afterwards."""
    from conftest import make_settings

    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = make_settings(data_dir=tmp_path / "data")
    assert settings.shared_library is False
    index = make_index(tmp_path, settings)
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    yield settings, index, pages
    index.close()


def visitor_book(tmp_path: Path) -> Path:
    """A small two-chapter EPUB a visitor uploads."""
    return make_epub(tmp_path / "甲的书.epub", [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 20),
                                               ("第二回 学艺", "石猴拜师学艺，得名孙悟空。" * 20)],
                     title="甲的书", with_cover=False, with_copyright=False)
