"""Logging set-up with a filter that scrubs secret values from every record."""

from __future__ import annotations

import base64
import logging
import re
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


class RedactingFilter(logging.Filter):
    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        clean = redact(message, self.secrets)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        return True


NOISY_LIBRARIES = ("httpx", "httpcore", "chromadb", "openai", "bm25s", "urllib3")


class QuietLibraries(logging.Filter):
    """Drops libraries' records below WARNING, even from libraries that reset their own logger's
    level when imported (bm25s sets DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not record.name.startswith(NOISY_LIBRARIES)


def setup_logging(settings: Settings, *, extra_secrets: list[str] | None = None) -> None:
    """Root logging at ``settings.log_level`` with secrets scrubbed from every handler's output."""
    level = getattr(logging, settings.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    redactor = RedactingFilter(secrets_of(settings) + list(extra_secrets or []))
    for handler in logging.getLogger().handlers:
        handler.filters = [f for f in handler.filters if not isinstance(f, (RedactingFilter, QuietLibraries))]
        handler.addFilter(QuietLibraries())
        handler.addFilter(redactor)
