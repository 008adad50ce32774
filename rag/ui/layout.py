"""The page's components, placed as the page shows them: header and banner on top, the chat on the
left, the trace / sources / books / settings tabs on the right. ``build_layout`` must run inside a
``gr.Blocks``; it returns each page's components (``ShellView``, ``ChatView``, ``BooksView``,
``SettingsView``), which the pages (``rag.ui.pages``) update and ``rag.ui.blocks`` wires.

Labels are in the server's default language here; ``ShellPage.on_load`` relabels for the visitor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import gradio as gr

from rag.i18n import t
from rag.search.registry import VALID_NAMES
from rag.ui.render import render_books, render_sources, render_trace
from rag.ui.translate import UiState

ALL_BOOKS = "__all__"  # the active-book choice "every book"
BOOK_TYPES = [".epub", ".txt", ".md", ".markdown"]
BROWSER_KEY = "enough-rag"  # the browser's localStorage key for the session id, language and settings
NAV = (("chat", "💬"), ("trace", "🧭"), ("sources", "📎"), ("books", "📚"), ("settings", "⚙️"))


@dataclass
class ShellView:
    session: Any  # gr.State: the Session
    browser: Any  # gr.BrowserState: sid, language, saved settings
    header: Any
    banner: Any
    lang: Any
    nav: Any
    locale_changed: Any  # hidden: whether the browser switched Gradio's own locale
    tab_trace: Any
    tab_sources: Any
    tab_books: Any
    tab_settings: Any
    banner_timer: Any = None  # ticks while the embedded model downloads and loads (the banner follows)


@dataclass
class ChatView:
    chatbot: Any
    preview_store: Any
    question: Any
    send: Any
    stop: Any
    new_chat: Any
    demo_btn: Any
    trace: Any
    eval_acc: Any
    eval_json: Any
    sources: Any

    @property
    def panels(self) -> list[Any]:
        return [self.chatbot, self.trace, self.sources, self.eval_json, self.preview_store]


@dataclass
class BooksView:
    upload: Any
    upload_cancel: Any
    active_book: Any
    scope_acc: Any
    scope_note: Any
    chapter_from: Any
    chapter_to: Any
    read_up_to: Any
    allow_spoilers: Any
    scope_apply: Any
    scope_status: Any
    books_html: Any
    delete_btn: Any
    timer: Any
    demo_btn: Any = None  # the chat's example question: it is the active book's (build_layout sets it)

    @property
    def outputs(self) -> list[Any]:
        """What follows the book list and the active book: the list, the picker, the timer, the
        labels that count chapters (in the book's own word) and the example question."""
        return [self.books_html, self.active_book, self.timer, self.chapter_from, self.chapter_to, self.read_up_to,
                self.demo_btn]


@dataclass
class SettingsView:
    note: Any
    base_url: Any
    model: Any
    key: Any
    provider: Any
    search_key: Any
    searxng: Any
    k: Any
    rounds: Any
    remember: Any
    apply: Any
    reset: Any
    status: Any
    local_model: Any = None  # LOCAL_MODEL_PATH: a server setting, read-only where visitors use the page

    @property
    def fields(self) -> list[Any]:
        return [self.base_url, self.model, self.key, self.provider, self.search_key, self.searxng, self.k,
                self.rounds, self.local_model]


@dataclass
class Layout:
    shell: ShellView
    chat: ChatView
    books: BooksView
    settings: SettingsView


def header_html(lang: str) -> str:
    from rag.ui.render import esc

    return (f'<div class="rag-header"><h1>{esc(t(lang, "app_title"))}</h1>'
            f'<p class="muted">{esc(t(lang, "app_subtitle"))}</p></div>')


def nav_html(lang: str) -> str:
    from rag.ui.render import esc

    buttons = "".join(
        f'<button type="button" data-view="{view}" class="rag-nav-btn">{icon} {esc(t(lang, f"nav_{view}"))}</button>'
        for view, icon in NAV)
    return f'<nav class="rag-nav" aria-label="views">{buttons}</nav>'


def server_placeholder(value: str | None, lang: str) -> str:
    """The placeholder of a URL field: says a server value exists without showing it."""
    return t(lang, "set_on_server") if value else ""


def provider_choices(current: str, lang: str = "zh") -> list[tuple[str, str]]:
    """The search providers a visitor may pick, as (label in ``lang``, SEARCH_PROVIDER's value): the
    search registry's names, "none" first, and the server's own choice when it is a chain such as
    "bocha,duckduckgo". The value is the setting's; only the label is the page's language."""
    from rag.ui.render import provider_label

    names = ["none", *(name for name in VALID_NAMES if name != "none")]
    if current and current not in names:
        names.append(current)
    return [(provider_label(lang, name), name) for name in names]


def local_model_editable(settings: Any) -> bool:
    """Whether the page may set LOCAL_MODEL_PATH: only where the one who uses the page runs the
    server (not on a Hugging Face Space, SPACE_ID set, nor on any public page)."""
    return not os.environ.get("SPACE_ID") and not bool(getattr(settings, "public_page", False))


def local_model_field(settings: Any, lang: str) -> dict[str, Any]:
    """The local model field's label, hint and whether it can be edited, in ``lang``. The server's
    own path is never shown (the placeholder only says that one is set)."""
    if not local_model_editable(settings):
        return {"label": t(lang, "local_model_path"), "info": t(lang, "local_model_path_space"),
                "placeholder": "", "interactive": False}
    placeholder = server_placeholder(settings.local_model_path, lang) or t(lang, "local_model_path_placeholder")
    return {"label": t(lang, "local_model_path"), "info": None, "placeholder": placeholder, "interactive": True}


def build_layout(*, lang: str, head: str, banner: str, browser_secret: str, settings: Any, has_index: bool,
                 banner_ticks: bool = False) -> Layout:
    """Every component, in place. ``settings``: the server's (defaults of the settings tab)."""
    session = gr.State(None)
    browser = gr.BrowserState({}, storage_key=BROWSER_KEY, secret=browser_secret)
    header = gr.HTML(header_html(lang), head=head, elem_id="rag-header")
    with gr.Row(equal_height=False, elem_id="rag-top"):
        banner_html = gr.HTML(banner, elem_id="rag-banner")
        lang_radio = gr.Radio(choices=[("中文", "zh"), ("English", "en")], value=lang, label=t(lang, "language"),
                              elem_id="rag-lang", scale=0, min_width=190, show_label=False, container=False)
    nav = gr.HTML(nav_html(lang), elem_id="rag-nav")
    with gr.Row(equal_height=False, elem_id="rag-main"):
        with gr.Column(scale=3, min_width=300, elem_id="rag-chat-col"):
            chat = _chat_column(lang)
        with gr.Column(scale=2, min_width=300, elem_id="rag-side-col"), gr.Tabs(elem_id="rag-side"):
            with gr.Tab(t(lang, "tab_trace"), id="trace", elem_id="rag-tab-trace", render_children=True) as tab_trace:
                chat.trace = gr.HTML(render_trace(None, lang), elem_id="rag-trace")
                with gr.Accordion(t(lang, "evaluations_json"), open=False, elem_id="rag-evals-acc") as eval_acc:
                    chat.eval_acc, chat.eval_json = eval_acc, gr.JSON(value=[], elem_id="rag-evals", show_label=False)
            with gr.Tab(t(lang, "tab_sources"), id="sources", elem_id="rag-tab-sources",
                        render_children=True) as tab_sources:
                chat.sources = gr.HTML(render_sources(UiState(), lang), elem_id="rag-sources")
            with gr.Tab(t(lang, "tab_books"), id="books", elem_id="rag-tab-books") as tab_books:
                books = _books_tab(lang, has_index)
                books.demo_btn = chat.demo_btn
            with gr.Tab(t(lang, "tab_settings"), id="settings", elem_id="rag-tab-settings") as tab_settings:
                settings_view = _settings_tab(lang, settings, provider_choices(settings.search_provider, lang))
    locale_changed = gr.Textbox("", visible=False)
    banner_timer = gr.Timer(2.0, active=banner_ticks)
    shell = ShellView(session, browser, header, banner_html, lang_radio, nav, locale_changed,
                      tab_trace, tab_sources, tab_books, tab_settings, banner_timer)
    return Layout(shell, chat, books, settings_view)


def _chat_column(lang: str) -> ChatView:
    chatbot = gr.Chatbot(label=t(lang, "chat"), elem_id="rag-chat", height=620, buttons=["copy"],
                         feedback_options=None, sanitize_html=True, render_markdown=True,
                         group_consecutive_messages=False)
    # A hidden copy of the sources, always on the page (a tab's content is not until it is
    # opened): citation previews read it.
    preview_store = gr.HTML("", elem_id="rag-preview-store")
    with gr.Row(elem_id="rag-ask-row"):
        question = gr.Textbox(label=t(lang, "question"), placeholder=t(lang, "question_placeholder"),
                              lines=1, max_lines=6, scale=5, elem_id="rag-question")
        send = gr.Button(t(lang, "send"), variant="primary", scale=1, elem_id="rag-send", min_width=80)
        stop = gr.Button(t(lang, "stop"), variant="stop", scale=1, elem_id="rag-stop", visible=False, min_width=80)
    with gr.Row():
        new_chat = gr.Button(t(lang, "new_conversation"), size="sm", elem_id="rag-new")
        demo_btn = gr.Button(f"💡 {t(lang, 'demo_question')}", size="sm", elem_id="rag-demo", scale=4)
    # trace, eval_acc, eval_json and sources sit in the side tabs: build_layout fills them in.
    return ChatView(chatbot, preview_store, question, send, stop, new_chat, demo_btn, None, None, None, None)


def _books_tab(lang: str, has_index: bool) -> BooksView:
    upload = gr.File(label=t(lang, "upload"), file_types=BOOK_TYPES, file_count="single", type="filepath",
                     elem_id="rag-upload", interactive=has_index)
    upload_cancel = gr.Button(t(lang, "upload_cancel"), size="sm", variant="stop", visible=False,
                              elem_id="rag-upload-cancel")
    active_book = gr.Dropdown(choices=[(t(lang, "all_books"), ALL_BOOKS)], value=ALL_BOOKS,
                              label=t(lang, "active_book"), elem_id="rag-active-book", interactive=True)
    with gr.Accordion(t(lang, "scope_title"), open=False, elem_id="rag-scope") as scope_acc:
        scope_note = gr.Markdown(t(lang, "scope_note"))
        # text fields: empty is empty (the whole book), never a hidden 0 (rag.scope)
        with gr.Row():
            chapter_from = gr.Textbox("", label=t(lang, "chapter_from"), placeholder=t(lang, "scope_placeholder"),
                                      max_lines=1, elem_id="rag-ch-from")
            chapter_to = gr.Textbox("", label=t(lang, "chapter_to"), placeholder=t(lang, "scope_placeholder"),
                                    max_lines=1, elem_id="rag-ch-to")
        read_up_to = gr.Textbox("", label=t(lang, "read_up_to"), placeholder=t(lang, "scope_no_limit"), max_lines=1,
                                elem_id="rag-read-up-to")
        allow_spoilers = gr.Checkbox(False, label=t(lang, "allow_web_spoilers"), elem_id="rag-allow-spoilers")
        scope_apply = gr.Button(t(lang, "scope_apply"), size="sm", elem_id="rag-scope-apply")
        scope_status = gr.Markdown("", elem_id="rag-scope-status")
    books_html = gr.HTML(render_books([] if has_index else None, lang), elem_id="rag-books")
    delete_btn = gr.Button(t(lang, "delete_book"), size="sm", elem_id="rag-delete-book", visible=has_index)
    timer = gr.Timer(2.0, active=False)
    return BooksView(upload, upload_cancel, active_book, scope_acc, scope_note, chapter_from, chapter_to,
                     read_up_to, allow_spoilers, scope_apply, scope_status, books_html, delete_btn, timer)


def _settings_tab(lang: str, s: Any, providers: list[tuple[str, str]]) -> SettingsView:
    note = gr.Markdown(t(lang, "settings_note"))
    allowed = bool(s.allow_session_endpoints)
    # Server URLs can carry credentials or internal addresses: the page only says that one is set (an
    # empty field means "the server's"), and shows no URL field at all when visitors may not choose
    # endpoints (ALLOW_SESSION_ENDPOINTS=false).
    base_url = gr.Textbox(label=t(lang, "llm_base_url"), value="", placeholder=server_placeholder(s.llm_base_url, lang),
                          visible=allowed, elem_id="rag-s-base-url")
    model = gr.Dropdown(label=t(lang, "llm_model"), value=s.llm_model or "", choices=[s.llm_model or ""],
                        allow_custom_value=True, elem_id="rag-s-model")
    key = gr.Textbox(label=t(lang, "llm_api_key"), type="password", value="", elem_id="rag-s-key")
    provider = gr.Dropdown(choices=providers, value=s.search_provider, allow_custom_value=True,
                           label=t(lang, "search_provider"), elem_id="rag-s-provider")
    search_key = gr.Textbox(label=t(lang, "search_api_key"), type="password", value="", elem_id="rag-s-search-key")
    searxng = gr.Textbox(label=t(lang, "searxng_url"), value="", placeholder=server_placeholder(s.searxng_url, lang),
                         visible=allowed, elem_id="rag-s-searxng")
    k = gr.Slider(1, 20, step=1, value=s.retrieval_k, label=t(lang, "retrieval_k"), elem_id="rag-s-k")
    rounds = gr.Slider(0, 5, step=1, value=s.max_web_rounds, label=t(lang, "web_rounds"), elem_id="rag-s-rounds")
    local_model = gr.Textbox(value="", max_lines=1, elem_id="rag-s-local-model", **local_model_field(s, lang))
    remember = gr.Checkbox(False, label=t(lang, "remember_keys"), elem_id="rag-s-remember")
    with gr.Row():
        apply = gr.Button(t(lang, "apply"), variant="primary", elem_id="rag-s-apply")
        reset = gr.Button(t(lang, "reset"), elem_id="rag-s-reset")
    status = gr.Markdown("", elem_id="rag-s-status")
    return SettingsView(note, base_url, model, key, provider, search_key, searxng, k, rounds, remember, apply,
                        reset, status, local_model)
