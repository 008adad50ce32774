"""The ``gr.Blocks`` app: chat + live trace + sources, book panel, per-session settings.

Everything session-specific (thread id, conversation, language, settings, the graph built for
them) lives in one ``Session`` held by ``gr.State``; nothing is shared between browser sessions
except the book index and the server's default settings.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from pydantic import SecretStr

from rag.deps import Deps
from rag.errors import RagError
from rag.events import Token
from rag.ui.i18n import DEMO_QUESTION_ZH, pick_language, t
from rag.ui.render import (
    chat_messages,
    esc,
    evaluations_json,
    render_banner,
    render_books,
    render_sources,
    render_trace,
)
from rag.ui.translate import UiState, apply_event, fail_turn, start_turn

logger = logging.getLogger(__name__)

ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"
CSS_PATH = ASSETS_DIR / "ui.css"
ALL_BOOKS = "__all__"
BOOK_TYPES = [".epub", ".txt", ".md", ".markdown"]
STREAM_MIN_INTERVAL_S = 0.05  # coalesce token updates to at most ~20 page updates a second
SEARCH_PROVIDER_CHOICES = ["none", "duckduckgo", "bocha", "tavily", "searxng"]

GraphFactory = Callable[..., Any]
MakeDeps = Callable[..., Deps]


# --------------------------------------------------------------------------- session


class Session:
    """One browser session. Holds secrets only inside ``deps``; its repr shows none."""

    def __init__(self, lang: str = "zh") -> None:
        self.id = uuid.uuid4().hex
        self.thread_id = uuid.uuid4().hex
        self.lang = lang
        self.ui = UiState()
        self.deps: Deps | None = None  # None: not built yet
        self.graph: Any | None = None
        self.checkpointer: Any | None = None
        self.custom = False  # settings overridden in this session
        self.lock = threading.Lock()

    def __repr__(self) -> str:  # never leak settings (keys) into logs
        return f"Session(id={self.id[:8]}, turns={len(self.ui.turns)}, custom={self.custom})"

    def __deepcopy__(self, memo: dict[int, Any]) -> Session:
        return self  # graph and clients are not copyable; a session is never shared anyway

    def new_conversation(self) -> None:
        self.thread_id = uuid.uuid4().hex
        self.ui = UiState()


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


def _load_css() -> str:
    try:
        return CSS_PATH.read_text(encoding="utf-8")
    except OSError:
        logger.warning("UI stylesheet %s not found; the page will use Gradio's defaults", CSS_PATH)
        return ""


# --------------------------------------------------------------------------- the app


def build_app(deps: Deps, index: Any | None = None, make_deps: MakeDeps | None = None, *,
              graph_factory: GraphFactory | None = None, title: str = "Enough RAG") -> gr.Blocks:
    """Build the Gradio app.

    ``deps``: the server's default dependencies (each session gets its own graph, conversation
    memory and web-search budget on top of them). ``index``: the book index (``rag.index``) for
    the book panel, or None. ``make_deps(settings, index=...)``: rebuilds deps from per-session
    settings (LLM / search); without it only k and web rounds can change per session.
    ``graph_factory(deps, checkpointer=...)`` defaults to ``rag.graph.build_graph``.
    """
    default_settings = deps.settings
    default_lang = default_settings.ui_language if default_settings.ui_language in ("zh", "en") else "zh"
    endpoints_allowed = bool(default_settings.allow_session_endpoints)
    shared_library = bool(default_settings.shared_library)

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
        from rag.graph import build_graph

        return build_graph(session_deps, checkpointer=checkpointer)

    def ensure_session(session: Session | None) -> Session:
        return session if isinstance(session, Session) else Session(lang=default_lang)

    def ensure_graph(session: Session) -> Any:
        with session.lock:
            if session.graph is None:
                from rag.graph import make_checkpointer

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

    def banner_html(session: Session) -> str:
        mode = _mode_of(session.deps or deps)
        return render_banner(**mode, custom=session.custom, lang=session.lang)

    def header_html(lang: str) -> str:
        return (
            f'<div class="rag-header"><h1>{esc(t(lang, "app_title"))}</h1>'
            f'<p class="muted">{esc(t(lang, "app_subtitle"))}</p></div>'
        )

    def panels(session: Session) -> tuple[Any, ...]:
        """chatbot, trace, sources, evaluations JSON."""
        return (
            chat_messages(session.ui, session.lang),
            render_trace(session.ui.current, session.lang),
            render_sources(session.ui, session.lang),
            evaluations_json(session.ui.current),
        )

    with gr.Blocks(title=title, analytics_enabled=False, fill_width=True) as demo:
        session_state = gr.State(None)
        header = gr.HTML(header_html(default_lang), head=f"<style>{_load_css()}</style>", elem_id="rag-header")
        with gr.Row(equal_height=False):
            banner = gr.HTML(banner_html(Session(default_lang)), elem_id="rag-banner")
            lang_radio = gr.Radio(
                choices=[("中文", "zh"), ("English", "en")], value=default_lang, label=t(default_lang, "language"),
                elem_id="rag-lang", scale=0, min_width=200,
            )
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=420):
                chatbot = gr.Chatbot(
                    label=t(default_lang, "chat"), elem_id="rag-chat", height=620, buttons=["copy"],
                    feedback_options=None, sanitize_html=True, render_markdown=True, group_consecutive_messages=False,
                )
                with gr.Row():
                    question = gr.Textbox(
                        label=t(default_lang, "question"), placeholder=t(default_lang, "question_placeholder"),
                        lines=1, max_lines=6, scale=5, elem_id="rag-question", autofocus=True,
                    )
                    send = gr.Button(t(default_lang, "send"), variant="primary", scale=1, elem_id="rag-send")
                with gr.Row():
                    new_chat = gr.Button(t(default_lang, "new_conversation"), size="sm", elem_id="rag-new")
                    demo_btn = gr.Button(f"💡 {DEMO_QUESTION_ZH}", size="sm", elem_id="rag-demo", scale=4)
            with gr.Column(scale=2, min_width=360), gr.Tabs(elem_id="rag-side"):
                with gr.Tab(t(default_lang, "tab_trace"), id="trace") as tab_trace:
                    trace = gr.HTML(render_trace(None, default_lang), elem_id="rag-trace")
                    with gr.Accordion(t(default_lang, "evaluations_json"), open=False) as eval_acc:
                        eval_json = gr.JSON(value=[], elem_id="rag-evals", show_label=False)
                    sources = gr.HTML(render_sources(UiState(), default_lang), elem_id="rag-sources")
                with gr.Tab(t(default_lang, "tab_books"), id="books") as tab_books:
                    upload = gr.File(
                        label=t(default_lang, "upload"), file_types=BOOK_TYPES, file_count="single",
                        type="filepath", elem_id="rag-upload", interactive=index is not None,
                    )
                    active_book = gr.Dropdown(
                        choices=_book_choices([], default_lang), value=ALL_BOOKS,
                        label=t(default_lang, "active_book"), elem_id="rag-active-book", interactive=True,
                    )
                    books_html = gr.HTML(render_books(None if index is None else [], default_lang), elem_id="rag-books")
                    books_timer = gr.Timer(2.0, active=False)
                with gr.Tab(t(default_lang, "tab_settings"), id="settings") as tab_settings:
                    settings_note = gr.Markdown(t(default_lang, "settings_note"))
                    # Server URLs can carry credentials or internal addresses: the page only says that
                    # one is set (an empty field means "the server's"), and shows no URL field at all
                    # when visitors may not choose endpoints (ALLOW_SESSION_ENDPOINTS=false).
                    s_base_url = gr.Textbox(label=t(default_lang, "llm_base_url"), value="",
                                            placeholder=_server_placeholder(default_settings.llm_base_url, default_lang),
                                            visible=endpoints_allowed, elem_id="rag-s-base-url")
                    s_model = gr.Textbox(label=t(default_lang, "llm_model"), value=default_settings.llm_model or "",
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
                    with gr.Row():
                        s_apply = gr.Button(t(default_lang, "apply"), variant="primary", elem_id="rag-s-apply")
                        s_reset = gr.Button(t(default_lang, "reset"), elem_id="rag-s-reset")
                    s_status = gr.Markdown("", elem_id="rag-s-status")

        # ------------------------------------------------------------------ handlers

        def relabel(lang: str) -> list[Any]:
            return [
                gr.update(value=header_html(lang)),
                gr.update(label=t(lang, "language")),
                gr.update(label=t(lang, "chat")),
                gr.update(label=t(lang, "question"), placeholder=t(lang, "question_placeholder")),
                gr.update(value=t(lang, "send")),
                gr.update(value=t(lang, "new_conversation")),
                gr.update(label=t(lang, "tab_trace")),
                gr.update(label=t(lang, "tab_books")),
                gr.update(label=t(lang, "tab_settings")),
                gr.update(label=t(lang, "evaluations_json")),
                gr.update(label=t(lang, "upload")),
                gr.update(value=t(lang, "settings_note")),
                gr.update(label=t(lang, "llm_base_url"), placeholder=_server_placeholder(default_settings.llm_base_url, lang)),
                gr.update(label=t(lang, "llm_model")),
                gr.update(label=t(lang, "llm_api_key")),
                gr.update(label=t(lang, "search_provider")),
                gr.update(label=t(lang, "search_api_key")),
                gr.update(label=t(lang, "searxng_url"), placeholder=_server_placeholder(default_settings.searxng_url, lang)),
                gr.update(label=t(lang, "retrieval_k")),
                gr.update(label=t(lang, "web_rounds")),
                gr.update(value=t(lang, "apply")),
                gr.update(value=t(lang, "reset")),
            ]

        label_outputs = [
            header, lang_radio, chatbot, question, send, new_chat, tab_trace, tab_books, tab_settings, eval_acc,
            upload, settings_note, s_base_url, s_model, s_key, s_provider, s_search_key, s_searxng, s_k, s_rounds,
            s_apply, s_reset,
        ]

        def books_outputs(session: Session, current: str | None, message: str = "", level: str = "info") -> list[Any]:
            books = list_books(session)
            choices = _book_choices(books, session.lang)
            values = {value for _, value in choices}
            pending = any(str(getattr(b, "status", "")) in {"keyword_ready", "embedding"} for b in books or [])
            return [
                render_books(books, session.lang, message, level),
                gr.update(choices=choices, value=current if current in values else ALL_BOOKS,
                          label=t(session.lang, "active_book")),
                gr.Timer(active=pending),
            ]

        book_outputs = [books_html, active_book, books_timer]

        def on_load(session: Session | None, current_book: str | None, request: gr.Request) -> list[Any]:
            session = ensure_session(session)
            accept = ""
            if request is not None:
                try:
                    accept = request.headers.get("accept-language", "")
                except Exception:  # noqa: BLE001
                    accept = ""
            session.lang = pick_language(default_settings.ui_language, accept)
            return [
                session, banner_html(session), *panels(session),
                *books_outputs(session, current_book), *relabel(session.lang)[:1],
                gr.update(value=session.lang, label=t(session.lang, "language")), *relabel(session.lang)[2:],
            ]

        demo.load(
            on_load, inputs=[session_state, active_book],
            outputs=[session_state, banner, chatbot, trace, sources, eval_json, *book_outputs, *label_outputs],
            queue=False,
        )

        def on_language(lang: str, session: Session | None, current_book: str | None) -> list[Any]:
            session = ensure_session(session)
            session.lang = lang if lang in ("zh", "en") else session.lang
            return [session, banner_html(session), *panels(session), *books_outputs(session, current_book),
                    *relabel(session.lang)]

        lang_radio.input(
            on_language, inputs=[lang_radio, session_state, active_book],
            outputs=[session_state, banner, chatbot, trace, sources, eval_json, *book_outputs, *label_outputs],
            queue=False,
        )

        def on_ask(text: str, session: Session | None, book: str | None) -> Iterator[list[Any]]:
            session = ensure_session(session)
            text = (text or "").strip()
            if not text:
                gr.Warning(t(session.lang, "empty_question"))
                yield [gr.update(), session, *panels(session)]
                return
            session.ui = start_turn(session.ui, text)
            yield ["", session, *panels(session)]
            try:
                graph = ensure_graph(session)
            except RagError as exc:
                session.ui = fail_turn(session.ui, str(exc))
                yield ["", session, *panels(session)]
                return
            except Exception as exc:  # noqa: BLE001 - show a readable message, log the details
                logger.exception("building the graph failed")
                session.ui = fail_turn(session.ui, f"{type(exc).__name__}: {exc}")
                yield ["", session, *panels(session)]
                return
            from rag.events import run_turn

            book_id = None if not book or book == ALL_BOOKS else book
            last = 0.0
            pending = False
            for event in run_turn(graph, text, thread_id=session.thread_id, book_id=book_id):
                session.ui = apply_event(session.ui, event)
                now = time.monotonic()
                if isinstance(event, Token) and now - last < STREAM_MIN_INTERVAL_S:
                    pending = True
                    continue
                last, pending = now, False
                yield [gr.update(), session, *panels(session)]
            if pending or session.ui.busy:
                yield [gr.update(), session, *panels(session)]

        ask_outputs = [question, session_state, chatbot, trace, sources, eval_json]
        ask_kwargs: dict[str, Any] = {
            "inputs": [question, session_state, active_book], "outputs": ask_outputs,
            "show_progress": "hidden", "concurrency_limit": 4, "concurrency_id": "ask",
        }
        question.submit(on_ask, **ask_kwargs)
        send.click(on_ask, **ask_kwargs)

        def on_new(session: Session | None) -> list[Any]:
            session = ensure_session(session)
            session.new_conversation()
            return [session, *panels(session)]

        new_chat.click(on_new, inputs=[session_state], outputs=[session_state, chatbot, trace, sources, eval_json],
                       queue=False)
        demo_btn.click(lambda: DEMO_QUESTION_ZH, outputs=[question], queue=False)

        def on_upload(path: str | None, session: Session | None, current_book: str | None,
                      progress: gr.Progress = gr.Progress()) -> list[Any]:  # noqa: B008 - Gradio's idiom
            session = ensure_session(session)  # kept (an output): the book may be this session's own
            try:
                upload_value, *books = ingest_upload(path, session, current_book, progress)
                return [upload_value, session, *books]
            finally:
                _discard_upload(path)  # ingested or rejected: the upload is not kept

        def ingest_upload(path: str | None, session: Session, current_book: str | None,
                          progress: Any) -> list[Any]:
            if not path:
                return [gr.update(), *books_outputs(session, current_book)]
            if index is None:
                return [None, *books_outputs(session, current_book, t(session.lang, "no_index"), "error")]
            live = {"on": True}

            def report(stage: str, done: int, total: int, message: str = "") -> None:
                if not live["on"]:
                    return
                try:
                    fraction = (done / total) if total else None
                    progress(fraction, desc=f"{stage} {message}".strip())
                except Exception:  # noqa: BLE001 - progress is cosmetic
                    pass

            progress(0, desc=t(session.lang, "indexing"))
            try:
                info = library(session).ingest(path, progress=report, background=True)
            except RagError as exc:
                live["on"] = False
                return [None, *books_outputs(session, current_book, t(session.lang, "index_failed", message=str(exc)),
                                             "error")]
            except Exception as exc:  # noqa: BLE001
                live["on"] = False
                logger.exception("indexing %s failed", Path(path).name)
                return [None, *books_outputs(session, current_book,
                                             t(session.lang, "index_failed", message=f"{type(exc).__name__}: {exc}"),
                                             "error")]
            live["on"] = False
            message = t(session.lang, "indexed", title=getattr(info, "title", Path(path).stem),
                        chapters=getattr(info, "chapters", "?"), chunks=getattr(info, "chunks", "?"))
            new_id = str(getattr(info, "id", "") or current_book or ALL_BOOKS)
            return [None, *books_outputs(session, new_id, message)]

        upload.upload(on_upload, inputs=[upload, session_state, active_book],
                      outputs=[upload, session_state, *book_outputs],
                      concurrency_limit=1, concurrency_id="ingest")

        def on_tick(session: Session | None, current_book: str | None) -> list[Any]:
            session = ensure_session(session)
            return books_outputs(session, current_book)

        books_timer.tick(on_tick, inputs=[session_state, active_book], outputs=book_outputs, queue=False,
                         show_progress="hidden")

        def on_apply(session: Session | None, base_url: str, model: str, key: str, provider: str,
                     search_key: str, searxng: str, k: float, rounds: float) -> list[Any]:
            session = ensure_session(session)
            lang = session.lang
            try:
                new_deps = _apply_settings(
                    deps, index, make_deps, base_url=base_url, model=model, key=key, provider=provider,
                    search_key=search_key, searxng=searxng, k=int(k), rounds=int(rounds),
                    allow_endpoints=endpoints_allowed,
                )
            except (RagError, ValueError) as exc:
                return [session, banner_html(session), f"⚠️ {esc(t(lang, 'settings_failed', message=str(exc)))}"]
            except Exception as exc:  # noqa: BLE001
                logger.warning("applying session settings failed: %s", type(exc).__name__)
                return [session, banner_html(session),
                        f"⚠️ {esc(t(lang, 'settings_failed', message=type(exc).__name__))}"]
            with session.lock:
                session.deps = _per_session_deps(new_deps, owner_of(session))
                session.graph = None  # rebuilt on the next question; conversation memory is kept
                session.custom = new_deps is not deps
            logger.info("session %s applied custom settings (llm=%s, search=%s)", session.id[:8],
                        new_deps.llm is not None, new_deps.settings.search_provider)
            return [session, banner_html(session), f"✅ {esc(t(lang, 'settings_applied'))}"]

        s_apply.click(
            on_apply,
            inputs=[session_state, s_base_url, s_model, s_key, s_provider, s_search_key, s_searxng, s_k, s_rounds],
            outputs=[session_state, banner, s_status], concurrency_limit=2, concurrency_id="settings",
        )

        def on_reset(session: Session | None) -> list[Any]:
            session = ensure_session(session)
            with session.lock:
                session.deps = None
                session.graph = None
                session.custom = False
            s = default_settings
            return [
                session, banner_html(session), f"✅ {esc(t(session.lang, 'settings_reset'))}",
                "", s.llm_model or "", "", s.search_provider, "", "",  # URL fields: "" = the server's
                s.retrieval_k, s.max_web_rounds,
            ]

        s_reset.click(
            on_reset, inputs=[session_state],
            outputs=[session_state, banner, s_status, s_base_url, s_model, s_key, s_provider, s_search_key,
                     s_searxng, s_k, s_rounds],
            queue=False,
        )

    return demo


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
    ``allow_endpoints=False`` (ALLOW_SESSION_ENDPOINTS) refuses any user-typed base or SearXNG URL."""
    base = deps.settings
    base_url, model, key = (base_url or "").strip(), (model or "").strip(), (key or "").strip()
    provider, search_key, searxng = (provider or "none").strip().lower(), (search_key or "").strip(), (searxng or "").strip()
    if not 1 <= k <= 50:
        raise ValueError("k must be between 1 and 50")
    if not 0 <= rounds <= 5:
        raise ValueError("web rounds must be between 0 and 5")
    update: dict[str, Any] = {"retrieval_k": k, "max_web_rounds": rounds}
    heavy: dict[str, Any] = {}
    if (base_url or searxng) and not allow_endpoints:
        raise ValueError("this server does not let sessions choose the LLM base URL or SearXNG URL "
                         "(ALLOW_SESSION_ENDPOINTS=false); leave them empty")
    if base_url and base_url != (base.llm_base_url or ""):
        if not base_url.lower().startswith(("http://", "https://")):
            raise ValueError("the LLM base URL must start with http:// or https://")
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
            raise ValueError("the SearXNG URL must start with http:// or https://")
        heavy["searxng_url"] = searxng
    if not heavy and k == base.retrieval_k and rounds == base.max_web_rounds:
        return deps
    settings = base.model_copy(update={**update, **heavy})
    if heavy:
        if make_deps is None:
            raise ValueError("this app cannot change the model or search provider per session")
        return make_deps(settings, index=index)
    return dataclasses.replace(deps, settings=settings)
