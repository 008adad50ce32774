"""The chat providers in one table, like the web search's (``rag.search.registry``): each remote
provider's LLM_PROVIDER name, how its endpoint is found from the settings, whether ``auto`` tries
it, and what happens when it was named and is not there. ``resolve_endpoint(settings)`` picks the
endpoint; ``rag.llm.make_chat_model`` builds the client for it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

import httpx

from rag.config import Settings
from rag.errors import ConfigError

logger = logging.getLogger(__name__)

OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
_EMBEDDING_HINTS = ("embed", "bge", "e5", "minilm", "nomic", "rerank")


def _pick_chat_model(names: list[str]) -> str | None:
    for name in names:
        if not any(hint in name.lower() for hint in _EMBEDDING_HINTS):
            return name
    return None


def detect_ollama(url: str, timeout: float = 0.6) -> list[str]:
    """Model names served by an Ollama server at ``url``; [] when none answers."""
    try:
        resp = httpx.get(f"{url.rstrip('/')}/api/tags", timeout=timeout)
        resp.raise_for_status()
        return [m.get("name", "") for m in resp.json().get("models", []) if m.get("name")]
    except (httpx.HTTPError, ValueError, AttributeError):
        return []


def list_openai_models(base_url: str, api_key: str | None, timeout: float = 3.0) -> list[str]:
    """Model ids from ``GET {base_url}/models`` (vLLM, llama.cpp, Ollama...); [] on failure."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout)
        resp.raise_for_status()
        return [m.get("id", "") for m in resp.json().get("data", []) if m.get("id")]
    except (httpx.HTTPError, ValueError, AttributeError):
        return []


Provider = Literal["openai", "ollama", "local", "none"]


class Endpoint(NamedTuple):
    """A remote chat endpoint: its base URL (None: OpenAI's own), the key sent, the model."""

    base_url: str | None
    api_key: str
    model: str


def _openai_endpoint(settings: Settings) -> Endpoint | None:
    """LLM_BASE_URL and/or LLM_API_KEY: that endpoint (OpenAI when no base URL); None when neither is set."""
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    base = settings.llm_base_url
    if not (base or key):
        return None
    model = settings.llm_model
    if not model:
        model = _pick_chat_model(list_openai_models(base, key)) if base else OPENAI_DEFAULT_MODEL
    if not model:
        raise ConfigError(f"LLM_MODEL is not set and the endpoint {base} lists no chat model: set LLM_MODEL.")
    # Local servers (vLLM, llama.cpp, Ollama) accept any key; the client insists on one.
    return Endpoint(base, key or "not-needed", model)


def _no_openai_endpoint(settings: Settings) -> None:
    raise ConfigError("LLM_PROVIDER=openai needs LLM_API_KEY (and LLM_BASE_URL for another endpoint than OpenAI).")


def _ollama_endpoint(settings: Settings) -> Endpoint | None:
    """An Ollama server at OLLAMA_URL, if one answers (LLM_MODEL when it serves it, else its first chat model)."""
    names = detect_ollama(settings.ollama_url)
    if not names:
        return None
    model = settings.llm_model if settings.llm_model in names else _pick_chat_model(names)
    if settings.llm_model and settings.llm_model not in names:
        logger.warning("LLM_MODEL %s is not served by Ollama; using %s", settings.llm_model, model)
    if not model:
        return None
    logger.info("using Ollama at %s with model %s", settings.ollama_url, model)
    return Endpoint(f"{settings.ollama_url.rstrip('/')}/v1", "ollama", model)


def _no_ollama(settings: Settings) -> None:
    logger.warning("LLM_PROVIDER=ollama but no Ollama answers at %s: retrieval-only", settings.ollama_url)


@dataclass(frozen=True)
class ChatProvider:
    """A remote chat provider: its LLM_PROVIDER name, how its endpoint is found from the settings
    (None: not configured or not answering), whether ``auto`` tries it, and what happens when it
    was named and is not there (an error, or a warning and retrieval-only)."""

    name: Provider
    endpoint: Callable[[Settings], Endpoint | None]
    in_auto: Callable[[Settings], bool]
    missing: Callable[[Settings], None]


#: The remote chat providers, in the order ``auto`` tries them. The embedded model ("local") is the
#: last resort of ``auto`` and is built by ``rag.local``; "none" is retrieval-only on purpose.
CHAT_PROVIDERS: tuple[ChatProvider, ...] = (
    ChatProvider("openai", _openai_endpoint, lambda s: True, _no_openai_endpoint),
    ChatProvider("ollama", _ollama_endpoint, lambda s: s.ollama_autodetect, _no_ollama),
)


def resolve_endpoint(settings: Settings) -> Endpoint | None:
    """The remote endpoint (base_url, api_key, model) the settings choose, or None (the embedded
    model or none): the provider LLM_PROVIDER names, or for ``auto`` the first of ``CHAT_PROVIDERS``
    that is configured or answers (an explicit endpoint, then an Ollama on this machine)."""
    chosen = settings.llm_provider
    if chosen in ("none", "local"):
        return None
    for provider in CHAT_PROVIDERS:
        if chosen not in (provider.name, "auto") or (chosen == "auto" and not provider.in_auto(settings)):
            continue
        endpoint = provider.endpoint(settings)
        if endpoint is not None:
            return endpoint
        if chosen == provider.name:
            provider.missing(settings)
            return None
    return None
