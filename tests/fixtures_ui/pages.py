"""The app's pages built without a server (tests/test_ui_pages_*.py): ``make_pages`` builds the
layout inside a throwaway ``gr.Blocks`` and returns the ``Pages``, whose handlers a test calls with
a ``Session``; ``value`` reads a component's new value out of a handler's updates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fixtures_ui.live import PASSAGES, WEB, SlowScriptedChatModel, scripted_responder
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
