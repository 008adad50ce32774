"""The books page: upload (with progress, and cancel), the list with its embedding progress (a
timer ticks while a book is embedded), pick the active book, delete a book this session uploaded
(two clicks). Handlers take ``(session, ...)`` and return component updates."""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr

from rag.errors import RagError
from rag.i18n import Msg, t, with_params
from rag.scope import ScopeInvalid, parse_scope, scope_summary
from rag.ui.bookfacts import BookFacts
from rag.ui.layout import ALL_BOOKS, Layout
from rag.ui.pages.base import AppContext, show
from rag.ui.render import render_books
from rag.ui.session import Session

if TYPE_CHECKING:  # pragma: no cover - the index package is imported only where a book index is used
    from rag.index.catalog import BookInfo

logger = logging.getLogger(__name__)

_PENDING = {"keyword_ready", "embedding"}  # book states that still change (the timer ticks)


class EtaTracker:
    """Time left for books being embedded, from the measured throughput, smoothed: each time a
    book's count grows, the chunks per second since its last growth update a moving average
    (weight ``alpha``), so one fast or slow batch moves the estimate a little, not from 25 to 700
    minutes. A count that falls (the book was embedded afresh) starts over."""

    def __init__(self, alpha: float = 0.3, clock: Callable[[], float] = time.monotonic) -> None:
        self.alpha, self.clock = alpha, clock
        self._last: dict[str, tuple[float, int, float | None]] = {}  # book -> (when, embedded, rate)
        self._lock = threading.Lock()

    def observe(self, book_id: str, embedded: int, chunks: int, embedding: bool) -> float | None:
        """Record the book's progress; seconds left, or None while there is no rate yet."""
        with self._lock:
            if not embedding:
                self._last.pop(book_id, None)
                return None
            now = self.clock()
            seen = self._last.get(book_id)
            if seen is None or embedded < seen[1]:
                self._last[book_id] = (now, embedded, None)
                return None
            at, before, rate = seen
            if embedded > before and now > at:
                measured = (embedded - before) / (now - at)
                rate = measured if rate is None else self.alpha * measured + (1 - self.alpha) * rate
                self._last[book_id] = (now, embedded, rate)
            return max(0.0, (chunks - embedded) / rate) if rate else None


def eta_seconds(samples: list[tuple[float, int]], chunks: int) -> float | None:
    """Seconds until ``chunks`` are embedded at the rate between the first and last sample."""
    if len(samples) < 2:
        return None
    (t0, e0), (t1, e1) = samples[0], samples[-1]
    if t1 <= t0 or e1 <= e0:
        return None
    return max(0.0, (chunks - e1) / ((e1 - e0) / (t1 - t0)))


def book_choices(books: list[BookInfo] | None, lang: str) -> list[tuple[str, str]]:
    """The active-book choices: every book, then each book by title."""
    return [(t(lang, "all_books"), ALL_BOOKS), *((str(b.title or b.id), str(b.id)) for b in books or [] if b.id)]


def stage_text(lang: str, stage: str, done: int, total: int) -> str:
    """The upload's progress line: the stage in words, and once the keyword index is built, that
    the book can be asked about already while its vectors are computed."""
    if stage == "keyword" and total and done >= total:
        return t(lang, "stage_keyword_done")
    if stage == "embedding":
        return f"{t(lang, 'stage_keyword_done')} · {t(lang, 'stage_embedding')}"
    key = f"stage_{stage}"
    text = t(lang, key)
    return text if text != key else stage


def vectors_done(msg: Msg | None, books: list[BookInfo] | None) -> Msg | None:
    """The upload's line ("indexed: ... vectors are computed in the background") once that book's
    vectors are done: it says so instead (the page's timer brings the list until then)."""
    if msg is None or msg.code != "indexed" or books is None:
        return msg
    book = msg.params.get("book")
    if any(b.id == book and b.status == "ready" for b in books):
        return Msg.of("indexed_ready", level=msg.level, **msg.params)
    return msg


def discard_upload(path: str | None) -> None:
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


