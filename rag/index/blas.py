"""How many threads numpy's BLAS (OpenBLAS) uses, set deliberately.

OpenBLAS starts as many threads as cores and, while they wait for work, spins. On 2 shared cores
with another CPU-bound process that made the embedder 6-10x more expensive: a vector query took
306 ms at the median (1.1 s at p95) instead of 46 ms with one thread. OpenBLAS's thread count is one
value for the whole process (``openblas_set_num_threads_local`` sets the same global in the pthreads
build numpy ships), so the index sets it to 1 once, when the local embedder loads, and gets
parallelism where it wants it from Python threads instead: a query runs in its caller's thread on one
core, and a background embedding splits each batch over ``EMBED_THREADS`` threads (numpy releases
the GIL in matmuls), each with single-threaded BLAS. See ``bench/ingest.py --threads``.

While a question is being embedded, those threads wait at their next pause point (``SearchFirst``),
so a search stays fast while a book embeds in the same process. They can also run at a lower
priority (``EMBED_NICE``, ``lower_thread_priority``: on Linux a thread has its own nice value); that
yields to other programs too, so it is off by default (bench/ingest.py --burner --nice N).

No dependency: the library numpy loaded is found among the process's mapped files and called through
ctypes (``threadpoolctl`` does the same, more generally). Without OpenBLAS this does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
from collections.abc import Iterator
from functools import cache

log = logging.getLogger(__name__)

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")
_lock = threading.Lock()


def _mapped_openblas() -> list[str]:
    import numpy  # noqa: F401 - loads the BLAS library this looks for

    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.rstrip("\n").split(" ")[-1]
                if "openblas" in path.lower() and ".so" in path and path not in paths:
                    paths.append(path)
    except OSError:  # not Linux: look next to numpy
        import glob
        import os

        libs = os.path.dirname(numpy.__file__) + ".libs"  # type: ignore[attr-defined]
        paths = [p for p in glob.glob(os.path.join(libs, "*openblas*")) if ".so" in p or p.endswith(".dylib")]
    return paths


@cache
def _functions() -> tuple[object, object] | None:
    """(setter, getter) of the OpenBLAS numpy uses, or None."""
    for path in _mapped_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    log.debug("no OpenBLAS found: BLAS threads are left as they are")
    return None


def blas_threads() -> int | None:
    """The BLAS thread count now, or None when numpy does not use OpenBLAS."""
    found = _functions()
    return int(found[1]()) if found else None  # type: ignore[operator]


def set_blas_threads(n: int) -> int | None:
    """Set the process's BLAS thread count; returns the previous one (None: no OpenBLAS, nothing done)."""
    found = _functions()
    if not found:
        return None
    setter, getter = found
    with _lock:
        previous = int(getter())  # type: ignore[operator]
        if previous != n:
            setter(max(1, int(n)))  # type: ignore[operator]
            log.debug("BLAS threads: %d -> %d", previous, n)
        return previous


def lower_thread_priority(nice: int) -> bool:
    """Raise the calling thread's nice value by ``nice`` (Linux: per thread; elsewhere nothing is done,
    since it would lower the whole process). True when done."""
    import os
    import sys

    if nice <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError as exc:  # not allowed here: run at normal priority
        log.debug("could not lower the embedding thread's priority: %s", exc)
        return False
    return True


class SearchFirst:
    """Searches before background embedding, in one process: while a question is being embedded
    (``searching()``), the embedding threads wait at their next pause point (``pause()``, between the
    steps of each layer: a few milliseconds apart), at most ``max_wait`` seconds at a time so an
    embedding always moves on under a constant stream of questions. Unlike a nice value, this costs
    the embedding nothing when other programs compete for the cores."""

    def __init__(self, max_wait: float = 1.0) -> None:
        self.max_wait = max_wait
        self._active = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def searching(self) -> Iterator[None]:
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if not self._active:
                    self._cond.notify_all()

    def pause(self) -> None:
        if not self._active:  # the common case, without taking the lock
            return
        with self._cond:
            self._cond.wait_for(lambda: not self._active, timeout=self.max_wait)
