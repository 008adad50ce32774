"""Browser sessions: one ``Session`` per conversation, and a bounded store that lets a reload find
its session again (the browser keeps only the session's random id). A turn's events are read in a
``rag.deadline.Pump`` (a worker thread), so that a turn can be stopped at once.

No Gradio import here; ``rag.ui.blocks`` wires these into the page.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from rag.deadline import Pump
from rag.i18n import Msg
from rag.ui.translate import UiState

logger = logging.getLogger(__name__)

#: What an owner token looks like (``Session.owner``); anything else the browser sends is replaced.
OWNER_TOKEN = re.compile(r"[0-9a-f]{32}")
SESSION_TTL_S = 12 * 3600  # an idle session is forgotten after this long
MAX_SESSIONS = 500  # and the least recently used one when there are more


#: Who stopped a turn: the reader (Stop, a reset) or the page going away (closed or reloaded).
StopCause = Literal["user", "page"]


@dataclass
class ActiveTurn:
    """The one turn a session may run at a time. ``cancel`` is set by Stop, a reset or a closed
    page (``stopped_by`` says which); the turn's handler sees it within ``POLL_S`` and ends the
    graph run, and the model call or stream in flight is given up (``rag.deadline``)."""

    question: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    cancel: threading.Event = field(default_factory=threading.Event)
    stopped_by: StopCause = "user"
    asked_at: float = field(default_factory=time.monotonic)
    pump: Pump[Any] | None = None
    started: bool = False  # a handler has taken it up (so a second one does not)


class Session:
    """One browser session. Holds secrets only inside ``deps``; its repr shows none."""

    def __init__(self, lang: str = "zh") -> None:
        self.id = uuid.uuid4().hex
        # Whose books this visitor's are (``Manifest.owners``): a random secret the browser keeps
        # (``gr.BrowserState``), so the books stay theirs when the server restarts and forgets every
        # session. Whoever holds it holds the books: never shown or logged.
        self.owner = secrets.token_hex(16)
        self.thread_id = uuid.uuid4().hex
        self.lang = lang
        self.ui = UiState()
        self.deps: Any | None = None  # None: the server's (built on first use)
        self.deps_generation = 0  # the server's deps generation ``deps`` was built from (AppContext)
        self.graph: Any | None = None
        self.checkpointer: Any | None = None
        self.custom = False  # settings overridden in this session
        self.lock = threading.RLock()
        self.active: ActiveTurn | None = None
        self.last_pump: Pump[Any] | None = None  # the previous turn's run, until it has ended
        self.llm_unreachable: str | None = None  # where the model could not be reached (safe to show)
        self.llm_slow: str | None = None  # where the model answered too slowly, last turn (safe to show)
        self.uploaded: set[str] = set()  # ids of books uploaded in this session (it may delete them)
        self.pending_delete: str | None = None  # a book id awaiting the second click
        # Status lines kept as messages, so a language switch re-renders them.
        self.settings_status: Msg | None = None
        self.books_message: Msg | None = None
        self.scope_status: Msg | None = None  # what the scope panel's Apply said
        self.book: str | None = None  # the active book the page shows last (its chapter word, its example)
        self.saved: dict[str, Any] = {}  # the settings the browser remembers (no keys unless opted in)
        self.saved_keys: dict[str, str] = {}  # the keys typed in, for the browser only if the user opts in
        self.upload_cancel = threading.Event()  # set by "cancel the upload"
        self.sent: dict[int, Any] = {}  # what the page was last sent of each panel (by component id)
        self.last_seen = time.monotonic()

    def adopt_owner(self, token: object) -> bool:
        """Take the owner token a browser kept (its books from before a restart); False if it is not one."""
        if isinstance(token, str) and OWNER_TOKEN.fullmatch(token):
            self.owner = token
            return True
        return False

    def __repr__(self) -> str:  # never leak settings (keys) or the owner token into logs
        return f"Session(id={self.id[:8]}, turns={len(self.ui.turns)}, custom={self.custom})"

    def __deepcopy__(self, memo: dict[int, Any]) -> Session:
        return self  # graph and clients are not copyable; a session is never shared anyway

    # ------------------------------------------------------------------ one turn at a time
    def begin(self, question: str) -> ActiveTurn | None:
        """Claim the session for one turn; None while another turn is queued or running."""
        with self.lock:
            if self.active is not None:
                return None
            self.active = ActiveTurn(question)
            return self.active

    def is_current(self, turn: ActiveTurn) -> bool:
        with self.lock:
            return self.active is turn

    def end(self, turn: ActiveTurn) -> None:
        """Release the session if ``turn`` still holds it."""
        with self.lock:
            if self.active is turn:
                self.active = None
            if turn.pump is not None:
                self.last_pump = turn.pump

    def stop(self, by: StopCause = "user") -> ActiveTurn | None:
        """Ask the running turn to stop (its graph run ends at its next event, its model call at
        once); returns it. ``by``: who stopped it (the first cause is kept)."""
        with self.lock:
            turn = self.active
            if turn is not None:
                if not turn.cancel.is_set():
                    turn.stopped_by = by
                turn.cancel.set()
                if turn.pump is not None:
                    turn.pump.stop()
            return turn

    def wait_for_previous(self, timeout: float) -> bool:
        """Wait until the previous (stopped) turn's graph run has ended: two runs must not write
        the same conversation thread at once. True when it has (or there was none)."""
        pump = self.last_pump
        if pump is None:
            return True
        ended = pump.join(timeout)
        if ended:
            self.last_pump = None
        return ended

    def new_conversation(self) -> None:
        """Forget the conversation: chat, trace and the graph's memory (a new thread)."""
        with self.lock:
            self.stop()
            self.active = None
            self.thread_id = uuid.uuid4().hex
            self.ui = UiState()


