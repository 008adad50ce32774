"""Remove the debug information from xllamacpp's library after ``pip install`` (``make``'s install
step runs this): the wheel ships llama.cpp built with it, 106 MB on disk, 30 MB without; the code
is the same. A stripped copy replaces the file only once ``strip`` has succeeded; without
``strip`` (binutils) nothing changes. Safe to run again."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

logger = logging.getLogger("strip_debug_info")


def libraries() -> list[Path]:
    spec = importlib.util.find_spec("xllamacpp")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [p for root in spec.submodule_search_locations for p in Path(root).glob("*.so")]


def strip(path: Path, tool: str) -> tuple[int, int]:
    before = path.stat().st_size
    tmp = path.with_name(path.name + ".stripping")
    shutil.copy2(path, tmp)
    try:
        subprocess.run([tool, "--strip-debug", str(tmp)], check=True, capture_output=True, timeout=300)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return before, path.stat().st_size


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    tool = shutil.which("strip")
    if tool is None:
        logger.info("no strip (binutils): xllamacpp keeps its debug information")
        return 0
    for lib in libraries():
        try:
            before, after = strip(lib, tool)
        except (OSError, subprocess.SubprocessError) as exc:
            logger.info("could not strip %s (%s): left as it is", lib.name, type(exc).__name__)
            continue
        if after < before:
            logger.info("%s: %.0f MB -> %.0f MB (debug information removed)", lib.name, before / 1e6, after / 1e6)
    return 0


if __name__ == "__main__":
    sys.exit(main())
