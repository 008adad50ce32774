"""The page's parts, one class each (kotaemon's ktem is the model): ``ShellPage`` (header, banner,
language, load and restore), ``ChatPage`` (ask, stream, stop, reset), ``BooksPage`` (upload, list,
pick, delete), ``SettingsPage`` (apply, keep in the browser, reset). Each holds its components
(``rag.ui.layout``) and its handlers are plain methods taking ``(session, ...)``, so a test calls
them with a ``Session`` and fakes; ``rag.ui.blocks`` wires them to the page's events."""

from __future__ import annotations

from rag.ui.layout import ALL_BOOKS, Layout
from rag.ui.pages.base import AppContext
from rag.ui.pages.books import BooksPage
from rag.ui.pages.chat import ChatPage
from rag.ui.pages.settings import SettingsPage
from rag.ui.pages.shell import ShellPage

__all__ = ["ALL_BOOKS", "AppContext", "BooksPage", "ChatPage", "Pages", "SettingsPage", "ShellPage"]


class Pages:
    """The four pages of one app, built on one layout."""

    def __init__(self, ctx: AppContext, layout: Layout) -> None:
        self.ctx, self.layout = ctx, layout
        self.chat = ChatPage(ctx, layout)
        self.books = BooksPage(ctx, layout)
        self.settings = SettingsPage(ctx, layout)
        self.shell = ShellPage(ctx, layout, self.chat, self.books, self.settings)
