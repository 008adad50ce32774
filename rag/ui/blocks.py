"""The ``gr.Blocks`` app: chat + live trace + sources, book panel, per-session settings.

Everything session-specific (thread id, conversation, language, settings, the graph built for
them, the one turn it may run at a time) lives in one ``Session`` (``rag.ui.session``), held by
``gr.State`` and found again after a reload through the id the browser keeps (``gr.BrowserState``);
nothing is shared between browser sessions except the book index and the server's defaults.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from pydantic import SecretStr

from rag.agent.deps import Deps
from rag.agent.events import Token
from rag.errors import RagError
from rag.ui.api import ScriptApi, chapter_range, scope_kwargs
from rag.ui.i18n import message as code_message
from rag.ui.i18n import pick_language, t
from rag.ui.probe import ProbeCache, display_url, llm_endpoint, probe_endpoint
from rag.ui.render import (
    chat_messages,
    esc,
    evaluations_json,
    render_banner,
    render_books,
    render_sources,
    render_trace,
)
from rag.ui.session import TIMEOUT, ActiveTurn, EventPump, Session, SessionStore
from rag.ui.translate import UiState, apply_event, fail_turn, start_turn, stop_turn

logger = logging.getLogger(__name__)

ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"
CSS_PATH = ASSETS_DIR / "ui.css"
JS_PATH = ASSETS_DIR / "ui.js"
ALL_BOOKS = "__all__"
BOOK_TYPES = [".epub", ".txt", ".md", ".markdown"]
STREAM_MIN_INTERVAL_S = 0.05  # coalesce token updates to at most ~20 page updates a second
POLL_S = 0.1  # how often a running turn looks for Stop
SEARCH_PROVIDER_CHOICES = ["none", "duckduckgo", "bocha", "tavily", "searxng"]
BROWSER_KEY = "enough-rag"  # the browser's localStorage key for the session id, language and settings
SAVED_FIELDS = ("base_url", "model", "provider", "searxng", "k", "rounds")  # never keys (unless opted in)
#: Words in a notice that mean the model could not be used at all (see rag.agent.nodes).
UNREACHABLE_MARK = "the model could not be reached"

GraphFactory = Callable[..., Any]
MakeDeps = Callable[..., Deps]

__all__ = ["Session", "build_app"]


def _per_session_deps(deps: Deps, owner: str | None = None) -> Deps:
    """A copy of ``deps`` whose web search counts against this session's own budget, and whose
    book index is the one ``owner`` sees (``SHARED_LIBRARY=false``; None: the whole library)."""
    changes: dict[str, Any] = {}
    view = getattr(deps.retriever, "for_owner", None)
    if owner is not None and callable(view):
        retriever = view(owner)
        if retriever is not deps.retriever:
            changes["retriever"] = retriever
    search = _session_search(deps)
    if search is not deps.web_search:
        changes["web_search"] = search
    return dataclasses.replace(deps, **changes) if changes else deps


def _session_search(deps: Deps) -> Any | None:
    """``deps``' web search, counted against one session's budget."""
    ws = deps.web_search
    if ws is None:
        return None
    try:
        from rag.search import SessionSearch
    except ImportError:  # pragma: no cover - the search package is part of the project
        return ws
    return ws if isinstance(ws, SessionSearch) else SessionSearch(ws, budget=deps.settings.search_budget)


def _mode_of(deps: Deps | None) -> dict[str, Any]:
    if deps is None:
        return {"llm_model": None, "llm_connected": False, "web_provider": None}
    settings = deps.settings
    model = settings.llm_model or getattr(deps.llm, "model_name", None) or getattr(deps.llm, "model", None)
    web = None
    if deps.web_enabled:
        web = getattr(deps.web_search, "name", None) or settings.search_provider
    return {"llm_model": str(model) if model else None, "llm_connected": deps.llm is not None, "web_provider": web}


def _book_choices(books: list[Any] | None, lang: str) -> list[tuple[str, str]]:
    choices = [(t(lang, "all_books"), ALL_BOOKS)]
    for book in books or []:
        book_id = getattr(book, "id", None) or (book.get("id") if isinstance(book, dict) else None)
        title = getattr(book, "title", None) or (book.get("title") if isinstance(book, dict) else None)
        if book_id:
            choices.append((str(title or book_id), str(book_id)))
    return choices


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


def merge(*updates: dict[Any, Any]) -> dict[Any, Any]:
    """Handler outputs from several parts: a component that two of them update gets one update with
    both (e.g. the chat's messages and its label), never only the later one."""
    out: dict[Any, Any] = {}
    for part in updates:
        for component, value in part.items():
            if component in out:
                first, second = (v if _is_update(v) else {"__type__": "update", "value": v} for v in (out[component], value))
                value = {**first, **second}
            out[component] = value
    return out


def _is_update(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


class SettingsError(ValueError):
    """Invalid per-session settings: ``key`` names the message in ``rag.ui.i18n`` (the page shows it
    in the session's language); ``str()`` is the English text."""

    def __init__(self, key: str, **kwargs: Any) -> None:
        self.key, self.kwargs = key, kwargs
        super().__init__(t("en", key, **kwargs))

    def text(self, lang: str) -> str:
        return t(lang, self.key, **self.kwargs)


class EtaTracker:
    """Time left for books being embedded, from the progress seen over the last minutes."""

    def __init__(self, window_s: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self.clock = window_s, clock
        self._samples: dict[str, list[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def observe(self, book_id: str, embedded: int, chunks: int, embedding: bool) -> float | None:
        """Record the book's progress; seconds left, or None while there is no rate yet."""
        with self._lock:
            if not embedding:
                self._samples.pop(book_id, None)
                return None
            now = self.clock()
            samples = [s for s in self._samples.get(book_id, []) if now - s[0] <= self.window_s and s[1] <= embedded]
            samples.append((now, embedded))
            self._samples[book_id] = samples
            return eta_seconds(samples, chunks)


def eta_seconds(samples: list[tuple[float, int]], chunks: int) -> float | None:
    """Seconds until ``chunks`` are embedded at the rate between the first and last sample."""
    if len(samples) < 2:
        return None
    (t0, e0), (t1, e1) = samples[0], samples[-1]
    if t1 <= t0 or e1 <= e0:
        return None
    return max(0.0, (chunks - e1) / ((e1 - e0) / (t1 - t0)))


# --------------------------------------------------------------------------- the app


def build_app(deps: Deps, index: Any | None = None, make_deps: MakeDeps | None = None, *,
              graph_factory: GraphFactory | None = None, title: str = "Enough RAG",
              ask_concurrency: int = 4, sessions: SessionStore | None = None) -> gr.Blocks:
    """Build the Gradio app.

    ``deps``: the server's default dependencies (each session gets its own graph, conversation
    memory and web-search budget on top of them). ``index``: the book index (``rag.index``) for
    the book panel, or None. ``make_deps(settings, index=...)``: rebuilds deps from per-session
    settings (LLM / search); without it only k and web rounds can change per session.
    ``graph_factory(deps, checkpointer=...)`` defaults to ``rag.agent.graph.build_graph``.
    ``ask_concurrency``: questions answered at once (others queue and see their place).
    """
    default_settings = deps.settings
    default_lang = default_settings.ui_language if default_settings.ui_language in ("zh", "en") else "zh"
    endpoints_allowed = bool(default_settings.allow_session_endpoints)
    # SHARED_LIBRARY (on a public Space, false): whose books a session sees and uploads.
    shared_library = bool(getattr(default_settings, "shared_library", True))
    store = sessions if sessions is not None else SessionStore()
    probes = ProbeCache()
    etas = EtaTracker()
    browser_secret = _browser_secret(default_settings.data_dir)

    def owner_of(session: Session) -> str | None:
        """Whose books a session sees and uploads: its own (with the shared ones) unless the library is shared."""
        return None if shared_library else session.id

    def library(session: Session) -> Any:
        """The book index as this session sees it."""
        view = getattr(index, "for_owner", None)
        return view(owner_of(session)) if callable(view) else index

    def factory(session_deps: Deps, checkpointer: Any) -> Any:
        if graph_factory is not None:
            return graph_factory(session_deps, checkpointer=checkpointer)
        from rag.agent.graph import build_graph

        return build_graph(session_deps, checkpointer=checkpointer)

    def ensure_session(session: Session | None) -> Session:
        if isinstance(session, Session):
            return session
        return store.add(Session(lang=default_lang))

    def ensure_graph(session: Session) -> Any:
        with session.lock:
            if session.graph is None:
                from rag.agent.graph import make_checkpointer

                if session.checkpointer is None:
                    session.checkpointer = make_checkpointer()
                if session.deps is None:
                    session.deps = _per_session_deps(deps, owner_of(session))
                session.graph = factory(session.deps, session.checkpointer)
            return session.graph

    def list_books(session: Session) -> list[Any] | None:
        if index is None:
            return None
        try:
            return list(library(session).books())
        except Exception as exc:  # noqa: BLE001 - the panel shows the problem instead of crashing
            logger.warning("listing books failed: %s", exc)
            return []

    def model_where(session: Session, base: str) -> str:
        """How the page names the session's model endpoint: a URL the visitor typed, never the server's."""
        current = session.deps or deps
        own = (session.custom and bool(current.settings.llm_base_url)
               and current.settings.llm_base_url != default_settings.llm_base_url)
        return display_url(base) if own else t(session.lang, "server_endpoint")

    def server_model_unreachable(session: Session) -> str | None:
        """Where the session's model cannot be reached, from a (cached) probe of its endpoint."""
        endpoint = llm_endpoint((session.deps or deps).llm)
        if endpoint is None:
            return None
        base, key = endpoint
        where = model_where(session, base)
        result = probes.probe(base, key, where)
        return None if result.reachable else where

    def banner_html(session: Session) -> str:
        mode = _mode_of(session.deps or deps)
        return render_banner(**mode, custom=session.custom, lang=session.lang, llm_unreachable=session.llm_unreachable)

    def header_html(lang: str) -> str:
        return (
            f'<div class="rag-header"><h1>{esc(t(lang, "app_title"))}</h1>'
            f'<p class="muted">{esc(t(lang, "app_subtitle"))}</p></div>'
        )

    def nav_html(lang: str) -> str:
        buttons = "".join(
            f'<button type="button" data-view="{view}" class="rag-nav-btn">{icon} {esc(t(lang, f"nav_{view}"))}</button>'
            for view, icon in (("chat", "💬"), ("trace", "🧭"), ("sources", "📎"), ("books", "📚"), ("settings", "⚙️"))
        )
        return f'<nav class="rag-nav" aria-label="views">{buttons}</nav>'

    def demo_question(lang: str) -> str:
        return t(lang, "demo_question")

    head = f"<style>{_asset(CSS_PATH)}</style><script>{_asset(JS_PATH)}</script>"
    with gr.Blocks(title=title, analytics_enabled=False, fill_width=True) as demo:
        session_state = gr.State(None)
        browser = gr.BrowserState({}, storage_key=BROWSER_KEY, secret=browser_secret)
        header = gr.HTML(header_html(default_lang), head=head, elem_id="rag-header")
        with gr.Row(equal_height=False, elem_id="rag-top"):
            banner = gr.HTML(banner_html(Session(default_lang)), elem_id="rag-banner")
            lang_radio = gr.Radio(
                choices=[("中文", "zh"), ("English", "en")], value=default_lang, label=t(default_lang, "language"),
                elem_id="rag-lang", scale=0, min_width=190, show_label=False, container=False,
            )
        nav = gr.HTML(nav_html(default_lang), elem_id="rag-nav")
        with gr.Row(equal_height=False, elem_id="rag-main"):
            with gr.Column(scale=3, min_width=300, elem_id="rag-chat-col"):
                chatbot = gr.Chatbot(
                    label=t(default_lang, "chat"), elem_id="rag-chat", height=620, buttons=["copy"],
                    feedback_options=None, sanitize_html=True, render_markdown=True, group_consecutive_messages=False,
                )
                # A hidden copy of the sources, always on the page (a tab's content is not until it is
                # opened): citation previews read it.
                preview_store = gr.HTML("", elem_id="rag-preview-store")
                with gr.Row(elem_id="rag-ask-row"):
                    question = gr.Textbox(
                        label=t(default_lang, "question"), placeholder=t(default_lang, "question_placeholder"),
                        lines=1, max_lines=6, scale=5, elem_id="rag-question",
                    )
                    send = gr.Button(t(default_lang, "send"), variant="primary", scale=1, elem_id="rag-send",
                                     min_width=80)
                    stop = gr.Button(t(default_lang, "stop"), variant="stop", scale=1, elem_id="rag-stop",
                                     visible=False, min_width=80)
                with gr.Row():
                    new_chat = gr.Button(t(default_lang, "new_conversation"), size="sm", elem_id="rag-new")
                    demo_btn = gr.Button(f"💡 {demo_question(default_lang)}", size="sm", elem_id="rag-demo", scale=4)
            with gr.Column(scale=2, min_width=300, elem_id="rag-side-col"), gr.Tabs(elem_id="rag-side"):
                with gr.Tab(t(default_lang, "tab_trace"), id="trace", elem_id="rag-tab-trace",
                            render_children=True) as tab_trace:
                    trace = gr.HTML(render_trace(None, default_lang), elem_id="rag-trace")
                    with gr.Accordion(t(default_lang, "evaluations_json"), open=False) as eval_acc:
                        eval_json = gr.JSON(value=[], elem_id="rag-evals", show_label=False)
                with gr.Tab(t(default_lang, "tab_sources"), id="sources", elem_id="rag-tab-sources",
                            render_children=True) as tab_sources:
                    sources = gr.HTML(render_sources(UiState(), default_lang), elem_id="rag-sources")
                with gr.Tab(t(default_lang, "tab_books"), id="books", elem_id="rag-tab-books") as tab_books:
                    upload = gr.File(
                        label=t(default_lang, "upload"), file_types=BOOK_TYPES, file_count="single",
                        type="filepath", elem_id="rag-upload", interactive=index is not None,
                    )
                    upload_cancel = gr.Button(t(default_lang, "upload_cancel"), size="sm", variant="stop",
                                              visible=False, elem_id="rag-upload-cancel")
                    active_book = gr.Dropdown(
                        choices=_book_choices([], default_lang), value=ALL_BOOKS,
                        label=t(default_lang, "active_book"), elem_id="rag-active-book", interactive=True,
                    )
                    with gr.Accordion(t(default_lang, "scope_title"), open=False, elem_id="rag-scope") as scope_acc:
                        scope_note = gr.Markdown(t(default_lang, "scope_note"))
                        with gr.Row():
                            chapter_from = gr.Number(None, precision=0, minimum=1, label=t(default_lang, "chapter_from"),
                                                     elem_id="rag-ch-from")
                            chapter_to = gr.Number(None, precision=0, minimum=1, label=t(default_lang, "chapter_to"),
                                                   elem_id="rag-ch-to")
                        read_up_to = gr.Number(None, precision=0, minimum=1, label=t(default_lang, "read_up_to"),
                                               elem_id="rag-read-up-to")
                        allow_spoilers = gr.Checkbox(False, label=t(default_lang, "allow_web_spoilers"),
                                                     elem_id="rag-allow-spoilers")
                    books_html = gr.HTML(render_books(None if index is None else [], default_lang), elem_id="rag-books")
                    delete_btn = gr.Button(t(default_lang, "delete_book"), size="sm", elem_id="rag-delete-book",
                                           visible=index is not None)
                    books_timer = gr.Timer(2.0, active=False)
                with gr.Tab(t(default_lang, "tab_settings"), id="settings", elem_id="rag-tab-settings") as tab_settings:
                    settings_note = gr.Markdown(t(default_lang, "settings_note"))
                    # Server URLs can carry credentials or internal addresses: the page only says that
                    # one is set (an empty field means "the server's"), and shows no URL field at all
                    # when visitors may not choose endpoints (ALLOW_SESSION_ENDPOINTS=false).
                    s_base_url = gr.Textbox(label=t(default_lang, "llm_base_url"), value="",
                                            placeholder=_server_placeholder(default_settings.llm_base_url, default_lang),
                                            visible=endpoints_allowed, elem_id="rag-s-base-url")
                    s_model = gr.Dropdown(label=t(default_lang, "llm_model"), value=default_settings.llm_model or "",
                                          choices=[default_settings.llm_model or ""], allow_custom_value=True,
                                          elem_id="rag-s-model")
                    s_key = gr.Textbox(label=t(default_lang, "llm_api_key"), type="password", value="",
                                       elem_id="rag-s-key")
                    s_provider = gr.Dropdown(
                        choices=_provider_choices(default_settings.search_provider),
                        value=default_settings.search_provider, allow_custom_value=True,
                        label=t(default_lang, "search_provider"), elem_id="rag-s-provider",
                    )
                    s_search_key = gr.Textbox(label=t(default_lang, "search_api_key"), type="password", value="",
                                              elem_id="rag-s-search-key")
                    s_searxng = gr.Textbox(label=t(default_lang, "searxng_url"), value="",
                                           placeholder=_server_placeholder(default_settings.searxng_url, default_lang),
                                           visible=endpoints_allowed, elem_id="rag-s-searxng")
                    s_k = gr.Slider(1, 20, step=1, value=default_settings.retrieval_k, label=t(default_lang, "retrieval_k"),
                                    elem_id="rag-s-k")
                    s_rounds = gr.Slider(0, 5, step=1, value=default_settings.max_web_rounds,
                                         label=t(default_lang, "web_rounds"), elem_id="rag-s-rounds")
                    s_remember = gr.Checkbox(False, label=t(default_lang, "remember_keys"), elem_id="rag-s-remember")
                    with gr.Row():
                        s_apply = gr.Button(t(default_lang, "apply"), variant="primary", elem_id="rag-s-apply")
                        s_reset = gr.Button(t(default_lang, "reset"), elem_id="rag-s-reset")
                    s_status = gr.Markdown("", elem_id="rag-s-status")

        settings_fields = [s_base_url, s_model, s_key, s_provider, s_search_key, s_searxng, s_k, s_rounds]
        panel_outputs = [chatbot, trace, sources, eval_json, preview_store]
        book_outputs = [books_html, active_book, books_timer]
        private: dict[str, Any] = {"api_visibility": "private"}

        # ------------------------------------------------------------------ rendering helpers

        def panels(session: Session, changed_only: bool = False) -> dict[Any, Any]:
            """The chat, trace and sources as the session's state renders them. ``changed_only``
            (while a turn streams): only those that differ from what this page was last sent."""
            with session.lock:
                ui = session.ui
            rendered = {
                chatbot: chat_messages(ui, session.lang),
                trace: render_trace(ui.current, session.lang),
                sources: render_sources(ui, session.lang),
                preview_store: render_sources(ui, session.lang, anchors=False),
                eval_json: evaluations_json(ui.current),
            }
            sent = session.sent
            if changed_only:
                rendered = {c: v for c, v in rendered.items() if sent.get(c._id) != v}
            sent.update({c._id: v for c, v in rendered.items()})
            return rendered

        def buttons(running: bool) -> dict[Any, Any]:
            return {send: gr.update(visible=not running), stop: gr.update(visible=running)}

        def status_text(session: Session, item: tuple[str, dict[str, Any], str] | None) -> str:
            if not item:
                return ""
            key, kwargs, level = item
            icon = {"ok": "✅", "info": "ℹ️", "warning": "⚠️", "error": "⚠️"}.get(level, "")
            args = {k: (v.get(session.lang, v.get("en", "")) if isinstance(v, dict) else v) for k, v in kwargs.items()}
            return f"{icon} {esc(t(session.lang, key, **args))}"

        def books_outputs(session: Session, current: str | None) -> dict[Any, Any]:
            books = list_books(session)
            choices = _book_choices(books, session.lang)
            values = {value for _, value in choices}
            pending = any(str(getattr(b, "status", "")) in {"keyword_ready", "embedding"} for b in books or [])
            left: dict[str, float] = {}
            for b in books or []:
                status = str(getattr(b, "status", ""))
                eta = etas.observe(str(b.id), int(getattr(b, "embedded", 0) or 0), int(getattr(b, "chunks", 0) or 0),
                                   embedding=status == "embedding")
                if eta is not None:
                    left[str(b.id)] = eta
            message, level = "", "info"
            if session.books_message:
                key, kwargs, level = session.books_message
                args = {k: code_message(v, session.lang) if k == "message" else v for k, v in kwargs.items()}
                message = t(session.lang, key, **args)
            return {
                books_html: render_books(books, session.lang, message, level, etas=left),
                active_book: gr.update(choices=choices, value=current if current in values else ALL_BOOKS,
                                       label=t(session.lang, "active_book")),
                books_timer: gr.Timer(active=pending),
            }

        def labels(lang: str) -> dict[Any, Any]:
            return {
                header: gr.update(value=header_html(lang)),
                lang_radio: gr.update(value=lang, label=t(lang, "language")),
                nav: gr.update(value=nav_html(lang)),
                chatbot: gr.update(label=t(lang, "chat")),
                question: gr.update(label=t(lang, "question"), placeholder=t(lang, "question_placeholder")),
                send: gr.update(value=t(lang, "send")),
                stop: gr.update(value=t(lang, "stop")),
                new_chat: gr.update(value=t(lang, "new_conversation")),
                demo_btn: gr.update(value=f"💡 {demo_question(lang)}"),
                tab_trace: gr.update(label=t(lang, "tab_trace")),
                tab_sources: gr.update(label=t(lang, "tab_sources")),
                tab_books: gr.update(label=t(lang, "tab_books")),
                tab_settings: gr.update(label=t(lang, "tab_settings")),
                eval_acc: gr.update(label=t(lang, "evaluations_json")),
                upload: gr.update(label=t(lang, "upload")),
                upload_cancel: gr.update(value=t(lang, "upload_cancel")),
                scope_acc: gr.update(label=t(lang, "scope_title")),
                scope_note: gr.update(value=t(lang, "scope_note")),
                chapter_from: gr.update(label=t(lang, "chapter_from")),
                chapter_to: gr.update(label=t(lang, "chapter_to")),
                read_up_to: gr.update(label=t(lang, "read_up_to")),
                allow_spoilers: gr.update(label=t(lang, "allow_web_spoilers")),
                delete_btn: gr.update(value=t(lang, "delete_book")),
                settings_note: gr.update(value=t(lang, "settings_note")),
                s_base_url: gr.update(label=t(lang, "llm_base_url"),
                                      placeholder=_server_placeholder(default_settings.llm_base_url, lang)),
                s_model: gr.update(label=t(lang, "llm_model")),
                s_key: gr.update(label=t(lang, "llm_api_key")),
                s_provider: gr.update(label=t(lang, "search_provider")),
                s_search_key: gr.update(label=t(lang, "search_api_key")),
                s_searxng: gr.update(label=t(lang, "searxng_url"),
                                     placeholder=_server_placeholder(default_settings.searxng_url, lang)),
                s_k: gr.update(label=t(lang, "retrieval_k")),
                s_rounds: gr.update(label=t(lang, "web_rounds")),
                s_remember: gr.update(label=t(lang, "remember_keys")),
                s_apply: gr.update(value=t(lang, "apply")),
                s_reset: gr.update(value=t(lang, "reset")),
            }

        label_outputs = list(labels(default_lang))

        def browser_value(session: Session, remember: bool | None = None) -> dict[str, Any]:
            value: dict[str, Any] = {"sid": session.id, "lang": session.lang, "settings": dict(session.saved)}
            if remember:
                value["remember_keys"] = True
                value["keys"] = {k: v for k, v in session.saved_keys.items() if v}
            return value

        # ------------------------------------------------------------------ load and language

        def restore_settings(session: Session, saved: dict[str, Any], keys: dict[str, Any]) -> None:
            """Apply the settings a browser kept, on a session the server no longer knows."""
            fields = {name: saved.get(name) for name in SAVED_FIELDS}
            try:
                new_deps = _apply_settings(
                    deps, index, make_deps, base_url=str(fields["base_url"] or ""), model=str(fields["model"] or ""),
                    key=str(keys.get("llm") or ""), provider=str(fields["provider"] or default_settings.search_provider),
                    search_key=str(keys.get("search") or ""), searxng=str(fields["searxng"] or ""),
                    k=int(fields["k"] or default_settings.retrieval_k),
                    rounds=int(fields["rounds"] if fields["rounds"] is not None else default_settings.max_web_rounds),
                    allow_endpoints=endpoints_allowed,
                )
            except Exception as exc:  # noqa: BLE001 - a stale saved setting must not break the page
                logger.info("saved settings not restored: %s", type(exc).__name__)
                return
            session.saved = {k: v for k, v in fields.items() if v not in (None, "")}
            if new_deps is not deps:
                session.deps, session.graph, session.custom = _per_session_deps(new_deps, owner_of(session)), None, True
                session.settings_status = ("settings_restored", {}, "ok")

        def fields_of(session: Session, stored: dict[str, Any]) -> dict[Any, Any]:
            saved = session.saved
            keys = (stored.get("keys") or {}) if stored.get("remember_keys") else {}
            s = default_settings
            return {
                s_base_url: saved.get("base_url", ""),
                s_model: gr.update(value=saved.get("model", s.llm_model or "")),
                s_key: keys.get("llm", ""),
                s_provider: saved.get("provider", s.search_provider),
                s_search_key: keys.get("search", ""),
                s_searxng: saved.get("searxng", ""),
                s_k: saved.get("k", s.retrieval_k),
                s_rounds: saved.get("rounds", s.max_web_rounds),
                s_remember: bool(stored.get("remember_keys")),
            }

        def orphan_turn_ends(session: Session) -> None:
            """A reloaded page cannot follow a turn its previous page started: the turn is stopped
            (it shows as stopped) and the session is free for the next question."""
            turn = session.stop()
            if turn is None:
                return
            with session.lock:
                session.ui = stop_turn(session.ui, time.monotonic() - turn.asked_at)
            session.end(turn)

        def on_load(stored: Any, session: Session | None, current_book: str | None, request: gr.Request) -> dict[Any, Any]:
            stored = stored if isinstance(stored, dict) else {}
            found = store.get(stored.get("sid"))
            if isinstance(session, Session):
                pass
            elif found is not None:
                session = found
                orphan_turn_ends(session)
            else:
                session = ensure_session(None)
                saved = stored.get("settings") if isinstance(stored.get("settings"), dict) else {}
                keys = stored.get("keys") if stored.get("remember_keys") and isinstance(stored.get("keys"), dict) else {}
                if saved or keys:
                    restore_settings(session, saved, keys)
            accept = ""
            if request is not None:
                try:
                    accept = request.headers.get("accept-language", "")
                except Exception:  # noqa: BLE001
                    accept = ""
            stored_lang = stored.get("lang")
            session.lang = stored_lang if stored_lang in ("zh", "en") else pick_language(default_settings.ui_language, accept)
            session.llm_unreachable = server_model_unreachable(session)
            with session.lock:
                running = session.active is not None
            return merge(
                {session_state: session, browser: browser_value(session, stored.get("remember_keys")),
                 banner: banner_html(session), s_status: status_text(session, session.settings_status)},
                panels(session), books_outputs(session, current_book), labels(session.lang),
                fields_of(session, stored), buttons(running),
            )

        # Named but undocumented (like /on_ask, /on_tick, /on_upload, /on_apply, /on_reset): a client
        # that keeps a session (gradio_client does) can drive the page's own events; they are not the
        # script API (/ask, /ask_json) and every input must be given.
        undocumented: dict[str, Any] = {"api_visibility": "undocumented"}
        loaded = demo.load(
            on_load, inputs=[browser, session_state, active_book],
            outputs=[session_state, browser, banner, s_status, *panel_outputs, *book_outputs, *label_outputs,
                     *settings_fields, s_remember, send, stop],
            queue=False, api_name="on_load", **undocumented,
        )

        def on_language(lang: str, stored: Any, session: Session | None, current_book: str | None) -> dict[Any, Any]:
            session = ensure_session(session)
            session.lang = lang if lang in ("zh", "en") else session.lang
            stored = stored if isinstance(stored, dict) else {}
            if session.llm_unreachable:
                session.llm_unreachable = server_model_unreachable(session)
            return merge({session_state: session, browser: {**stored, "sid": session.id, "lang": session.lang},
                          banner: banner_html(session), s_status: status_text(session, session.settings_status)},
                         panels(session), books_outputs(session, current_book), labels(session.lang))

        # Gradio's own strings (the chat's buttons, the upload's hints) follow the page's language: the
        # locale is switched in the browser, then the components that show them are mounted afresh.
        locale_changed = gr.Textbox("", visible=False)
        remounted = [chatbot, upload]

        def hide_if(lang: str, changed: str) -> list[Any]:
            return [gr.update(visible=False) if changed == "yes" else gr.update() for _ in remounted]

        def show() -> list[Any]:
            return [gr.update(visible=True) for _ in remounted]

        def follow_locale(trigger: Any) -> None:
            trigger.then(
                hide_if, inputs=[lang_radio, locale_changed], outputs=remounted, queue=False,
                js="async (lang, changed) => [lang, (window.ragSetLocale && await window.ragSetLocale(lang)) ? 'yes' : '']",
                **private,
            ).then(show, outputs=remounted, queue=False, **private)

        follow_locale(loaded)
        follow_locale(lang_radio.input(
            on_language, inputs=[lang_radio, browser, session_state, active_book],
            outputs=[session_state, browser, banner, s_status, *panel_outputs, *book_outputs, *label_outputs],
            queue=False, **private,
        ))

        # ------------------------------------------------------------------ asking, one turn at a time

        def on_submit(text: str, session: Session | None) -> dict[Any, Any]:
            """Takes the question at once (no queue): the turn shows as queued until it gets a slot."""
            session = ensure_session(session)
            text = (text or "").strip()
            if not text:
                gr.Warning(t(session.lang, "empty_question"))
                return {session_state: session}
            if session.begin(text) is None:
                gr.Warning(t(session.lang, "busy"))
                return {session_state: session}
            with session.lock:
                session.ui = start_turn(session.ui, text, queued=True)
            return {session_state: session, question: "", **panels(session), **buttons(True)}

        def run_events(session: Session, turn: ActiveTurn, book: str | None, ch_from: float | None,
                       ch_to: float | None, read_to: float | None, spoilers: bool) -> Iterator[dict[Any, Any]]:
            """Run the turn's graph in a pump and apply its events; ends early on Stop or a reset."""
            if not turn.cancel.is_set():
                session.wait_for_previous(timeout=float(default_settings.llm_timeout) + 10)
            if turn.cancel.is_set() or not session.is_current(turn):
                return
            try:
                graph = ensure_graph(session)
                scope = scope_kwargs(_run_turn(), chapters=chapter_range(ch_from, ch_to),
                                     read_up_to=int(read_to) if read_to else None, allow_web_spoilers=bool(spoilers))
            except (RagError, ValueError) as exc:
                with session.lock:
                    session.ui = fail_turn(session.ui, str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - show a readable message, log the details
                logger.exception("building the graph failed")
                with session.lock:
                    session.ui = fail_turn(session.ui, f"{type(exc).__name__}: {exc}")
                return
            book_id = None if not book or book == ALL_BOOKS else book
            pump = turn.pump = EventPump(_run_turn()(graph, turn.question, thread_id=session.thread_id,
                                                      book_id=book_id, **scope), name=f"turn-{session.id[:8]}")
            last, pending = 0.0, False
            while True:
                event = pump.next(POLL_S)
                if turn.cancel.is_set() or not session.is_current(turn) or event is None:
                    return
                if event is TIMEOUT:
                    if pending:
                        last, pending = time.monotonic(), False
                        yield panels(session, changed_only=True)
                    continue
                with session.lock:
                    if turn.cancel.is_set():
                        return
                    session.ui = apply_event(session.ui, event)
                now = time.monotonic()
                if isinstance(event, Token) and now - last < STREAM_MIN_INTERVAL_S:
                    pending = True
                    continue
                last, pending = now, False
                update = panels(session, changed_only=True)
                if update:
                    yield update

        def on_ask(session: Session | None, book: str | None, ch_from: float | None, ch_to: float | None,
                   read_to: float | None, spoilers: bool) -> Iterator[dict[Any, Any]]:
            session = ensure_session(session)
            with session.lock:
                turn = session.active
                fresh = turn is not None and turn.pump is None and not turn.started
                if fresh:
                    turn.started = True
            if not fresh or turn is None:  # the question was refused (empty, or another turn runs)
                yield {banner: gr.update()}  # a generator that yields nothing would blank its outputs
                return
            started = time.monotonic()
            try:
                yield from run_events(session, turn, book, ch_from, ch_to, read_to, spoilers)
            finally:
                if turn.pump is not None:
                    turn.pump.stop()
                with session.lock:
                    current = session.active is turn
                    if current and session.ui.busy:  # Stop, or the page went away: the run has ended
                        session.ui = stop_turn(session.ui, time.monotonic() - started)
                session.end(turn)
            if not current:  # a reset took the session over: its page is already up to date
                yield {banner: gr.update()}
                return
            note_reachability(session)
            yield {**panels(session), **buttons(False), banner: banner_html(session)}

        def note_reachability(session: Session) -> None:
            """After a turn: whether its model calls reached the model (the banner says so)."""
            turn = session.ui.current
            if turn is None or (session.deps or deps).llm is None:
                return
            failed = any(UNREACHABLE_MARK in str(n.get("message", "")) for n in turn.notices)
            if failed:
                endpoint = llm_endpoint((session.deps or deps).llm)
                session.llm_unreachable = model_where(session, endpoint[0] if endpoint else "")
            elif turn.status == "done" and turn.evaluations:
                session.llm_unreachable = None

        submit_kwargs: dict[str, Any] = {
            "fn": on_submit, "inputs": [question, session_state],
            "outputs": [session_state, question, *panel_outputs, send, stop], "concurrency_limit": None,
            "show_progress": "hidden", **private,  # queued (so its warnings reach the page) but never waits
        }
        ask_kwargs: dict[str, Any] = {
            "fn": on_ask, "inputs": [session_state, active_book, chapter_from, chapter_to, read_up_to, allow_spoilers],
            "outputs": [*panel_outputs, send, stop, banner], "concurrency_limit": ask_concurrency,
            "concurrency_id": "ask", "show_progress": "minimal", "show_progress_on": [trace],
            "api_name": "page_ask", **private,  # "on_ask" is the whole turn, below
        }
        question.submit(**submit_kwargs).then(**ask_kwargs)
        send.click(**submit_kwargs).then(**ask_kwargs)

        def on_ask_whole(text: str, session: Session | None, book: str | None) -> Iterator[dict[Any, Any]]:
            """A whole turn in one call, as Send then the answer (for a client that keeps a session)."""
            session = ensure_session(session)
            on_submit(text, session)
            for update in on_ask(session, book, None, None, None, False):
                yield {c: v for c, v in update.items() if c in panel_outputs}
            yield {session_state: session, **panels(session)}

        ask_whole = gr.Button(visible=False)
        ask_whole.click(on_ask_whole, inputs=[question, session_state, active_book],
                        outputs=[session_state, *panel_outputs], concurrency_limit=ask_concurrency,
                        concurrency_id="ask", api_name="on_ask", **undocumented)

        def on_stop(session: Session | None) -> dict[Any, Any]:
            session = ensure_session(session)
            with session.lock:
                turn = session.stop()
                if turn is not None:
                    session.ui = stop_turn(session.ui, time.monotonic() - turn.asked_at)
                    if turn.pump is None:  # still queued: nothing runs yet, release the session now
                        session.end(turn)
            return {**panels(session), **buttons(False)}

        stop.click(on_stop, inputs=[session_state], outputs=[*panel_outputs, send, stop], queue=False, **private)

        def on_reset_chat(session: Session | None) -> dict[Any, Any]:
            """One reset: the chat, the trace and the graph's memory of the conversation."""
            session = ensure_session(session)
            session.new_conversation()
            return {session_state: session, **panels(session), **buttons(False)}

        reset_kwargs: dict[str, Any] = {"inputs": [session_state], "outputs": [session_state, *panel_outputs, send, stop],
                                        "queue": False, **private}
        new_chat.click(on_reset_chat, **reset_kwargs)
        chatbot.clear(on_reset_chat, **reset_kwargs)

        def on_demo(session: Session | None) -> str:
            return demo_question(session.lang if isinstance(session, Session) else default_lang)

        demo_btn.click(on_demo, inputs=[session_state], outputs=[question], queue=False, **private)

        # ------------------------------------------------------------------ books

        def on_upload(path: str | None, session: Session | None, current_book: str | None,
                      progress: gr.Progress = gr.Progress()) -> dict[Any, Any]:  # noqa: B008 - Gradio's idiom
            session = ensure_session(session)  # kept (an output): the book may be this session's own
            try:
                return {session_state: session, **ingest_upload(path, session, current_book, progress)}
            finally:
                _discard_upload(path)  # ingested or rejected: the upload is not kept

        def ingest_upload(path: str | None, session: Session, current_book: str | None,
                          progress: Any) -> dict[Any, Any]:
            session.upload_cancel = threading.Event()
            if not path:
                return {upload: gr.update(), **books_outputs(session, current_book)}
            if index is None:
                session.books_message = ("no_index", {}, "error")
                return {upload: None, **books_outputs(session, current_book)}
            live = {"on": True}
            lang = session.lang

            def report(stage: str, done: int, total: int, message: str = "") -> None:
                if not live["on"]:
                    return
                try:
                    fraction = (done / total) if total else None
                    progress(fraction, desc=_stage_text(lang, stage, done, total))
                except Exception:  # noqa: BLE001 - progress is cosmetic
                    pass

            known = {str(getattr(b, "id", "")) for b in list_books(session) or []}
            progress(0, desc=t(lang, "indexing"))
            try:
                info = library(session).ingest(path, progress=report, background=True)
            except RagError as exc:
                live["on"] = False
                session.books_message = ("index_failed", {"message": exc.msg}, "error")
                return {upload: None, **books_outputs(session, current_book)}
            except Exception as exc:  # noqa: BLE001
                live["on"] = False
                logger.exception("indexing %s failed", Path(path).name)
                session.books_message = ("index_failed", {"message": f"{type(exc).__name__}: {exc}"}, "error")
                return {upload: None, **books_outputs(session, current_book)}
            live["on"] = False
            new_id = str(getattr(info, "id", "") or current_book or ALL_BOOKS)
            if session.upload_cancel.is_set() and new_id not in known:
                try:
                    index.delete_book(new_id)
                except RagError as exc:
                    logger.warning("could not remove a cancelled upload: %s", exc)
                session.books_message = ("upload_cancelled", {}, "info")
                return {upload: None, **books_outputs(session, current_book)}
            if new_id not in known:
                session.uploaded.add(new_id)
            session.books_message = ("indexed", {"title": getattr(info, "title", Path(path).stem),
                                                 "chapters": getattr(info, "chapters", "?"),
                                                 "chunks": getattr(info, "chunks", "?")}, "info")
            return {upload: None, **books_outputs(session, new_id)}

        def show_cancel(path: str | None) -> Any:
            return gr.update(visible=bool(path))

        upload.upload(show_cancel, inputs=[upload], outputs=[upload_cancel], queue=False, **private).then(
            on_upload, inputs=[upload, session_state, active_book], outputs=[upload, session_state, *book_outputs],
            concurrency_limit=1, concurrency_id="ingest", api_name="on_upload", **undocumented,
        ).then(lambda: gr.update(visible=False), outputs=[upload_cancel], queue=False, **private)

        def on_upload_cancel(session: Session | None) -> Any:
            session = ensure_session(session)
            session.upload_cancel.set()
            return gr.update(visible=False)

        upload_cancel.click(on_upload_cancel, inputs=[session_state], outputs=[upload_cancel], queue=False, **private)

        def on_tick(session: Session | None, current_book: str | None) -> dict[Any, Any]:
            session = ensure_session(session)
            return books_outputs(session, current_book)

        books_timer.tick(on_tick, inputs=[session_state, active_book], outputs=book_outputs, queue=False,
                         show_progress="hidden", api_name="on_tick", **undocumented)

        def on_pick_book(session: Session | None, current_book: str | None) -> dict[Any, Any]:
            session = ensure_session(session)
            if session.pending_delete is not None:  # another book: the pending deletion is off
                session.pending_delete = None
                session.books_message = None
            return {delete_btn: gr.update(value=t(session.lang, "delete_book"), variant="secondary"),
                    **books_outputs(session, current_book)}

        active_book.input(on_pick_book, inputs=[session_state, active_book], outputs=[delete_btn, *book_outputs],
                          queue=False, **private)

        def on_delete(session: Session | None, current_book: str | None) -> dict[Any, Any]:
            session = ensure_session(session)
            lang = session.lang
            reset_button = gr.update(value=t(lang, "delete_book"), variant="secondary")
            if index is None or not current_book or current_book == ALL_BOOKS:
                session.books_message = ("delete_none", {}, "warning")
                return {delete_btn: reset_button, **books_outputs(session, current_book)}
            if current_book not in session.uploaded:
                session.books_message = ("delete_not_allowed", {}, "warning")
                return {delete_btn: reset_button, **books_outputs(session, current_book)}
            try:
                title = index.book(current_book).title
            except RagError:
                title = current_book
            if session.pending_delete != current_book:
                session.pending_delete = current_book
                session.books_message = ("delete_confirm", {"title": title}, "warning")
                return {delete_btn: gr.update(value=t(lang, "delete_confirm_button", title=title), variant="stop"),
                        **books_outputs(session, current_book)}
            session.pending_delete = None
            try:
                index.delete_book(current_book)
                session.uploaded.discard(current_book)
                session.books_message = ("deleted", {"title": title}, "info")
            except RagError as exc:
                session.books_message = ("index_failed", {"message": exc.msg}, "error")
            return {delete_btn: reset_button, **books_outputs(session, ALL_BOOKS)}

        delete_btn.click(on_delete, inputs=[session_state, active_book], outputs=[delete_btn, *book_outputs],
                         concurrency_limit=1, concurrency_id="ingest", **private)

        # ------------------------------------------------------------------ settings

        def on_apply(session: Session | None, base_url: str, model: str, key: str, provider: str,
                     search_key: str, searxng: str, k: float, rounds: float) -> dict[Any, Any]:
            session = ensure_session(session)
            lang = session.lang
            model_update: Any = gr.update()
            notes: list[tuple[str, dict[str, Any], str]] = []
            try:
                target = _probe_target(default_settings, base_url=base_url, key=key, model=model,
                                       allow_endpoints=endpoints_allowed)
                if target is not None:
                    url, probe_key, own = target
                    where = display_url(url) if own else {z: t(z, "server_endpoint") for z in ("zh", "en")}
                    shown = where if isinstance(where, str) else where[lang]
                    found = probe_endpoint(url, probe_key, timeout=5.0, where=shown)
                    if found.status == "unreachable":
                        why = {z: t(z, f"why_{found.why or 'connect'}") for z in ("zh", "en")}
                        raise _Refused("probe_unreachable", where=where, why=why)
                    if found.status == "rejected":
                        raise _Refused("probe_rejected", where=where, status=found.http_status)
                    if found.status == "ok":
                        if not (model or "").strip() and found.models:
                            model = found.models[0]
                        if not (model or "").strip():
                            raise _Refused("probe_no_model", where=where)
                        model_update = gr.update(choices=list(found.models) or [model], value=model)
                        notes.append(("probe_ok", {"where": where, "n": len(found.models)}, "info"))
                    else:
                        notes.append(("probe_no_list", {"where": where, "status": found.http_status}, "info"))
                new_deps = _apply_settings(
                    deps, index, make_deps, base_url=base_url, model=model, key=key, provider=provider,
                    search_key=search_key, searxng=searxng, k=int(k), rounds=int(rounds),
                    allow_endpoints=endpoints_allowed,
                )
            except _Refused as refused:
                session.settings_status = (refused.key, refused.kwargs, "error")
                return {session_state: session, banner: banner_html(session), s_status: status_text(session, session.settings_status)}
            except SettingsError as exc:
                session.settings_status = ("settings_failed", {"message": {z: exc.text(z) for z in ("zh", "en")}}, "error")
                return {session_state: session, banner: banner_html(session), s_status: status_text(session, session.settings_status)}
            except (RagError, ValueError) as exc:
                session.settings_status = ("settings_failed", {"message": str(exc)}, "error")
                return {session_state: session, banner: banner_html(session), s_status: status_text(session, session.settings_status)}
            except Exception as exc:  # noqa: BLE001
                logger.warning("applying session settings failed: %s", type(exc).__name__)
                session.settings_status = ("settings_failed", {"message": type(exc).__name__}, "error")
                return {session_state: session, banner: banner_html(session), s_status: status_text(session, session.settings_status)}
            with session.lock:
                session.deps = _per_session_deps(new_deps, owner_of(session))
                session.graph = None  # rebuilt on the next question; conversation memory is kept
                session.custom = new_deps is not deps
                session.llm_unreachable = None
                session.saved = {name: value for name, value in zip(
                    SAVED_FIELDS, (_keepable_url(base_url), (model or "").strip(), (provider or "").strip(),
                                   _keepable_url(searxng), int(k), int(rounds)), strict=True) if value not in ("", None)}
                session.saved_keys = {"llm": (key or "").strip(), "search": (search_key or "").strip()}
            logger.info("session %s applied custom settings (llm=%s, search=%s)", session.id[:8],
                        new_deps.llm is not None, new_deps.settings.search_provider)
            session.settings_status = ("settings_applied", {}, "ok")
            text = status_text(session, session.settings_status)
            for note in notes:
                text += f"  \n{status_text(session, note)}"
            return {session_state: session, banner: banner_html(session), s_status: text, s_model: model_update}

        def save_browser(session: Session | None, remember: bool, stored: Any) -> Any:
            if not isinstance(session, Session):
                return gr.update()
            stored = stored if isinstance(stored, dict) else {}
            value = {**stored, "sid": session.id, "lang": session.lang, "settings": dict(session.saved)}
            if remember:
                value["remember_keys"] = True
                value["keys"] = {k: v for k, v in session.saved_keys.items() if v}
            else:
                value.pop("remember_keys", None)
                value.pop("keys", None)
            return value

        save_kwargs: dict[str, Any] = {"fn": save_browser, "inputs": [session_state, s_remember, browser],
                                       "outputs": [browser], "queue": False, **private}
        s_apply.click(
            on_apply,
            inputs=[session_state, *settings_fields],
            outputs=[session_state, banner, s_status, s_model], concurrency_limit=2, concurrency_id="settings",
            api_name="on_apply", **undocumented,
        ).then(**save_kwargs)
        s_remember.input(**save_kwargs)

        def on_reset(session: Session | None) -> list[Any]:
            session = ensure_session(session)
            with session.lock:
                session.deps = None
                session.graph = None
                session.custom = False
                session.saved = {}
                session.saved_keys = {}
                session.llm_unreachable = None
            session.settings_status = ("settings_reset", {}, "ok")
            s = default_settings
            return [
                session, banner_html(session), status_text(session, session.settings_status),
                "", gr.update(value=s.llm_model or "", choices=[s.llm_model or ""]), "", s.search_provider, "", "",
                s.retrieval_k, s.max_web_rounds,
            ]

        s_reset.click(
            on_reset, inputs=[session_state],
            outputs=[session_state, banner, s_status, *settings_fields],
            queue=False, api_name="on_reset", **undocumented,
        ).then(**save_kwargs)

        # ------------------------------------------------------------------ the script API
        def make_api_graph(owner: str | None) -> Any:
            from rag.agent.graph import make_checkpointer

            return factory(_per_session_deps(deps, owner), make_checkpointer())

        script = ScriptApi(make_api_graph, index,
                           owner=lambda: None if shared_library else f"script-{uuid.uuid4().hex}")

        def ask(question: str, book: str = "", chapter_from: int = 0, chapter_to: int = 0, read_up_to: int = 0,
                allow_web_spoilers: bool = False) -> Iterator[str]:
            """Ask a question about the loaded book(s); streams the answer text as it grows.

            Args:
                question: the question, in Chinese or English.
                book: a book id or title (empty: every book).
                chapter_from: first chapter to search (0: from the start).
                chapter_to: last chapter to search (0: to the end).
                read_up_to: the last chapter the reader has read; nothing after it is used (0: no limit).
                allow_web_spoilers: let web results through even past read_up_to.
            """
            try:
                yield from script.ask(question, book, chapter_from, chapter_to, read_up_to, allow_web_spoilers)
            except (RagError, ValueError) as exc:
                raise gr.Error(str(exc)) from None

        def ask_json(question: str, book: str = "", chapter_from: int = 0, chapter_to: int = 0, read_up_to: int = 0,
                     allow_web_spoilers: bool = False) -> dict[str, Any]:
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
                return script.ask_json(question, book, chapter_from, chapter_to, read_up_to, allow_web_spoilers)
            except (RagError, ValueError) as exc:
                raise gr.Error(str(exc)) from None

        gr.api(ask, api_name="ask", concurrency_limit=ask_concurrency, concurrency_id="ask")
        gr.api(ask_json, api_name="ask_json", concurrency_limit=ask_concurrency, concurrency_id="ask")

    return demo


def _keepable_url(url: str | None) -> str:
    """A URL the browser may keep among the non-secret settings: not one that carries credentials."""
    url = (url or "").strip()
    return "" if "@" in url.split("://", 1)[-1].split("/", 1)[0] else url


def _run_turn() -> Callable[..., Any]:
    from rag.agent.events import run_turn

    return run_turn


def _stage_text(lang: str, stage: str, done: int, total: int) -> str:
    """The upload's progress line: the stage in words, and once the keyword index is built, that
    the book can be asked about already while its vectors are computed."""
    if stage == "keyword" and total and done >= total:
        return t(lang, "stage_keyword_done")
    if stage == "embedding":
        return f"{t(lang, 'stage_keyword_done')} · {t(lang, 'stage_embedding')}"
    key = f"stage_{stage}"
    text = t(lang, key)
    return text if text != key else stage


class _Refused(Exception):
    """Apply refused after checking the endpoint: ``key`` and ``kwargs`` for ``t``."""

    def __init__(self, key: str, **kwargs: Any) -> None:
        self.key, self.kwargs = key, kwargs
        super().__init__(key)


def _probe_target(base: Any, *, base_url: str, key: str, model: str,
                  allow_endpoints: bool) -> tuple[str, str | None, bool] | None:
    """The endpoint to check before applying LLM settings: (url, key, typed by the user), or None
    when the LLM settings do not change or there is no endpoint to ask."""
    base_url, key, model = (base_url or "").strip(), (key or "").strip(), (model or "").strip()
    server_key = base.llm_api_key.get_secret_value() if base.llm_api_key else None
    if base_url and base_url != (base.llm_base_url or ""):
        if not allow_endpoints or not base_url.lower().startswith(("http://", "https://")):
            return None  # refused by _apply_settings with its own message
        return base_url, key or None, True
    if not key and model == (base.llm_model or ""):
        return None  # nothing about the model changes
    server_base = base.llm_base_url or ("https://api.openai.com/v1" if (key or server_key) else None)
    if server_base is None:
        return None
    return server_base, key or server_key, False


def _discard_upload(path: str | None) -> None:
    """Delete an uploaded file (and its now empty folder) from Gradio's upload cache; paths
    outside that cache are never touched."""
    if not path:
        return
    from gradio.utils import get_upload_folder

    try:
        root = Path(get_upload_folder()).resolve()
        file = Path(path).resolve()
        if file == root or not file.is_relative_to(root):
            return
        file.unlink(missing_ok=True)
        if file.parent != root and not any(file.parent.iterdir()):
            file.parent.rmdir()
    except OSError as exc:
        logger.warning("could not delete the uploaded file %s: %s", Path(path).name, exc.strerror or exc)


def _server_placeholder(value: str | None, lang: str) -> str:
    """The placeholder of a URL field: says a server value exists without showing it."""
    return t(lang, "set_on_server") if value else ""


def _provider_choices(current: str) -> list[str]:
    choices = list(SEARCH_PROVIDER_CHOICES)
    if current and current not in choices:
        choices.append(current)
    return choices


def _apply_settings(deps: Deps, index: Any | None, make_deps: MakeDeps | None, *, base_url: str, model: str,
                    key: str, provider: str, search_key: str, searxng: str, k: int, rounds: int,
                    allow_endpoints: bool = True) -> Deps:
    """Deps for a session's settings. Blank fields keep the server's values (the page never holds
    the server's URLs), and the server's LLM key is never sent to a base URL the user typed in.
    ``allow_endpoints=False`` (ALLOW_SESSION_ENDPOINTS) refuses any user-typed base or SearXNG URL.
    Raises ``SettingsError`` (a ``ValueError``) for invalid settings."""
    base = deps.settings
    base_url, model, key = (base_url or "").strip(), (model or "").strip(), (key or "").strip()
    provider, search_key, searxng = (provider or "none").strip().lower(), (search_key or "").strip(), (searxng or "").strip()
    if not 1 <= k <= 50:
        raise SettingsError("err_k_range")
    if not 0 <= rounds <= 5:
        raise SettingsError("err_rounds_range")
    update: dict[str, Any] = {"retrieval_k": k, "max_web_rounds": rounds}
    heavy: dict[str, Any] = {}
    if (base_url or searxng) and not allow_endpoints:
        raise SettingsError("err_endpoints_forbidden")
    if base_url and base_url != (base.llm_base_url or ""):
        if not base_url.lower().startswith(("http://", "https://")):
            raise SettingsError("err_base_url_scheme")
        heavy["llm_base_url"] = base_url
        heavy["llm_api_key"] = SecretStr(key) if key else None  # never forward the server's key elsewhere
    elif key:
        heavy["llm_api_key"] = SecretStr(key)
    if model != (base.llm_model or ""):
        heavy["llm_model"] = model or None
    if provider != base.search_provider.strip().lower():
        heavy["search_provider"] = provider or "none"
    if search_key:
        names = {p.strip() for p in provider.split(",")}
        if "bocha" in names:
            heavy["bocha_api_key"] = SecretStr(search_key)
        if "tavily" in names:
            heavy["tavily_api_key"] = SecretStr(search_key)
    if searxng and searxng != (base.searxng_url or ""):
        if not searxng.lower().startswith(("http://", "https://")):
            raise SettingsError("err_searxng_scheme")
        heavy["searxng_url"] = searxng
    if not heavy and k == base.retrieval_k and rounds == base.max_web_rounds:
        return deps
    settings = base.model_copy(update={**update, **heavy})
    if heavy:
        if make_deps is None:
            raise SettingsError("err_no_make_deps")
        return make_deps(settings, index=index)
    return dataclasses.replace(deps, settings=settings)
