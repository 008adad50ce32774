"""The shell around the pages: header, navigation, the mode banner, the language, and what happens
when a page loads (find the session again after a reload, or restore the settings the browser
kept). Handlers take ``(session, ...)`` and return component updates."""

from __future__ import annotations

import logging
import time
from typing import Any

import gradio as gr

from rag.i18n import pick_language, t
from rag.ui.layout import ALL_BOOKS, Layout, header_html, nav_html
from rag.ui.pages.base import AppContext, merge
from rag.ui.pages.books import BooksPage
from rag.ui.pages.chat import ChatPage
from rag.ui.pages.settings import SettingsPage
from rag.ui.session import Session
from rag.ui.translate import stop_turn

logger = logging.getLogger(__name__)


def orphan_turn_ends(session: Session) -> None:
    """A reloaded page cannot follow a turn its previous page started: the turn is stopped (it
    shows as ended by the page going away, not by the reader) and the session is free for the next
    question."""
    turn = session.stop(by="page")
    if turn is None:
        return
    with session.lock:
        session.ui = stop_turn(session.ui, time.monotonic() - turn.asked_at, by=turn.stopped_by)
    session.end(turn)


def browser_value(session: Session, remember: bool | None = None, book: Any = None) -> dict[str, Any]:
    """What the browser keeps of a session: its id, its owner token (its books, across restarts),
    language, non-secret settings (keys if asked) and the active book."""
    value: dict[str, Any] = {"sid": session.id, "owner": session.owner, "lang": session.lang,
                             "settings": dict(session.saved),
                             "book": book if isinstance(book, str) and book else None}
    if remember:
        value["remember_keys"] = True
        value["keys"] = {k: v for k, v in session.saved_keys.items() if v}
    return value


class ShellPage:
    def __init__(self, ctx: AppContext, layout: Layout, chat: ChatPage, books: BooksPage,
                 settings: SettingsPage) -> None:
        self.ctx, self.ui = ctx, layout.shell
        self.chat, self.books, self.settings = chat, books, settings

    def labels(self, lang: str) -> dict[Any, Any]:
        """Every label of the page in ``lang``."""
        v = self.ui
        own = {
            v.header: gr.update(value=header_html(lang)),
            v.lang: gr.update(value=lang, label=t(lang, "language")),
            v.nav: gr.update(value=nav_html(lang)),
            v.tab_trace: gr.update(label=t(lang, "tab_trace")),
            v.tab_sources: gr.update(label=t(lang, "tab_sources")),
            v.tab_books: gr.update(label=t(lang, "tab_books")),
            v.tab_settings: gr.update(label=t(lang, "tab_settings")),
        }
        return {**own, **self.chat.labels(lang), **self.books.labels(lang), **self.settings.labels(lang)}

    def _find(self, session: Session | None, stored: dict[str, Any]) -> Session:
        """This page's session: the one it holds, the one the browser names, or a new one with
        the owner token and settings the browser kept (after a restart: the same books)."""
        if isinstance(session, Session):
            return session
        found = self.ctx.store.get(stored.get("sid"))
        if found is not None:
            orphan_turn_ends(found)
            return found
        session = self.ctx.ensure_session(None)
        session.adopt_owner(stored.get("owner"))
        saved: dict[str, Any] = stored["settings"] if isinstance(stored.get("settings"), dict) else {}
        keys: dict[str, Any] = stored["keys"] if stored.get("remember_keys") and isinstance(stored.get("keys"), dict) else {}
        if saved or keys:
            self.settings.restore(session, saved, keys)
        return session

    def default_book(self, session: Session, current: str | None) -> str | None:
        """The active book a page starts with: the one it shows, else ACTIVE_BOOK (an id or title)."""
        wanted = self.ctx.settings.active_book
        library = self.ctx.library(session)
        if (current and current != ALL_BOOKS) or not wanted or library is None:
            return current
        try:
            found = library.find_book(wanted)
        except Exception as exc:  # noqa: BLE001 - an unknown or unreadable library: every book
            logger.info("ACTIVE_BOOK not found: %s", type(exc).__name__)
            return current
        return str(found.id) if found is not None else current

    def on_load(self, session: Session | None, stored: Any, current_book: str | None,
                accept_language: str = "") -> dict[Any, Any]:
        stored = stored if isinstance(stored, dict) else {}
        session = self._find(session, stored)
        stored_lang = stored.get("lang")
        session.lang = stored_lang if stored_lang in ("zh", "en") else pick_language(
            self.ctx.settings.ui_language, accept_language)
        session.llm_unreachable = self.ctx.model_unreachable(session)
        with session.lock:
            running = session.active is not None
        kept = stored.get("book")
        if (not current_book or current_book == ALL_BOOKS) and isinstance(kept, str) and kept:
            current_book = kept  # the book this browser had picked (outputs() falls back if it is gone)
        return merge(
            {self.ui.session: session, self.ui.browser: browser_value(session, stored.get("remember_keys"), kept),
             self.ui.banner: self.ctx.banner_html(session), **self.settings.status(session)},
            self.chat.panels(session), self.books.outputs(session, self.default_book(session, current_book)),
            self.labels(session.lang), self.settings.fields_of(session, stored), self.chat.buttons(running),
        )

    def on_banner_tick(self, session: Session | None) -> dict[Any, Any]:
        """While the embedded model downloads and loads: the banner again; the timer stops once the
        model is ready or has failed."""
        session = self.ctx.ensure_session(session)
        local = self.ctx.local
        pending = local is not None and not local.state().final
        return {self.ui.banner: self.ctx.banner_html(session), self.ui.banner_timer: gr.Timer(active=pending)}

    def on_language(self, session: Session | None, lang: str, stored: Any, current_book: str | None) -> dict[Any, Any]:
        session = self.ctx.ensure_session(session)
        session.lang = lang if lang in ("zh", "en") else session.lang
        stored = stored if isinstance(stored, dict) else {}
        if session.llm_unreachable:
            session.llm_unreachable = self.ctx.model_unreachable(session)
        return merge({self.ui.session: session, self.ui.browser: {**stored, "sid": session.id, "owner": session.owner,
                                                                       "lang": session.lang},
                      self.ui.banner: self.ctx.banner_html(session), **self.settings.status(session)},
                     self.chat.panels(session), self.books.outputs(session, current_book), self.labels(session.lang),
                     self.books.scope_line(session))

    # Gradio's own strings (the chat's buttons, the upload's hints) follow the page's language: the
    # locale is switched in the browser, then the components that show them are mounted afresh.
    @property
    def remounted(self) -> list[Any]:
        return [self.chat.ui.chatbot, self.books.ui.upload]

    def hide_if(self, lang: str, changed: str) -> list[Any]:
        return [gr.update(visible=False) if changed == "yes" else gr.update() for _ in self.remounted]

    def show_again(self) -> list[Any]:
        return [gr.update(visible=True) for _ in self.remounted]
