"""A book's embedding progress as ``vectors.json`` keeps it: per vector space, how many chunks are
stored, whether the book is complete, and which process (if any) is embedding it now."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Heartbeat:
    """Who is embedding a book right now (any process), and when it last said so."""

    pid: int
    host: str
    at: float  # time.time()

    @classmethod
    def now(cls) -> Heartbeat:
        return cls(os.getpid(), socket.gethostname(), time.time())

    def alive(self, stale_after: float) -> bool:
        if time.time() - self.at > stale_after:
            return False
        if self.host == socket.gethostname() and self.pid != os.getpid():
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False  # that process is gone
            except OSError:
                pass  # it exists (under another user)
        return True


@dataclass(frozen=True)
class VectorProgress:
    """One vector space's entry in ``vectors.json``."""

    complete: bool = False
    embedded: int = 0  # chunks whose pieces are all stored
    worker: Heartbeat | None = None  # set while a process embeds the book

    @classmethod
    def from_json(cls, data: Any) -> VectorProgress:
        if not isinstance(data, dict):
            return cls()
        beat = data.get("worker")
        try:
            worker = Heartbeat(int(beat["pid"]), str(beat["host"]), float(beat["at"])) if beat else None
        except (KeyError, TypeError, ValueError):
            worker = None
        return cls(bool(data.get("complete")), int(data.get("embedded", 0)), worker)
