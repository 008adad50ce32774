"""The ``gr.Blocks`` app: builds the pages (``rag.ui.pages``) on one layout (``rag.ui.layout``),
wires their handlers to the page's events, and registers the script API (``/ask``, ``/ask_json``).

Everything session-specific (thread id, conversation, language, settings, the graph built for
them, the one turn it may run at a time) lives in one ``Session`` (``rag.ui.session``), held by
``gr.State`` and found again after a reload through the id the browser keeps (``gr.BrowserState``);
nothing is shared between browser sessions except the book index and the server's defaults.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr

from rag.agent.deps import Deps
from rag.errors import RagError, check_question
from rag.i18n import Msg
from rag.ui.api import AskResult, ScriptApi, api_visitor, returning
from rag.ui.layout import build_layout
from rag.ui.mcp import client_address
from rag.ui.pages import AppContext, Pages
from rag.ui.pages.base import GraphFactory, MakeDeps, per_session_deps
from rag.ui.session import Session, SessionStore

logger = logging.getLogger(__name__)

TITLE = "Enough RAG"  # the browser tab's title
ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"
CSS_PATH = ASSETS_DIR / "ui.css"
JS_PATH = ASSETS_DIR / "ui.js"
PRIVATE: dict[str, Any] = {"api_visibility": "private"}  # the page's own events are no API
LOCALE_JS = "async (lang, changed) => [lang, (window.ragSetLocale && await window.ragSetLocale(lang)) ? 'yes' : '']"

__all__ = ["Session", "build_app", "build_pages"]


def _asset(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        logger.warning("UI asset %s not found; the page works without it", path)
        return ""


def _browser_secret(data_dir: Path) -> str:
    """The key that encrypts what the browser keeps (BrowserState), stable across restarts when
    DATA_DIR is writable (else per run: the browser then starts afresh after a restart)."""
    path = Path(data_dir) / ".ui-browser-secret"
    try:
        if path.is_file():
            value = path.read_text(encoding="ascii").strip()
            if len(value) >= 16:
                return value
        value = secrets.token_urlsafe(24)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value, encoding="ascii")
        path.chmod(0o600)
        return value
    except OSError:
        return secrets.token_urlsafe(24)


def build_pages(ctx: AppContext) -> Pages:
    """The pages on a fresh layout; call inside ``gr.Blocks`` (``build_app`` does; a test may too)."""
    settings = ctx.settings
    head = f"<style>{_asset(CSS_PATH)}</style><script>{_asset(JS_PATH)}</script>"
    layout = build_layout(lang=ctx.default_lang, head=head, banner=ctx.banner_html(Session(ctx.default_lang)),
                          browser_secret=_browser_secret(settings.data_dir), settings=settings,
                          has_index=ctx.index is not None,
                          banner_ticks=ctx.local is not None and not ctx.local.state().final)
    return Pages(ctx, layout)


def build_app(deps: Deps, index: Any | None = None, make_deps: MakeDeps | None = None, *,
              graph_factory: GraphFactory | None = None,
              ask_concurrency: int = 4, sessions: SessionStore | None = None, local: Any | None = None) -> gr.Blocks:
    """Build the Gradio app.

    ``deps``: the server's default dependencies (each session gets its own graph, conversation
    memory and web-search budget on top of them). ``index``: the book index (``rag.index``) for
    the book panel, or None. ``make_deps(settings, index=...)``: rebuilds deps from per-session
    settings (LLM / search); without it only k and web rounds can change per session.
    ``graph_factory(deps, checkpointer=...)`` defaults to ``rag.agent.graph.build_graph``.
    ``ask_concurrency``: questions answered at once (others queue and see their place).
    ``local``: the embedded model (``rag.local.LocalModel``), started here in the background; the
    banner follows its download and load, and answers use it once it is ready.
    """
    ctx = AppContext(deps, index=index, make_deps=make_deps, graph_factory=graph_factory,
                     store=sessions if sessions is not None else SessionStore(), local=local)
    with gr.Blocks(title=TITLE, analytics_enabled=False, fill_width=True) as demo:
        pages = build_pages(ctx)
        _wire_shell(demo, pages)
        _wire_chat(pages, ask_concurrency)
        _wire_books(pages)
        _wire_settings(pages)
        _register_api(ctx, ask_concurrency)
    if local is not None:
        local.start(on_ready=ctx.use_model)
    return demo


def _wire_shell(demo: gr.Blocks, pages: Pages) -> None:
    shell, v = pages.shell, pages.layout.shell
    chat, books, settings = pages.layout.chat, pages.layout.books, pages.layout.settings
    labels = list(shell.labels(pages.ctx.default_lang))
    common = [v.session, v.browser, v.banner, settings.status, *chat.panels, *books.outputs, *labels]

    def on_load(stored: Any, session: Session | None, current: str | None, request: gr.Request) -> dict[Any, Any]:
        accept = ""
        if request is not None:
            try:
                accept = request.headers.get("accept-language", "")
            except Exception:  # noqa: BLE001 - no headers: the server's language
                accept = ""
        return shell.on_load(session, stored, current, accept)

    loaded = demo.load(on_load, inputs=[v.browser, v.session, books.active_book],
                       outputs=[*common, *settings.fields, settings.remember, chat.send, chat.stop],
                       queue=False, **PRIVATE)
    changed = v.lang.input(
        lambda lang, stored, session, current: shell.on_language(session, lang, stored, current),
        inputs=[v.lang, v.browser, v.session, books.active_book], outputs=[*common, books.scope_status], queue=False,
        **PRIVATE)
    demo.unload(pages.chat.on_page_closed)  # a closed page stops its turn
    v.banner_timer.tick(shell.on_banner_tick, inputs=[v.session], outputs=[v.banner, v.banner_timer], queue=False,
                        **PRIVATE)
    for trigger in (loaded, changed):
        trigger.then(shell.hide_if, inputs=[v.lang, v.locale_changed], outputs=shell.remounted, queue=False,
                     js=LOCALE_JS, **PRIVATE).then(shell.show_again, outputs=shell.remounted, queue=False, **PRIVATE)


def _wire_chat(pages: Pages, ask_concurrency: int) -> None:
    chat, v, shell = pages.chat, pages.layout.chat, pages.layout.shell
    books = pages.layout.books
    submit: dict[str, Any] = {
        "fn": lambda text, session: chat.on_submit(session, text), "inputs": [v.question, shell.session],
        "outputs": [shell.session, v.question, *v.panels, v.send, v.stop], "concurrency_limit": None,
        "show_progress": "hidden", **PRIVATE,  # queued (so its warnings reach the page) but never waits
    }
    ask: dict[str, Any] = {
        "fn": chat.on_ask,
        "inputs": [shell.session, books.active_book, books.chapter_from, books.chapter_to, books.read_up_to,
                   books.allow_spoilers],
        "outputs": [*v.panels, v.send, v.stop, shell.banner], "concurrency_limit": ask_concurrency,
        "concurrency_id": "ask", "show_progress": "minimal", "show_progress_on": [v.trace], **PRIVATE,
    }
    # any failure of the ask event (Gradio refusing an input before the handler runs, the handler
    # raising) ends the turn with a message: it never stays "queued"
    failed: dict[str, Any] = {"fn": chat.on_ask_failed, "inputs": [shell.session],
                              "outputs": [*v.panels, v.send, v.stop], "queue": False, **PRIVATE}
    v.question.submit(**submit).then(**ask).failure(**failed)
    v.send.click(**submit).then(**ask).failure(**failed)
    v.stop.click(chat.on_stop, inputs=[shell.session], outputs=[*v.panels, v.send, v.stop], queue=False, **PRIVATE)
    reset: dict[str, Any] = {"inputs": [shell.session], "outputs": [shell.session, *v.panels, v.send, v.stop],
                             "queue": False, **PRIVATE}
    v.new_chat.click(chat.on_reset, **reset)
    v.chatbot.clear(chat.on_reset, **reset)
    v.demo_btn.click(chat.on_demo, inputs=[shell.session, books.active_book], outputs=[v.question], queue=False,
                     **PRIVATE)


def _wire_books(pages: Pages) -> None:
    books, v, shell = pages.books, pages.layout.books, pages.layout.shell

    def on_upload(path: str | None, session: Session | None, current: str | None,
                  progress: gr.Progress = gr.Progress()) -> dict[Any, Any]:  # noqa: B008 - Gradio's idiom
        return books.on_upload(session, path, current, progress)

    keep: dict[str, Any] = {"fn": books.keep_book, "inputs": [v.active_book, shell.browser],
                            "outputs": [shell.browser], "queue": False, **PRIVATE}
    # one progress display during an upload: on the upload box only (not on the list and the picker)
    v.upload.upload(books.on_upload_start, inputs=[v.upload, shell.session], outputs=[v.upload_cancel],
                    queue=False, **PRIVATE).then(
        on_upload, inputs=[v.upload, shell.session, v.active_book], outputs=[v.upload, shell.session, *v.outputs],
        concurrency_limit=1, concurrency_id="ingest", show_progress_on=[v.upload], **PRIVATE,
    ).then(lambda: gr.update(visible=False), outputs=[v.upload_cancel], queue=False, **PRIVATE).then(**keep)
    v.upload_cancel.click(books.on_upload_cancel, inputs=[shell.session], outputs=[v.upload_cancel], queue=False,
                          **PRIVATE)
    v.timer.tick(books.on_tick, inputs=[shell.session, v.active_book], outputs=v.outputs, queue=False,
                 show_progress="hidden", **PRIVATE)
    v.active_book.input(books.on_pick, inputs=[shell.session, v.active_book], outputs=[v.delete_btn, *v.outputs],
                        queue=False, **PRIVATE).then(**keep)
    v.delete_btn.click(books.on_delete, inputs=[shell.session, v.active_book], outputs=[v.delete_btn, *v.outputs],
                       concurrency_limit=1, concurrency_id="ingest", **PRIVATE).then(**keep)
    v.scope_apply.click(books.on_scope_apply, inputs=[shell.session, v.chapter_from, v.chapter_to, v.read_up_to],
                        outputs=[v.scope_status], queue=False, **PRIVATE)


def _wire_settings(pages: Pages) -> None:
    settings, v, shell = pages.settings, pages.layout.settings, pages.layout.shell
    save: dict[str, Any] = {"fn": settings.save_browser, "inputs": [shell.session, v.remember, shell.browser],
                            "outputs": [shell.browser], "queue": False, **PRIVATE}
    v.apply.click(settings.on_apply, inputs=[shell.session, *v.fields],
                  outputs=[shell.session, shell.banner, v.status, v.model, v.local_model, shell.banner_timer],
                  concurrency_limit=2, concurrency_id="settings", **PRIVATE).then(**save)
    v.remember.input(**save)
    v.reset.click(settings.on_reset, inputs=[shell.session], outputs=[shell.session, shell.banner, v.status, *v.fields],
                  queue=False, **PRIVATE).then(**save)


def _register_api(ctx: AppContext, ask_concurrency: int) -> None:
    """``/ask`` and ``/ask_json``: each call a fresh conversation (``rag.ui.api``), the calls of one
    client address on one web-search budget; with MCP_SERVER=true also the MCP tools ``ask`` and
    ``ask_json`` (``rag.ui.mcp``), described by these docstrings."""
    from rag.agent.graph import make_checkpointer

    def script(request: gr.Request | None) -> ScriptApi:
        client = getattr(request, "client", None)
        address = client_address(getattr(request, "headers", None), getattr(client, "host", None))
        visitor = api_visitor(address)
        return ScriptApi(lambda owner: ctx.make_graph(per_session_deps(ctx.deps, owner, visitor=visitor),
                                                      make_checkpointer()),
                         ctx.index, owner=lambda: None if ctx.shared_library else f"script-{uuid.uuid4().hex}")

    def failed(exc: Exception) -> gr.Error:
        if isinstance(exc, (RagError, ValueError)):
            return gr.Error(str(exc))
        logger.error("a script API call failed: %s: %s", type(exc).__name__, exc, exc_info=exc)
        return gr.Error(Msg.of("api.failed").text("en"))  # no traceback, no server path

    def ask(question: str, book: str = "", chapter_from: int = 0, chapter_to: int = 0, read_up_to: int = 0,
            allow_web_spoilers: bool = False, request: gr.Request | None = None) -> Iterator[str]:
        """Ask a question about the loaded book(s); streams the answer text as it grows. The answer
        cites its sources as [n]; ask_json gives the sources and the check of each sentence.

        Args:
            question: the question, in Chinese or English.
            book: a book id or title (empty: every book).
            chapter_from: first chapter to search (0: from the start).
            chapter_to: last chapter to search (0: to the end).
            read_up_to: the last chapter the reader has read; nothing after it is used (0: no limit).
            allow_web_spoilers: let web results through even past read_up_to.
        """
        try:
            check_question(question or "", ctx.settings.max_question_chars)
            yield from script(request).ask(question, book, chapter_from, chapter_to, read_up_to, allow_web_spoilers)
        except Exception as exc:  # noqa: BLE001 - every failure is one clear message
            raise failed(exc) from None

    def ask_json(question: str, book: str = "", chapter_from: int = 0, chapter_to: int = 0, read_up_to: int = 0,
                 allow_web_spoilers: bool = False, request: gr.Request | None = None) -> AskResult:
        """Ask a question and get everything about the answer as JSON: answer, mode, evaluations
        (with the checked parts of the question), passages, web sources, sentence checks, trace.

        Args:
            question: the question, in Chinese or English.
            book: a book id or title (empty: every book).
            chapter_from: first chapter to search (0: from the start).
            chapter_to: last chapter to search (0: to the end).
            read_up_to: the last chapter the reader has read; nothing after it is used (0: no limit).
            allow_web_spoilers: let web results through even past read_up_to.
        """
        try:
            check_question(question or "", ctx.settings.max_question_chars)
            return script(request).ask_json(question, book, chapter_from, chapter_to, read_up_to, allow_web_spoilers)
        except Exception as exc:  # noqa: BLE001 - every failure is one clear message
            raise failed(exc) from None

    gr.api(ask, api_name="ask", concurrency_limit=ask_concurrency, concurrency_id="ask")
    gr.api(returning(ask_json, AskResult), api_name="ask_json", concurrency_limit=ask_concurrency, concurrency_id="ask")
