"""Every error this package raises on purpose. Messages are meant for users; they never contain
secrets. An error carries its message as a ``Msg`` (``.msg``: code, params, level) for the page to
render in the reader's language; ``str(error)`` is the English text (logs, the CLI)."""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

from rag.i18n import Msg


def endpoint_for_visitors(endpoint: str, public: bool) -> Msg | str:
    """How a message names a server-side endpoint: as it is, or, on a public page (``PUBLIC_PAGE``),
    without its address (the server log keeps it)."""
    return Msg.of("endpoint_hidden") if public else endpoint


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


class QuestionTooLong(RagError):
    """A question longer than MAX_QUESTION_CHARS, refused before any work is done for it."""


def check_question(question: str, limit: int) -> str:
    """``question`` when it has at most ``limit`` characters; else ``QuestionTooLong`` saying both
    numbers. Every interface calls it first, so that a huge question costs no embedding and no model call."""
    if len(question) > limit:
        raise QuestionTooLong(Msg.of("question_too_long", level="error", chars=len(question), limit=limit))
    return question


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


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
#: How the libraries that lose the errno say it: SQLite, Chroma, numpy's short write ("925431
#: requested and 798688 written").
_DISK_FULL_WORDS = re.compile(r"no space left|disk is full|disk full|quota exceeded|\d+ requested and \d+ written",
                              re.IGNORECASE)
#: A write error on a disk with less than this left is taken for a full disk (Chroma's "Error in
#: compaction" says nothing of why).
LOW_SPACE_BYTES = 16 * 1024 * 1024


def free_bytes(path: Path | str) -> int | None:
    """Bytes free on the disk that holds ``path`` (or the nearest folder above it that exists)."""
    where = Path(path)
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        return shutil.disk_usage(where).free
    except OSError:
        return None


def disk_full(exc: BaseException, where: Path | str | None = None) -> bool:
    """Whether ``exc`` (or an error it came from) is the disk filling up: ENOSPC or EDQUOT, the
    words of a library that lost the errno, or, for a storage error (``OSError``, SQLite's,
    Chroma's), a disk at ``where`` with almost nothing left."""
    seen: set[int] = set()
    storage = False
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return True
        if _DISK_FULL_WORDS.search(str(current)):
            return True
        module = type(current).__module__ or ""
        storage = storage or isinstance(current, OSError) or module.startswith(("chromadb", "sqlite3"))
        current = current.__cause__ or current.__context__
    if where is None or not storage:
        return False
    left = free_bytes(where)
    return left is not None and left < LOW_SPACE_BYTES


# --------------------------------------------------------------------------- web search (rag.search)
# The providers' errors. Each message is a ``Msg`` (codes in the SEARCH dicts of rag/i18n) that
# names its provider.


class SearchAuthError(SearchError):
    """The key is missing, invalid, or the account may not search (HTTP 401/403)."""


class SearchConfigError(SearchError):
    """The provider refuses because of how it is set up (e.g. SearXNG without JSON output)."""


class SearchRequestError(SearchError):
    """The provider rejected the request itself (HTTP 400, 404, other 4xx)."""

    def __init__(self, provider: str, message: Msg | str, status: int | None = None) -> None:
        self.status = status
        super().__init__(provider, message)


class SearchRateLimited(SearchError):
    """HTTP 429 (or a plan quota). ``retry_after`` is in seconds when the provider said so."""

    def __init__(self, provider: str, message: Msg | str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(provider, message)


class SearchServerError(SearchError):
    """HTTP 5xx; the message carries a short excerpt of the body."""

    def __init__(self, provider: str, message: Msg | str, status: int | None = None) -> None:
        self.status = status
        super().__init__(provider, message)


class SearchTimeout(SearchError):
    """No (complete) answer within ``search_timeout``: the total time of one request, however
    slowly the server trickles its headers or body."""


class SearchNetworkError(SearchError):
    """The provider could not be reached (DNS, refused connection, TLS...)."""


class SearchBadResponse(SearchError):
    """The body is not JSON, or JSON of the wrong shape."""


class SearchResponseTooLarge(SearchBadResponse):
    """The body is larger than ``max_response_bytes``; it is not read further."""


class SearchInvalidQuery(SearchError):
    """The query is empty."""


class BudgetExceeded(SearchError):
    """The per-session budget of web searches is used up."""


class SearchChainFailed(SearchError):
    """Every provider of a failover chain failed; ``errors`` holds each one, in order."""

    def __init__(self, provider: str, errors: list[SearchError] | tuple[SearchError, ...]) -> None:
        from rag.i18n import join

        self.errors = list(errors)
        detail = join([Msg.of("search.chain_error", kind=type(e).__name__, message=e.msg) for e in self.errors])
        super().__init__(provider, Msg.of("search.chain_failed", level="error", provider=provider, detail=detail))
