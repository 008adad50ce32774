"""Every error this package raises on purpose. Messages are meant for users; they never contain
secrets. An error carries its message as a ``Msg`` (``.msg``: code, params, level) for the page to
render in the reader's language; ``str(error)`` is the English text (logs, the CLI)."""

from __future__ import annotations

import errno
from pathlib import Path

from rag.i18n import Msg


class RagError(Exception):
    """Base class of every error this package raises on purpose. ``message``: a ``Msg``, or an
    English sentence not yet given a code (shown as written)."""

    def __init__(self, message: Msg | str = "", *args: object) -> None:
        self.msg = message if isinstance(message, Msg) else Msg.of("text", value=str(message))
        super().__init__(str(message), *args)

    def __str__(self) -> str:
        return str(self.msg)


class ConfigError(RagError):
    """Settings are missing or invalid (for example an API key that is not set)."""


class LLMError(RagError):
    """The language model could not be reached or answered with something unusable."""


class LLMUnavailable(LLMError):
    """The model call itself failed: refused connection, timeout, or an error status from the
    endpoint (401/403 key, 404 model, 429, 5xx). ``endpoint`` names it (never the key)."""

    def __init__(self, endpoint: str, message: Msg | str) -> None:
        self.endpoint = endpoint
        super().__init__(message)


class LLMOutputError(LLMError):
    """The model answered, but not with the structured output asked for (no JSON, wrong schema)."""


class BookError(RagError):
    """A book could not be read or indexed (broken file, DRM, empty, wrong encoding...)."""


class IndexError_(RagError):
    """The book index (Chroma store or keyword index) failed."""


class SearchError(RagError):
    """A web search provider failed. ``provider`` names it; the message never holds a key."""

    def __init__(self, provider: str, message: Msg | str) -> None:
        self.provider = provider
        super().__init__(message if isinstance(message, Msg) else f"{provider}: {message}")


_HINTS = {
    errno.ENOSPC: "free some disk space or point DATA_DIR at another disk",
    errno.EDQUOT: "free some disk space or point DATA_DIR at another disk",
    errno.EACCES: "make it writable or point DATA_DIR at a writable directory",
    errno.EPERM: "make it writable or point DATA_DIR at a writable directory",
    errno.EROFS: "the file system is read-only: point DATA_DIR at a writable directory",
    errno.ENOTDIR: "DATA_DIR, or a folder above it, is a file: point DATA_DIR at a directory",
    errno.EEXIST: "DATA_DIR must be a directory (or not exist yet), not a file",
}


def filesystem_problem(exc: OSError, data_dir: Path | str | None = None) -> str:
    """One line for a file-system error (not writable, not a directory, disk full), naming DATA_DIR
    when the failing path is inside it. For the CLI's and the app's start boundary."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename
    text = f"{reason}: {where}" if where else reason
    if data_dir is not None:
        root = Path(data_dir).absolute()
        inside = where is None or Path(str(where)).absolute().is_relative_to(root) or root.is_relative_to(
            Path(str(where)).absolute())
        if inside:
            hint = _HINTS.get(exc.errno or 0, "point DATA_DIR at a writable directory with free space")
            return f"DATA_DIR {data_dir} cannot be used ({text}); {hint}"
    return text
