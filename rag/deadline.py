"""A turn's deadline (``TURN_TIMEOUT``). ``rag.agent.events.run_turn`` sets one for the thread that runs
the graph; model calls (``rag.llm``) and web searches ask for the time left, start nothing once it
is over, and stop waiting when it runs out. Without a deadline (a graph run outside ``run_turn``,
an evaluation) every call behaves as before.

A call that is still running at the deadline is left to finish in its worker thread (a daemon; its
own client timeout ends it): the turn does not wait for it.

A turn may also be cancelled (Stop, a closed page): ``scope(deadline, cancel)`` makes the turn's
cancel event known to every call made under it (``cancel_event``). A cancelled turn starts no
call; a call it waits for is given up at once (``Cancelled``), and a stream it reads is closed.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rag.i18n import Msg

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The key under the compiled graph's ``configurable`` that holds its TURN_TIMEOUT (``build_graph`` sets it).
CONFIG_KEY = "turn_timeout"

_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("rag_turn_deadline", default=None)
_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("rag_turn_cancel", default=None)


class DeadlineExceeded(TimeoutError):
    """The turn's time is up. A ``TimeoutError``, so every caller that handles a timed-out model
    call or search handles this one too. ``msg``: the reader's message (code ``turn.deadline``)."""

    def __init__(self, msg: Msg) -> None:
        self.msg = msg
        super().__init__(str(msg))


class Cancelled(DeadlineExceeded):
    """The turn was cancelled (Stop, a closed page) while a call waited: nobody reads its result.
    A ``DeadlineExceeded``, so every caller that gives up on a timed-out call gives up on this one."""

    def __init__(self, what: str = "step") -> None:
        super().__init__(Msg.of("turn.cancelled", level="error", step=step_msg(what)))


def step_msg(step: str) -> Msg:
    """The step a time limit stopped, as a message: its ``step.<name>`` code when the catalogue has
    one (``model_call``, ``answer_stream``, ...), else the name as written."""
    from rag.i18n.en import CATALOGUE

    code = f"step.{step}"
    return Msg.of(code) if code in CATALOGUE else Msg.of("text", value=step)


@dataclass(frozen=True)
class Deadline:
    seconds: float  # the turn's budget (for messages)
    end: float  # time.monotonic() when it is over

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def exceeded(self, what: str) -> DeadlineExceeded:
        """The error for step ``what`` (a ``step.<what>`` code's name) stopped by this deadline."""
        return DeadlineExceeded(Msg.of("turn.deadline", level="error", step=step_msg(what),
                                       seconds=f"{self.seconds:g}"))


def budget_of(graph: object) -> float | None:
    """The TURN_TIMEOUT a compiled graph was built with (None: no deadline)."""
    configurable = (getattr(graph, "config", None) or {}).get("configurable") or {}
    value = configurable.get(CONFIG_KEY)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def current() -> Deadline | None:
    """The deadline of the turn running in this context, or None."""
    return _CURRENT.get()


def cancel_event() -> threading.Event | None:
    """The cancel event of the turn running in this context (set: the turn is cancelled), or None."""
    return _CANCEL.get()


def cancelled() -> bool:
    event = _CANCEL.get()
    return event is not None and event.is_set()


@contextlib.contextmanager
def scope(deadline: Deadline | None, cancel: threading.Event | None = None) -> Iterator[None]:
    """Run the block under ``deadline`` (None: no deadline) and the turn's ``cancel`` event (None:
    it cannot be cancelled)."""
    token = _CURRENT.set(deadline)
    cancel_token = _CANCEL.set(cancel)
    try:
        yield
    finally:
        _CANCEL.reset(cancel_token)
        _CURRENT.reset(token)


class Idle(TimeoutError):
    """No item came within the idle limit after the first one (``pump(..., idle=)``)."""


#: What ``Pump.get`` returns when no item came in time, and when the source has ended.
TIMEOUT = object()
END = object()


