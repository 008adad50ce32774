"""The evaluation log: one JSON line per evaluation in real use (no keys ever go in)."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


class JsonlEvalLog:
    """Appends records to a JSONL file; thread-safe; callable (``Deps.eval_log``)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._failing = False

    def __call__(self, record: dict[str, Any]) -> None:
        """Append ``record``. A file-system error (DATA_DIR not writable, disk full) is logged in
        one line, once until writing works again, and never raised into a turn."""
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
            except OSError as exc:
                if not self._failing:
                    logger.warning("evaluation log %s not written: %s", self.path, exc.strerror or exc)
                self._failing = True
                return
            self._failing = False
