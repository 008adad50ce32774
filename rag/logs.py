"""Logging set-up with a filter that scrubs secret values from every record."""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr

from rag.config import Settings

_BEARER = re.compile(r"(?i)(bearer\s+|api[_-]?key[=:\s\"']+)([A-Za-z0-9._\-]{8,})")
# "Basic <base64 of user:password>" (HTTP Basic auth, e.g. SearXNG behind a proxy), anywhere.
_BASIC = re.compile(r"(?i)(\bbasic\s+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])")
# The value of any Authorization (or key) header, whatever its scheme ("Authorization: Token abc",
# "x-api-key: abc"), as an upstream error body may echo the request's headers.
_AUTH_HEADER = re.compile(r"(?i)(\b(?:(?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key)[\"']?\s*[:=]\s*[\"']?)([^\s\"',}]+(?:\s+[^\s\"',}]+)?)")
# URL userinfo: scheme://user:password@host -> scheme://***@host
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
# Keys by their shape, whoever's they are (a visitor's own key echoed by an upstream error body):
# OpenAI-style sk-/rk-/pk-, Tavily's tvly-, Groq's gsk_, xAI's xai-, Hugging Face's hf_
# (with a digit: identifiers such as hf_hub_download are no keys).
_KEY_SHAPE = re.compile(r"\b((?:sk|rk|pk|tvly|gsk|xai|hf)[-_])(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{12,}")
# What a service says a key was: "Incorrect API key provided: <key>".
_KEY_PROVIDED = re.compile(r"(?i)(\bkey\s+provided\s*[:=]\s*[\"']?)([^\s\"',}]{6,})")
# Where a server is, for texts a visitor of a public page reads (``redact(..., addresses=True)``):
# URLs, IP addresses and host:port, host names, absolute file paths.
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>()\[\]{}]+")
_IP_OR_PORT = re.compile(r"\b(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\])(?::\d{1,5})?\b|\b(?:localhost|[\w-]+(?:\.[\w-]+)*):\d{2,5}\b")
_HOST = re.compile(r"(?i)\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:com|net|org|cn|io|ai|dev|app|cloud|co|me|info|biz"
                   r"|internal|local|lan|corp|intranet|svc|localdomain|home|test|example)\b")
_PATH = re.compile(r"(?<![\w.:/~-])(?:~|[A-Za-z]:)?[/\\](?:[\w.@+-]+[/\\])+[\w.@+-]*")
_URL_SETTINGS = ("llm_base_url", "searxng_url", "embedding_base_url", "ollama_url", "bocha_api_url", "rerank_base_url")


def url_secrets(url: str | None) -> list[str]:
    """The secrets a URL carries: its password (raw and percent-decoded) and the base64 form of
    ``user:password`` that HTTP Basic auth sends."""
    if not url or "@" not in url:
        return []
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if not password:
        return []
    values = {password, unquote(password)}
    for u, p in ((user or "", password), (unquote(user or ""), unquote(password))):
        values.add(base64.b64encode(f"{u}:{p}".encode()).decode())
    return sorted(v for v in values if len(v) >= 4)


def _is_credentials(token: str) -> bool:
    """True when ``token`` is base64 of ``user:password`` (so "a basic idea" stays as it is)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except ValueError:
        return False
    return b":" in decoded


def secrets_of(settings: Settings) -> list[str]:
    values = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            secret = value.get_secret_value()
            if len(secret) >= 4:
                values.append(secret)
    for name in _URL_SETTINGS:
        values.extend(url_secrets(getattr(settings, name, None)))
    return values


def redact(text: str, secrets: list[str], *, addresses: bool = False) -> str:
    """``text`` without the given secret values, bearer tokens, Basic credentials, Authorization
    and key header values, URL userinfo and anything shaped like an API key (``sk-…``). With
    ``addresses`` (a text from an upstream service for a visitor of a public page) also without
    URLs, hosts, ports and file paths: they say where the server's services are."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + "***", text)
    text = _BASIC.sub(lambda m: m.group(1) + "***" if _is_credentials(m.group(2)) else m.group(0), text)
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + "***@", text)
    text = _KEY_PROVIDED.sub(lambda m: m.group(1) + "***", text)
    text = _KEY_SHAPE.sub("***", text)
    text = _BEARER.sub(lambda m: m.group(1) + "***", text)
    if addresses:
        text = _URL.sub("<url>", text)
        text = _IP_OR_PORT.sub("<host>", text)
        text = _HOST.sub("<host>", text)
        text = _PATH.sub("<path>", text)
    return text


