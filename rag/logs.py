"""Logging set-up with a filter that scrubs secret values from every record."""

from __future__ import annotations

import logging
import re

from pydantic import SecretStr

from rag.config import Settings

_BEARER = re.compile(r"(?i)(bearer\s+|api[_-]?key[=:\s\"']+)([A-Za-z0-9._\-]{8,})")


def secrets_of(settings: Settings) -> list[str]:
    values = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            secret = value.get_secret_value()
            if len(secret) >= 4:
                values.append(secret)
    return values


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return _BEARER.sub(lambda m: m.group(1) + "***", text)


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
