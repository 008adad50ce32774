"""The chat page: take a question (submit), run its turn and stream the panels (ask), Stop, a new
conversation, the demo question. Handlers take ``(session, ...)`` and return component updates."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import gradio as gr

from rag.agent.events import Progress, Token, run_turn
from rag.agent.nodes.common import MODEL_UNREACHABLE_CODES
from rag.agent.state import Notice
from rag.deadline import END, TIMEOUT, Pump
from rag.errors import QuestionTooLong, RagError, check_question
from rag.i18n import Msg, codes, t, with_params
from rag.scope import ScopeInvalid, parse_scope
from rag.ui.layout import ALL_BOOKS, ChatView, Layout
from rag.ui.pages.base import AppContext
from rag.ui.probe import llm_endpoint
from rag.ui.render import chat_messages, evaluations_json, render_sources, render_trace
from rag.ui.session import ActiveTurn, Session
from rag.ui.translate import apply_event, fail_turn, start_turn, stop_turn

logger = logging.getLogger(__name__)

STREAM_MIN_INTERVAL_S = 0.05  # coalesce token updates to at most ~20 page updates a second
POLL_S = 0.1  # how often a running turn looks for Stop


class ChatPage:
    def __init__(self, ctx: AppContext, layout: Layout) -> None:
        self.ctx, self.ui, self.shell = ctx, layout.chat, layout.shell

    @property
    def view(self) -> ChatView:
        return self.ui

    # ------------------------------------------------------------------ what the page shows
    def panels(self, session: Session, changed_only: bool = False) -> dict[Any, Any]:
        """The chat, trace and sources as the session's state renders them. ``changed_only``
        (while a turn streams): only those that differ from what this page was last sent."""
        lang = session.lang
        with session.lock:
            ui = session.ui
        rendered = {
            self.ui.chatbot: chat_messages(ui, lang),
            self.ui.trace: render_trace(ui.current, lang),
            self.ui.sources: render_sources(ui, lang),
            self.ui.preview_store: render_sources(ui, lang, anchors=False),
            self.ui.eval_json: evaluations_json(ui.current),
        }
        sent = session.sent
        if changed_only:
            rendered = {c: v for c, v in rendered.items() if sent.get(c._id) != v}
        sent.update({c._id: v for c, v in rendered.items()})
        return rendered

    def buttons(self, running: bool) -> dict[Any, Any]:
        return {self.ui.send: gr.update(visible=not running), self.ui.stop: gr.update(visible=running)}

    def labels(self, lang: str) -> dict[Any, Any]:
        v = self.ui
        return {
            v.chatbot: gr.update(label=t(lang, "chat")),
            v.question: gr.update(label=t(lang, "question"), placeholder=t(lang, "question_placeholder")),
            v.send: gr.update(value=t(lang, "send")),
            v.stop: gr.update(value=t(lang, "stop")),
            v.new_chat: gr.update(value=t(lang, "new_conversation")),
            v.eval_acc: gr.update(label=t(lang, "evaluations_json")),
        }

    # ------------------------------------------------------------------ handlers
    def on_submit(self, session: Session | None, text: str) -> dict[Any, Any]:
        """Takes the question at once (no queue): the turn shows as queued until it gets a slot."""
        session = self.ctx.ensure_session(session)
        text = (text or "").strip()
        if not text:
            gr.Warning(t(session.lang, "empty_question"))
            return {self.shell.session: session}
        try:  # refused at once: a huge question would be embedded and sent to the model
            check_question(text, self.ctx.settings.max_question_chars)
        except QuestionTooLong as exc:
            gr.Warning(exc.msg.text(session.lang))
            return {self.shell.session: session}  # the box keeps the text, to be shortened
        if session.begin(text) is None:
            gr.Warning(t(session.lang, "busy"))
            return {self.shell.session: session}
        with session.lock:
            session.ui = start_turn(session.ui, text, queued=True)
        return {self.shell.session: session, self.ui.question: "", **self.panels(session), **self.buttons(True)}

    def on_ask(self, session: Session | None, book: str | None, ch_from: Any, ch_to: Any, read_to: Any,
               spoilers: bool, request: gr.Request | None = None) -> Iterator[dict[Any, Any]]:
        """Runs the turn on_submit took; streams the panels; ends with the buttons and banner. The
        page that asked (``request``) stops the turn when it closes (``on_page_closed``)."""
        session = self.ctx.ensure_session(session)
        self.ctx.store.attach_page(getattr(request, "session_hash", None), session)
        with session.lock:
            turn = session.active
            fresh = turn is not None and turn.pump is None and not turn.started
            if fresh and turn is not None:
                turn.started = True
        if not fresh or turn is None:  # the question was refused (empty, or another turn runs)
            yield {self.shell.banner: gr.update()}  # a generator that yields nothing would blank its outputs
            return
        started = time.monotonic()
        try:
            yield from self._run_events(session, turn, book, ch_from, ch_to, read_to, spoilers)
        except GeneratorExit:  # Gradio closes the handler of a page that went away
            session.stop(by="page")
            raise
        finally:
            if turn.pump is not None:
                turn.pump.stop()
            turn.cancel.set()  # however the handler ends, the model call in flight is given up
            with session.lock:
                current = session.active is turn
                if current and session.ui.busy:  # Stop, or the page went away: the run has ended
                    session.ui = stop_turn(session.ui, time.monotonic() - started, by=turn.stopped_by)
            session.end(turn)
        if not current:  # a reset took the session over: its page is already up to date
            yield {self.shell.banner: gr.update()}
            return
        self.note_reachability(session)
        yield {**self.panels(session), **self.buttons(False), self.shell.banner: self.ctx.banner_html(session)}

    def _run_events(self, session: Session, turn: ActiveTurn, book: str | None, ch_from: Any, ch_to: Any,
                    read_to: Any, spoilers: bool) -> Iterator[dict[Any, Any]]:
        """Run the turn's graph in a pump and apply its events; ends early on Stop or a reset."""
        if not turn.cancel.is_set():
            session.wait_for_previous(timeout=float(self.ctx.settings.llm_timeout) + 10)
        if turn.cancel.is_set() or not session.is_current(turn):
            return
        try:
            scope = parse_scope(ch_from, ch_to, read_to, allow_web_spoilers=spoilers)
            graph = self.ctx.ensure_graph(session)
        except ScopeInvalid as exc:
            facts = self.ctx.book_facts(session, book)  # the field's name in the book's own word
            msg = with_params(exc.msg, unit=facts.unit(session.lang)) if facts is not None else exc.msg
            with session.lock:
                session.ui = fail_turn(session.ui, msg)
            return
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
        events = run_turn(graph, turn.question, thread_id=session.thread_id, book_id=book_id, scope=scope,
                          cancel=turn.cancel)
        pump = turn.pump = Pump(events, name=f"turn-{session.id[:8]}")
        last, pending = 0.0, False
        while True:
            try:
                event = pump.get(POLL_S)
            except Exception:  # noqa: BLE001 - run_turn never raises; this is a safety net
                logger.exception("a turn's event stream failed")
                return
            if turn.cancel.is_set() or not session.is_current(turn) or event is END:
                return
            if event is TIMEOUT:
                if pending:
                    last, pending = time.monotonic(), False
                    yield self.panels(session, changed_only=True)
                continue
            with session.lock:
                if turn.cancel.is_set():
                    return
                session.ui = apply_event(session.ui, event)
            now = time.monotonic()
            if isinstance(event, (Token, Progress)) and now - last < STREAM_MIN_INTERVAL_S:
                pending = True
                continue
            last, pending = now, False
            update = self.panels(session, changed_only=True)
            if update:
                yield update

    def on_ask_failed(self, session: Session | None) -> dict[Any, Any]:
        """The ask event failed before or around its handler (Gradio refused an input, the handler
        raised): a turn still queued or running ends with a message, never stays "queued"."""
        if not isinstance(session, Session):
            return self.buttons(False)
        with session.lock:
            turn = session.active
            unran = turn is not None and turn.pump is None  # on_ask never ran it
            if unran or (turn is None and session.ui.busy):
                session.ui = fail_turn(session.ui, Msg.of("turn_failed", level="error"))
        if unran and turn is not None:
            session.end(turn)
        return {**self.panels(session), **self.buttons(False)}

    def note_reachability(self, session: Session) -> None:
        """After a turn: whether its model calls reached the model, or it answered too slowly (the
        banner says which: a slow model is not an unreachable one)."""
        turn = session.ui.current
        current = session.deps or self.ctx.deps
        if turn is None or current.llm is None:
            return
        failed = [n for n in turn.notices if _unreachable(n)]
        if failed:
            endpoint = llm_endpoint(current.llm)
            where = self.ctx.model_where(session, endpoint[0] if endpoint else "")
            if all(codes(n.get("msg")) & SLOW_CODES for n in failed):
                session.llm_slow, session.llm_unreachable = where, None
            else:
                session.llm_slow, session.llm_unreachable = None, where
        elif turn.status == "done" and turn.evaluations:
            session.llm_unreachable = session.llm_slow = None

    def on_stop(self, session: Session | None) -> dict[Any, Any]:
        session = self.ctx.ensure_session(session)
        with session.lock:
            turn = session.stop()
            if turn is not None:
                session.ui = stop_turn(session.ui, time.monotonic() - turn.asked_at)
                if turn.pump is None:  # still queued: nothing runs yet, release the session now
                    session.end(turn)
        return {**self.panels(session), **self.buttons(False)}

    def on_page_closed(self, request: gr.Request) -> None:
        """A page was closed (Gradio's ``unload``): the turn it runs is stopped, its model call given
        up; the turn shows as ended by the closed page, not by the reader, when the page comes back."""
        session = self.ctx.store.page_closed(getattr(request, "session_hash", None))
        if session is not None:
            logger.info("a page closed: its turn (if any) is stopped")

    def on_reset(self, session: Session | None) -> dict[Any, Any]:
        """One reset: the chat, the trace and the graph's memory of the conversation."""
        session = self.ctx.ensure_session(session)
        session.new_conversation()
        return {self.shell.session: session, **self.panels(session), **self.buttons(False)}

    def on_demo(self, session: Session | None, book: str | None = None) -> str:
        """The example question: about the active book (``book``), in the page's language."""
        if not isinstance(session, Session):
            return t(self.ctx.default_lang, "demo_question")
        facts = self.ctx.book_facts(session, book)
        return facts.example(session.lang) if facts is not None else t(session.lang, "demo_question")


#: The codes that say a model call ran out of time (the model is there, but slow).
SLOW_CODES = frozenset({"llm.no_answer_in_time", "llm.out_of_time"})


def _unreachable(notice: Notice) -> bool:
    """Whether a notice says the model could not be reached (by its codes, nested ones too)."""
    return bool(codes(notice.get("msg")) & MODEL_UNREACHABLE_CODES)
