"""Is a model endpoint there? ``probe_endpoint`` asks an OpenAI-compatible server for its models
(``GET {base}/models``) and tells apart "cannot reach it" (refused, no such host, timeout), "it
rejects the key" (401/403) and "it answers but lists no models" (other statuses), so the page
can say which, and offer the models as choices. Never raises; never puts the key in its result."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import SecretStr

ProbeStatus = Literal["ok", "unreachable", "rejected", "no_list"]
_EMBEDDING_HINTS = ("embed", "bge", "e5", "minilm", "nomic", "rerank")
OPENAI_BASE = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Probe:
    status: ProbeStatus
    where: str  # the endpoint as it may be shown (no credentials)
    models: tuple[str, ...] = ()  # chat models first
    http_status: int | None = None
    why: Literal["", "connect", "timeout"] = ""

    @property
    def reachable(self) -> bool:
        return self.status != "unreachable"


def display_url(url: str) -> str:
    """``url`` without user info, query or fragment (what the page may show of an endpoint)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "?"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/") or "?"


def chat_models_first(names: list[str]) -> tuple[str, ...]:
    """Model ids with the ones that look like chat models first (embedders and rerankers last)."""
    def is_embedder(name: str) -> bool:
        return any(hint in name.lower() for hint in _EMBEDDING_HINTS)

    return tuple([n for n in names if not is_embedder(n)] + [n for n in names if is_embedder(n)])


def probe_endpoint(base_url: str, api_key: str | None = None, *, timeout: float = 3.0,
                   where: str | None = None) -> Probe:
    """Ask ``base_url`` for its models. ``where`` is how the result names the endpoint (default:
    ``display_url(base_url)``; the server's own URL is never shown to visitors)."""
    shown = where or display_url(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout, follow_redirects=False)
    except httpx.TimeoutException:
        return Probe("unreachable", shown, why="timeout")
    except (httpx.HTTPError, OSError, ValueError):
        return Probe("unreachable", shown, why="connect")
    if resp.status_code in (401, 403):
        return Probe("rejected", shown, http_status=resp.status_code)
    if resp.status_code >= 300:
        return Probe("no_list", shown, http_status=resp.status_code)
    try:
        data = resp.json().get("data", [])
        names = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    except (ValueError, AttributeError):
        return Probe("no_list", shown, http_status=resp.status_code)
    return Probe("ok", shown, models=chat_models_first(names), http_status=resp.status_code)


def llm_endpoint(llm: Any) -> tuple[str, str | None] | None:
    """(base URL, key) of a LangChain ``ChatOpenAI``-like model; None for anything else (fakes)."""
    if llm is None or not hasattr(llm, "openai_api_key"):
        return None
    # Only OpenAI-compatible chat models have these (checked above); a fake or another client has none.
    base = getattr(llm, "openai_api_base", None) or OPENAI_BASE
    key = getattr(llm, "openai_api_key", None)
    secret = key.get_secret_value() if isinstance(key, SecretStr) else key
    return str(base), (str(secret) if secret else None)


class ProbeCache:
    """Probe results kept for ``ttl_s`` per (endpoint, key), so page loads do not each ask."""

    def __init__(self, ttl_s: float = 60.0, timeout: float = 2.0, clock: Any = time.monotonic) -> None:
        self.ttl_s, self.timeout, self.clock = ttl_s, timeout, clock
        self._cache: dict[tuple[str, int], tuple[float, Probe]] = {}
        self._lock = threading.Lock()

    def probe(self, base_url: str, api_key: str | None, where: str) -> Probe:
        key = (base_url, hash(api_key))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and self.clock() - hit[0] < self.ttl_s:
                return hit[1]
        result = probe_endpoint(base_url, api_key, timeout=self.timeout, where=where)
        with self._lock:
            self._cache[key] = (self.clock(), result)
        return result

    def forget(self) -> None:
        with self._lock:
            self._cache.clear()
