"""A turn's deadline (``TURN_TIMEOUT``). ``rag.agent.events.run_turn`` sets one for the thread that runs
the graph; model calls (``rag.llm``) and web searches ask for the time left, start nothing once it
is over, and stop waiting when it runs out. Without a deadline (a graph run outside ``run_turn``,
an evaluation) every call behaves as before.

A call that is still running at the deadline is left to finish in its worker thread (a daemon; its
own client timeout ends it): the turn does not wait for it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

#: The key under the compiled graph's ``configurable`` that holds its TURN_TIMEOUT (``build_graph`` sets it).
CONFIG_KEY = "turn_timeout"

_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("rag_turn_deadline", default=None)


class DeadlineExceeded(TimeoutError):
    """The turn's time is up. A ``TimeoutError``, so every caller that handles a timed-out model
    call or search handles this one too."""


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
        return DeadlineExceeded(f"{what}: the turn's time limit was reached (TURN_TIMEOUT={self.seconds:g} s)")


def budget_of(graph: object) -> float | None:
    """The TURN_TIMEOUT a compiled graph was built with (None: no deadline)."""
    configurable = (getattr(graph, "config", None) or {}).get("configurable") or {}
    value = configurable.get(CONFIG_KEY)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def current() -> Deadline | None:
    """The deadline of the turn running in this context, or None."""
    return _CURRENT.get()


@contextlib.contextmanager
def scope(deadline: Deadline | None) -> Iterator[None]:
    """Run the block under ``deadline`` (None: no deadline)."""
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def call_before(fn: Callable[[], T], deadline: Deadline | None, what: str) -> T:
    """``fn()``; under a deadline it runs in a worker thread (with this context, so callbacks and
    tracing still see their run) and the caller waits at most until the deadline, then raises
    ``DeadlineExceeded``. Nothing is started once the deadline has passed."""
    if deadline is None:
        return fn()
    if deadline.expired:
        raise deadline.exceeded(what)
    box: dict[str, object] = {}
    done = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name=f"rag-{what}", daemon=True).start()
    if not done.wait(deadline.remaining()):
        raise deadline.exceeded(what)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