class SessionStore:
    """Sessions by id, so a reloaded page finds its own again. Bounded (``max_sessions``, least
    recently used first) and forgetful (``ttl_s`` of idleness); a busy session is never dropped."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, ttl_s: float = SESSION_TTL_S,
                 clock: Any = time.monotonic) -> None:
        self.max_sessions, self.ttl_s, self.clock = max_sessions, ttl_s, clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._pages: OrderedDict[str, Session] = OrderedDict()  # an open page (Gradio's session hash): its session
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: object) -> Session | None:
        if not isinstance(session_id, str) or not session_id:
            return None
        with self._lock:
            self._expire()
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_seen = self.clock()
                self._sessions.move_to_end(session_id)
            return session

    def add(self, session: Session) -> Session:
        with self._lock:
            session.last_seen = self.clock()
            self._sessions[session.id] = session
            self._sessions.move_to_end(session.id)
            self._expire()
            idle = [sid for sid, s in self._sessions.items() if s.active is None and sid != session.id]
            while len(self._sessions) > self.max_sessions and idle:
                self._sessions.pop(idle.pop(0), None)
            return session

    def attach_page(self, page: object, session: Session) -> None:
        """``page`` (a browser page's Gradio session hash) runs turns of ``session``: when it closes
        (``page_closed``), the turn it runs is stopped. Bounded like the sessions."""
        if not isinstance(page, str) or not page:
            return
        with self._lock:
            self._pages[page] = session
            self._pages.move_to_end(page)
            while len(self._pages) > 4 * self.max_sessions:
                self._pages.popitem(last=False)

    def page_closed(self, page: object) -> Session | None:
        """``page`` was closed (or reloaded): the turn its session runs is stopped, as the page's
        (``stopped_by`` "page"); the session, or None for a page that ran no turn."""
        with self._lock:
            session = self._pages.pop(page, None) if isinstance(page, str) else None
        if session is not None:
            session.stop(by="page")
        return session

    def _expire(self) -> None:
        now = self.clock()
        for sid in [sid for sid, s in self._sessions.items() if now - s.last_seen > self.ttl_s and s.active is None]:
            self._sessions.pop(sid, None)