class Pump(Generic[T]):
    """Iterates ``source`` in a daemon thread (run in the caller's context, so callbacks, tracing
    and the turn's deadline still see their run) and hands each item over a queue; the reader waits
    with a timeout of its own. The one thread-and-queue mechanism under every call and stream that
    must end by a time limit or on cancel (``pump``, ``call_before``, the UI's turns).

    ``stop()`` makes the thread close the source at its next item: a
    stream that is given up is closed there (or by its client's timeout)."""

    def __init__(self, source: Iterable[T] | Callable[[], Iterable[T]], *, name: str = "rag-pump") -> None:
        self._source = source
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self.closed = threading.Event()  # set once the source is closed
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(self._run,), name=name, daemon=True).start()

    def _run(self) -> None:
        iterator: Iterator[T] | None = None
        try:
            iterator = iter(self._source() if callable(self._source) else self._source)
            for item in iterator:
                if self._stop.is_set():
                    break
                self._queue.put(("item", item))
            self._queue.put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader
            self._queue.put(("error", exc))
        finally:
            close = getattr(iterator, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - the reader has what it needs
                    logger.exception("closing a pumped stream failed")
            self.closed.set()

    def get(self, timeout: float | None = None) -> Any:
        """The next item; ``TIMEOUT`` if none came within ``timeout`` seconds (None: wait); ``END``
        once the source has ended (and at every later call). Raises what the source raised."""
        try:
            kind, item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return TIMEOUT
        if kind == "item":
            return item
        self._queue.put((kind, item))  # an end (or error) stays for any later call
        if kind == "error":
            raise item
        return END

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the source is closed; True if it is."""
        return self.closed.wait(timeout)


def pump(source: Iterable[T] | Callable[[], Iterable[T]], deadline: Deadline | None = None,
         cancel: threading.Event | None = None, *, what: str = "step", grace: float = 0.0,
         idle: float | None = None, poll: float = 0.1) -> Iterator[T]:
    """``source``'s items as they come, read in a worker thread (``Pump``). Raises
    ``deadline.exceeded(what)`` once the deadline plus ``grace`` has passed with nothing new;
    ``Idle`` when, after the first item, ``idle`` seconds pass without one; ends quietly once
    ``cancel`` is set. Nothing is started once the deadline has passed or ``cancel`` is set; the
    source is closed in every case, and an item that comes after its time is dropped."""
    if deadline is not None and deadline.end + grace <= time.monotonic():
        raise deadline.exceeded(what)
    if cancel is not None and cancel.is_set():
        return
    worker: Pump[T] = Pump(source, name=f"rag-{what.replace(' ', '-').replace('_', '-')}")
    started = False
    try:
        while True:
            if cancel is not None and cancel.is_set():
                return
            waits = [poll] if cancel is not None else []
            if deadline is not None:
                left = deadline.end + grace - time.monotonic()
                if left <= 0:
                    raise deadline.exceeded(what)
                waits.append(left)
            if idle and started:
                waits.append(idle)
            wait = min(waits) if waits else None
            asked = time.monotonic()
            item = worker.get(wait)
            if item is END:
                return
            if item is TIMEOUT:
                if idle and started and time.monotonic() - asked >= idle:
                    raise Idle(f"{what}: nothing new for {idle:g} s")
                continue
            started = True
            yield item
    finally:
        worker.stop()


def call_before(fn: Callable[[], T], deadline: Deadline | None, what: str) -> T:
    """``fn()``; under a deadline, or in a turn that can be cancelled (``scope``), it runs in a
    worker thread (``pump``) and the caller waits at most until the deadline, then raises
    ``DeadlineExceeded``, or until the turn is cancelled, then raises ``Cancelled`` (the call is left
    to its worker). Nothing is started once the deadline has passed or the turn is cancelled."""
    cancel = cancel_event()
    if deadline is None and cancel is None:
        return fn()
    for value in pump(lambda: iter((fn(),)), deadline, cancel, what=what):
        return value
    if cancel is not None and cancel.is_set():
        raise Cancelled(what)
    raise RuntimeError(f"{what}: returned nothing")  # unreachable: the source yields once or raises
