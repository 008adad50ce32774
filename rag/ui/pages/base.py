"""What every page shares: ``AppContext`` (the server's deps and index, the session store, the graph
factory, the probe cache) and the helpers that render a session's banner and status lines.

No page holds state of its own: everything of a visitor lives in their ``Session``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rag.agent.deps import Deps
from rag.i18n import Msg, t, text
from rag.ui.bookfacts import BookFacts, BookFactsCache
from rag.ui.layout import ALL_BOOKS
from rag.ui.probe import ProbeCache, display_url, llm_endpoint
from rag.ui.render import Banner, esc, render_banner
from rag.ui.session import Session, SessionStore

if TYPE_CHECKING:  # pragma: no cover
    from rag.index.catalog import BookInfo

logger = logging.getLogger(__name__)

GraphFactory = Callable[..., Any]
MakeDeps = Callable[..., Deps]
_ICONS = {"info": "ℹ️", "warning": "⚠️", "error": "⚠️"}
#: Status lines that say an action was done (shown with ✅).
DONE_CODES = frozenset({"settings_applied", "settings_reset", "settings_restored"})


class Library(Protocol):
    """The book index as the UI uses it (``rag.index``'s ``BookIndex`` and its owner views)."""

    def for_owner(self, owner: str | None) -> Library: ...
    def books(self) -> Sequence[BookInfo]: ...
    def book(self, book_id: str) -> BookInfo: ...
    def find_book(self, name_or_id: str) -> BookInfo | None: ...
    def ingest(self, path: str, *, progress: Any = None, background: bool = False) -> BookInfo: ...
    def delete_book(self, book_id: str) -> None: ...
    def release(self, book_id: str) -> bool: ...


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


def show(msg: Msg | None, lang: str, *, icon: bool = True) -> str:
    """A status line (a ``Msg``) in ``lang``: with ``icon``, marked by its level (✅ for a done
    action) and escaped for Markdown; without, plain text (the book list escapes it). A plain
    string param (an error's own text) is shown as written."""
    if msg is None:
        return ""
    body = text(lang, msg)
    if not icon:
        return body
    mark = "✅" if msg.code in DONE_CODES else _ICONS.get(msg.level, "")
    return f"{mark} {esc(body)}"


def mode_of(deps: Deps | None) -> dict[str, Any]:
    """What the banner says of ``deps``: the model, whether one is connected, the web provider."""
    if deps is None:
        return {"llm_model": None, "llm_connected": False, "web_provider": None}
    settings = deps.settings
    # The model's name: the setting, else what the chat model calls itself (langchain's chat models
    # name it ``model_name`` or ``model``; a fake may have neither).
    model = settings.llm_model or getattr(deps.llm, "model_name", None) or getattr(deps.llm, "model", None)
    web = None
    if deps.web_enabled:
        # A search client may name itself (``rag.search`` chains do); a test fake may not.
        web = getattr(deps.web_search, "name", None) or settings.search_provider
    return {"llm_model": str(model) if model else None, "llm_connected": deps.llm is not None, "web_provider": web}


def per_session_deps(deps: Deps, owner: str | None = None, visitor: str | None = None) -> Deps:
    """A copy of ``deps`` whose web search counts against ``visitor``'s budget (a session's id, or
    the script API's; None: a budget of its own), and whose book index is the one ``owner`` sees
    (``SHARED_LIBRARY=false``; None: the whole library)."""
    changes: dict[str, Any] = {}
    # Only the book index's retriever has owner views; a plain retriever (a fake, a test's) has none.
    view = getattr(deps.retriever, "for_owner", None)
    if owner is not None and callable(view):
        retriever = view(owner)
        if retriever is not deps.retriever:
            changes["retriever"] = retriever
    search = session_search(deps, visitor)
    if search is not deps.web_search:
        changes["web_search"] = search
    return dataclasses.replace(deps, **changes) if changes else deps


def session_search(deps: Deps, visitor: str | None = None) -> Any | None:
    """``deps``' web search, counted against ``visitor``'s budget and the server's hourly one."""
    from rag.search import SessionSearch

    ws = deps.web_search
    if ws is None:
        return None
    if isinstance(ws, SessionSearch):
        return ws
    return SessionSearch(ws, budget=deps.settings.search_budget, visitor=visitor,
                         per_hour=deps.settings.search_server_per_hour)


def _embedded_model(settings: Any) -> Any:
    from rag.local import LocalModel

    return LocalModel(settings)


@dataclass
class AppContext:
    """The server side every page reads: default deps, the book index, the session store."""

    deps: Deps
    index: Library | None = None
    make_deps: MakeDeps | None = None
    graph_factory: GraphFactory | None = None
    store: SessionStore = field(default_factory=SessionStore)
    probes: ProbeCache = field(default_factory=ProbeCache)
    data_dir: Path | None = None
    # The embedded model (``rag.local.LocalModel``) while it downloads and loads; the server's deps
    # get it once it is ready (``use_model``), and the sessions on the server's deps follow.
    local: Any | None = None
    make_local: Callable[[Any], Any] | None = None  # the embedded model for settings (tests inject a fake)
    generation: int = 0  # bumped each time the server's deps change
    facts: BookFactsCache = field(default_factory=BookFactsCache)

    def use_model(self, llm: Any) -> None:
        """The server's deps now answer with ``llm`` (the embedded model, once it is ready);
        sessions on the server's deps take them at their next turn, conversations kept."""
        if self.make_deps is not None:
            deps = self.make_deps(self.settings, index=self.index, llm=llm, web_search=self.deps.web_search)
        else:
            deps = dataclasses.replace(self.deps, llm=llm)
        self.deps = deps
        self.generation += 1
        logger.info("answering with the embedded model from now on")

    def use_local_file(self, path: Path) -> Any:
        """From now on the server answers with the GGUF file at ``path`` (LOCAL_MODEL_PATH, set on
        the page where its user runs the server): the embedded model is loaded from it in the
        background; the model in use until then keeps answering, and is closed once the new one is
        ready. Returns the new embedded model (its state drives the banner)."""
        settings = self.settings.model_copy(update={"local_model_path": str(path)})
        self.deps = dataclasses.replace(self.deps, settings=settings)
        old, new = self.local, (self.make_local or _embedded_model)(settings)
        self.local = new

        def ready(llm: Any) -> None:
            self.use_model(llm)
            if old is not None and old is not new:
                old.close()

        new.start(on_ready=ready)
        return new

    def current_deps(self, session: Session) -> Deps:
        """The deps a session answers with: its own (custom settings), else the server's (rebuilt
        for it when the server's changed)."""
        with session.lock:
            if not session.custom and session.deps is not None and session.deps_generation != self.generation:
                session.deps, session.graph = None, None  # the checkpointer (the conversation) stays
            if session.deps is None:
                session.deps = self.session_deps(self.deps, session)
                session.deps_generation = self.generation
            return session.deps

    @property
    def settings(self) -> Any:
        return self.deps.settings

    @property
    def default_lang(self) -> str:
        lang = self.settings.ui_language
        return lang if lang in ("zh", "en") else "zh"

    @property
    def endpoints_allowed(self) -> bool:
        return bool(self.settings.allow_session_endpoints)

    @property
    def shared_library(self) -> bool:
        """SHARED_LIBRARY (on a public Space, false): whose books a session sees and uploads."""
        return bool(self.settings.shared_library)

    # ------------------------------------------------------------------ sessions
    def ensure_session(self, session: Session | None) -> Session:
        if isinstance(session, Session):
            return session
        return self.store.add(Session(lang=self.default_lang))

    def owner_of(self, session: Session) -> str | None:
        """Whose books a session sees and uploads: its owner token's (with the shared ones) unless the
        library is shared. The token, not the session id: the browser keeps it across restarts."""
        return None if self.shared_library else session.owner

    def library(self, session: Session) -> Library | None:
        """The book index as this session sees it."""
        return None if self.index is None else self.index.for_owner(self.owner_of(session))

    def book_facts(self, session: Session, book: str | None = None,
                   books: Sequence[BookInfo] | None = None) -> BookFacts | None:
        """What the page says about the book questions go to: ``book`` (default: the one the page
        shows), or with every book picked, the only one there is. ``books``: the list, if known."""
        library = self.library(session)
        book = book if book is not None else session.book
        if library is None:
            return None
        if not book or book == ALL_BOOKS:
            try:
                listed = list(books if books is not None else library.books())
            except Exception as exc:  # noqa: BLE001 - no list: the page's own words
                logger.info("listing books failed: %s", type(exc).__name__)
                return None
            book = str(listed[0].id) if len(listed) == 1 else None
        return self.facts.get(library, book)

    def session_deps(self, deps: Deps, session: Session) -> Deps:
        return per_session_deps(deps, self.owner_of(session), visitor=f"session-{session.id}")

    def make_graph(self, session_deps: Deps, checkpointer: Any) -> Any:
        if self.graph_factory is not None:
            return self.graph_factory(session_deps, checkpointer=checkpointer)
        from rag.agent.graph import build_graph

        return build_graph(session_deps, checkpointer=checkpointer)

    def ensure_graph(self, session: Session) -> Any:
        with session.lock:
            deps = self.current_deps(session)  # a new graph when the server's deps changed
            if session.graph is None:
                from rag.agent.graph import make_checkpointer

                if session.checkpointer is None:
                    session.checkpointer = make_checkpointer()
                session.graph = self.make_graph(deps, session.checkpointer)
            return session.graph

    # ------------------------------------------------------------------ the model's endpoint
    def model_where(self, session: Session, base: str) -> str:
        """How the page names the session's model endpoint: a URL the visitor typed, never the server's."""
        current = session.deps or self.deps
        own = (session.custom and bool(current.settings.llm_base_url)
               and current.settings.llm_base_url != self.settings.llm_base_url)
        return display_url(base) if own else t(session.lang, "server_endpoint")

    def model_unreachable(self, session: Session) -> str | None:
        """Where the session's model cannot be reached, from a (cached) probe of its endpoint."""
        endpoint = llm_endpoint((session.deps or self.deps).llm)
        if endpoint is None:
            return None
        base, key = endpoint
        where = self.model_where(session, base)
        return None if self.probes.probe(base, key, where).reachable else where

    def local_state(self, session: Session) -> Any | None:
        """The embedded model's state when the session waits for it (no model of its own yet)."""
        if self.local is None or session.custom:
            return None
        return self.local.state()

    def banner_html(self, session: Session) -> str:
        mode = mode_of(session.deps if session.custom and session.deps is not None else self.deps)
        return render_banner(Banner(**mode, custom=session.custom, llm_unreachable=session.llm_unreachable,
                                    llm_slow=session.llm_slow, local=self.local_state(session)), session.lang)