# The secrets of the sessions this process has served (a visitor's own keys from the Settings tab),
# most recent last: every log record is scrubbed of them too. Bounded, so that a long-running
# server does not hold every key it ever saw.
_VISITOR_SECRETS: OrderedDict[str, None] = OrderedDict()
_VISITOR_SECRETS_MAX = 2048
_secrets_lock = threading.Lock()


def remember_secrets(values: Iterable[str]) -> list[str]:
    """Add a session's secrets to those scrubbed from every log record (``secrets_of`` a visitor's
    settings); returns them as a list."""
    kept = [v for v in values if v and len(v) >= 4]
    with _secrets_lock:
        for value in kept:
            _VISITOR_SECRETS[value] = None
            _VISITOR_SECRETS.move_to_end(value)
        while len(_VISITOR_SECRETS) > _VISITOR_SECRETS_MAX:
            _VISITOR_SECRETS.popitem(last=False)
    return kept


def _remembered() -> list[str]:
    with _secrets_lock:
        return list(_VISITOR_SECRETS)


def scrub_record(record: logging.LogRecord, secrets: list[str]) -> None:
    """``record`` with its message (arguments filled in) and traceback redacted, in place."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - arguments that do not fit: the handler reports it as usual
        return
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    everything = [*secrets, *_remembered()]
    clean = redact(message, everything)
    if record.exc_text:
        record.exc_text = redact(record.exc_text, everything)
    if clean != message or record.args:
        record.msg, record.args = clean, None


class RedactingFilter(logging.Filter):
    """Scrubs every record a handler emits (``scrub_record``): the given secrets, the visitors'
    (``remember_secrets``) and anything shaped like a key."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        scrub_record(record, self.secrets)
        return True


class _RedactingFactory:
    """A log record factory that scrubs each record as it is made, so that every handler, also one
    added later (a library's, a test's), only ever sees the clean record."""

    def __init__(self, inner: Callable[..., logging.LogRecord], secrets: list[str]) -> None:
        self.inner, self.secrets = inner, secrets

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        scrub_record(record, self.secrets)
        return record


def redact_every_record(secrets: list[str]) -> None:
    """Install (or update) the scrubbing record factory (``_RedactingFactory``)."""
    current = logging.getLogRecordFactory()
    inner = current.inner if isinstance(current, _RedactingFactory) else current
    logging.setLogRecordFactory(_RedactingFactory(inner, list(secrets)))


NOISY_LIBRARIES = ("httpx", "httpcore", "chromadb", "openai", "bm25s", "urllib3")


class QuietLibraries(logging.Filter):
    """Drops libraries' records below WARNING, even from libraries that reset their own logger's
    level when imported (bm25s sets DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not record.name.startswith(NOISY_LIBRARIES)


def setup_logging(settings: Settings, *, extra_secrets: list[str] | None = None) -> None:
    """Root logging at ``settings.log_level`` with secrets (the server's, the visitors', any key's
    shape) scrubbed from every record, whichever handler writes it."""
    level = getattr(logging, settings.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    secrets = secrets_of(settings) + list(extra_secrets or [])
    redact_every_record(secrets)
    redactor = RedactingFilter(secrets)
    for handler in logging.getLogger().handlers:
        handler.filters = [f for f in handler.filters if not isinstance(f, (RedactingFilter, QuietLibraries))]
        handler.addFilter(QuietLibraries())
        handler.addFilter(redactor)