def private_copy(path: str | None) -> str | None:
    """A copy of an uploaded file in a folder of its own (same file name), or None if it cannot be made."""
    if not path or not Path(path).is_file():
        return None
    folder = Path(tempfile.mkdtemp(prefix="rag-upload-"))
    try:
        return str(shutil.copy2(path, folder / Path(path).name))
    except OSError as exc:
        logger.warning("could not copy the upload %s: %s", Path(path).name, exc.strerror or exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None


#: How long an upload stays in Gradio's cache after the last handler that read it: another visitor's
#: identical upload (the same path) may still wait in the ingest queue. Gradio's hourly sweep
#: (``rag.ui.serve.UPLOAD_CACHE_SECONDS``) takes whatever is left.
UPLOAD_GRACE_SECONDS = 900.0


class UploadLeases:
    """Gradio's uploads that ingest handlers read. Gradio gives identical uploads one path and runs
    the ingest handlers one after another, so a second visitor's handler may start only after the
    first has finished: an upload is deleted only once no handler has held it for ``grace`` seconds
    and Gradio has not written it again since (a new upload of the same file)."""

    def __init__(self, grace: float = UPLOAD_GRACE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.grace, self.clock = grace, clock
        self._held: dict[str, int] = {}
        self._released: dict[str, tuple[float, float]] = {}  # path -> (clock, wall time) of the last release
        self._lock = threading.Lock()

    def hold(self, path: str) -> None:
        with self._lock:
            self._held[path] = self._held.get(path, 0) + 1
            self._released.pop(path, None)

    def release(self, path: str) -> None:
        with self._lock:
            left = self._held.get(path, 1) - 1
            if left > 0:
                self._held[path] = left
            else:
                self._held.pop(path, None)
                self._released[path] = (self.clock(), time.time())
        self.sweep()

    def sweep(self) -> None:
        """Delete the uploads whose grace has passed."""
        now = self.clock()
        with self._lock:
            due = [p for p, (at, _) in self._released.items() if now - at >= self.grace]
            for path in due:
                _, wall = self._released.pop(path)
                try:
                    rewritten = Path(path).stat().st_ctime > wall
                except OSError:
                    continue  # gone already
                if rewritten:  # uploaded again since: its own handler is on the way
                    self._released[path] = (now, time.time())
                else:
                    discard_upload(path)


def owns(library: Any, book_id: str) -> bool:
    """Whether the visitor whose view ``library`` is owns the book (uploaded it in an earlier
    session, before a restart: their browser kept the owner token)."""
    check = getattr(library, "owns", None)
    return bool(callable(check) and check(book_id))


def _failure(exc: Exception) -> Msg:
    """The book list's line for a failed ingest or delete: the error's own message, or (an
    unexpected error) its type and text."""
    message: Msg | str = exc.msg if isinstance(exc, RagError) else f"{type(exc).__name__}: {exc}"
    return Msg.of("index_failed", level="error", message=message)


class BooksPage:
    def __init__(self, ctx: AppContext, layout: Layout) -> None:
        self.ctx, self.ui, self.shell = ctx, layout.books, layout.shell
        self.etas = EtaTracker()
        self.uploads = UploadLeases()

    # ------------------------------------------------------------------ what the page shows
    def list_books(self, session: Session) -> list[BookInfo] | None:
        library = self.ctx.library(session)
        if library is None:
            return None
        try:
            return list(library.books())
        except Exception as exc:  # noqa: BLE001 - the panel shows the problem instead of crashing
            logger.warning("listing books failed: %s", exc)
            return []

    def outputs(self, session: Session, current: str | None) -> dict[Any, Any]:
        """The book list, the active-book choices and whether the timer ticks."""
        books = self.list_books(session)
        choices = book_choices(books, session.lang)
        values = {value for _, value in choices}
        pending = any(b.status in _PENDING for b in books or [])
        left: dict[str, float] = {}
        for b in books or []:
            eta = self.etas.observe(b.id, int(b.embedded or 0), int(b.chunks or 0), embedding=b.status == "embedding")
            if eta is not None:
                left[str(b.id)] = eta
        msg = session.books_message = vectors_done(session.books_message, books)
        if msg is not None and isinstance(msg.params.get("book"), str):  # "indexed": in that book's word
            indexed = self.ctx.book_facts(session, str(msg.params["book"]))
            msg = with_params(msg, unit=indexed.unit(session.lang)) if indexed else msg
        active = current if current in values else ALL_BOOKS
        session.book = active
        return {
            self.ui.books_html: render_books(books, session.lang, show(msg, session.lang, icon=False),
                                             msg.level if msg else "info", etas=left),
            self.ui.active_book: gr.update(choices=choices, value=active, label=t(session.lang, "active_book")),
            self.ui.timer: gr.Timer(active=pending),
            **self.book_labels(session, self.ctx.book_facts(session, active, books)),
        }

    def book_labels(self, session: Session, facts: BookFacts | None) -> dict[Any, Any]:
        """The labels that count chapters, in the active book's own word (回, 章, Chapter...), and
        the example question, about that book."""
        lang, v = session.lang, self.ui
        unit = facts.unit(lang) if facts is not None else t(lang, "param.unit")
        example = facts.example(lang) if facts is not None else t(lang, "demo_question")
        return {
            v.chapter_from: gr.update(label=t(lang, "chapter_from", unit=unit), placeholder=t(lang, "scope_placeholder")),
            v.chapter_to: gr.update(label=t(lang, "chapter_to", unit=unit), placeholder=t(lang, "scope_placeholder")),
            v.read_up_to: gr.update(label=t(lang, "read_up_to", unit=unit), placeholder=t(lang, "scope_no_limit")),
            v.demo_btn: gr.update(value=f"💡 {example}"),
        }

    def labels(self, lang: str) -> dict[Any, Any]:
        """The page's fixed labels (those that count chapters follow the active book: ``outputs``)."""
        v = self.ui
        return {
            v.upload: gr.update(label=t(lang, "upload")),
            v.upload_cancel: gr.update(value=t(lang, "upload_cancel")),
            v.scope_acc: gr.update(label=t(lang, "scope_title")),
            v.scope_note: gr.update(value=t(lang, "scope_note")),
            v.allow_spoilers: gr.update(label=t(lang, "allow_web_spoilers")),
            v.scope_apply: gr.update(value=t(lang, "scope_apply")),
            v.delete_btn: gr.update(value=t(lang, "delete_book")),
        }

    # ------------------------------------------------------------------ handlers
    def on_upload(self, session: Session | None, path: str | None, current_book: str | None,
                  progress: Any = None) -> dict[Any, Any]:
        """Index an uploaded file, from a copy of this call's own. Gradio keeps identical uploads at
        one path, and another visitor's handler for it may still be queued: the upload is deleted
        later, once no handler has needed it for a while (``UploadLeases``), ingested or not."""
        session = self.ctx.ensure_session(session)  # kept (an output): the book may be this session's own
        if path:
            self.uploads.hold(path)
        copy = private_copy(path)
        try:
            return {self.shell.session: session, **self._ingest(session, copy or path, current_book, progress)}
        finally:
            if copy:
                shutil.rmtree(Path(copy).parent, ignore_errors=True)
            if path:
                self.uploads.release(path)

    def _ingest(self, session: Session, path: str | None, current_book: str | None, progress: Any) -> dict[Any, Any]:
        try:
            return self._ingest_unless_cancelled(session, path, current_book, progress)
        finally:
            session.upload_cancel = threading.Event()  # a click is for one upload, not the next

    def _ingest_unless_cancelled(self, session: Session, path: str | None, current_book: str | None,
                                 progress: Any) -> dict[Any, Any]:
        library = self.ctx.library(session)
        if not path:
            return {self.ui.upload: gr.update(), **self.outputs(session, current_book)}
        if session.upload_cancel.is_set():  # Cancel was pressed while the upload waited in the queue
            session.books_message = Msg.of("upload_cancelled")
            return {self.ui.upload: None, **self.outputs(session, current_book)}
        if library is None:
            session.books_message = Msg.of("no_index", level="error")
            return {self.ui.upload: None, **self.outputs(session, current_book)}
        live, lang = threading.Event(), session.lang
        live.set()

        def report(stage: str, done: int, total: int, message: str = "") -> None:
            if live.is_set() and progress is not None:
                with contextlib.suppress(Exception):  # progress is cosmetic
                    progress((done / total) if total else None, desc=stage_text(lang, stage, done, total))

        known = {b.id for b in self.list_books(session) or []}
        if progress is not None:
            progress(0, desc=t(lang, "indexing"))
        try:
            info = library.ingest(path, progress=report, background=True)
        except Exception as exc:  # noqa: BLE001 - a RagError says what is wrong; anything else is logged
            if not isinstance(exc, RagError):
                logger.exception("indexing %s failed", Path(path).name)
            session.books_message = _failure(exc)
            return {self.ui.upload: None, **self.outputs(session, current_book)}
        finally:
            live.clear()
        new_id = str(info.id or current_book or ALL_BOOKS)
        if session.upload_cancel.is_set() and new_id not in known:
            try:
                library.release(new_id)  # this visitor's claim; another owner keeps the book
            except RagError as exc:
                logger.warning("could not remove a cancelled upload: %s", exc)
            session.books_message = Msg.of("upload_cancelled")
            return {self.ui.upload: None, **self.outputs(session, current_book)}
        if new_id not in known:
            session.uploaded.add(new_id)
        session.books_message = Msg.of("indexed", title=info.title or Path(path).stem, chapters=info.chapters,
                                       chunks=info.chunks, book=new_id)
        return {self.ui.upload: None, **self.outputs(session, new_id)}

    def on_scope_apply(self, session: Session | None, first: Any, last: Any, read_to: Any) -> dict[Any, Any]:
        """Apply in the scope panel: what the fields mean in words, or which one is wrong."""
        try:
            msg = scope_summary(parse_scope(first, last, read_to))
        except ScopeInvalid as exc:
            msg = exc.msg
        if not isinstance(session, Session):
            return {self.ui.scope_status: gr.update(value=show(msg, self.ctx.default_lang))}
        session.scope_status = msg  # kept as a message: a language switch says it again (``scope_line``)
        return self.scope_line(session)

    def scope_line(self, session: Session) -> dict[Any, Any]:
        """The scope panel's last Apply message, in the session's language and the book's word."""
        msg, facts = session.scope_status, self.ctx.book_facts(session)
        if msg is not None and facts is not None:
            msg = with_params(msg, unit=facts.unit(session.lang))
        return {self.ui.scope_status: gr.update(value=show(msg, session.lang))}

    def keep_book(self, book: str | None, stored: Any) -> Any:
        """The browser keeps the active book, so a reload shows it again (``ShellPage.on_load``)."""
        stored = stored if isinstance(stored, dict) else {}
        return {**stored, "book": book if book and book != ALL_BOOKS else None}

    def on_upload_start(self, path: str | None, session: Session | None) -> Any:
        """A file was dropped (before the queued ``on_upload``): the Cancel button shows, and a
        click on it from now on cancels this upload, even before its handler starts."""
        if isinstance(session, Session):
            session.upload_cancel = threading.Event()
        return gr.update(visible=bool(path))

    def on_upload_cancel(self, session: Session | None) -> Any:
        session = self.ctx.ensure_session(session)
        session.upload_cancel.set()
        return gr.update(visible=False)

    def on_tick(self, session: Session | None, current_book: str | None) -> dict[Any, Any]:
        return self.outputs(self.ctx.ensure_session(session), current_book)

    def on_pick(self, session: Session | None, current_book: str | None) -> dict[Any, Any]:
        session = self.ctx.ensure_session(session)
        if session.pending_delete is not None:  # another book: the pending deletion is off
            session.pending_delete = None
            session.books_message = None
        return {self.ui.delete_btn: gr.update(value=t(session.lang, "delete_book"), variant="secondary"),
                **self.outputs(session, current_book)}

    def on_delete(self, session: Session | None, current_book: str | None) -> dict[Any, Any]:
        """Delete the active book, if this session uploaded it: the first click asks, the second deletes."""
        session = self.ctx.ensure_session(session)
        lang, index = session.lang, self.ctx.library(session)
        reset_button = gr.update(value=t(lang, "delete_book"), variant="secondary")
        if index is None or not current_book or current_book == ALL_BOOKS:
            session.books_message = Msg.of("delete_none", level="warning")
            return {self.ui.delete_btn: reset_button, **self.outputs(session, current_book)}
        if current_book not in session.uploaded and not owns(index, current_book):
            session.books_message = Msg.of("delete_not_allowed", level="warning")
            return {self.ui.delete_btn: reset_button, **self.outputs(session, current_book)}
        try:
            title = str(index.book(current_book).title)
        except RagError:
            title = current_book
        if session.pending_delete != current_book:
            session.pending_delete = current_book
            session.books_message = Msg.of("delete_confirm", level="warning", title=title)
            return {self.ui.delete_btn: gr.update(value=t(lang, "delete_confirm_button", title=title), variant="stop"),
                    **self.outputs(session, current_book)}
        session.pending_delete = None
        try:
            gone = index.release(current_book)  # this visitor's claim: the book goes once nobody owns it
            session.uploaded.discard(current_book)
            session.books_message = Msg.of("deleted" if gone else "released", title=title)
        except RagError as exc:
            session.books_message = _failure(exc)
        return {self.ui.delete_btn: reset_button, **self.outputs(session, ALL_BOOKS)}
