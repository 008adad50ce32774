"""``make_web_search(settings)``: pick the provider (or failover chain) named in SEARCH_PROVIDER."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx

from rag.config import Settings
from rag.errors import ConfigError
from rag.schemas import WebSearch
from rag.search.base import Provider
from rag.search.bocha import BochaSearch
from rag.search.cache import CachedWebSearch
from rag.search.chain import SearchChain
from rag.search.duckduckgo import DuckDuckGoSearch
from rag.search.searxng import SearxngSearch
from rag.search.tavily import TavilySearch

logger = logging.getLogger(__name__)

PROVIDERS = ("bocha", "tavily", "searxng", "duckduckgo")
VALID_NAMES = (*PROVIDERS, "none")


def parse_provider_names(value: str | None) -> list[str]:
    """``"Bocha, duckduckgo"`` -> ``["bocha", "duckduckgo"]``; ``"none"``/empty -> ``[]``."""
    names = [part.strip().lower() for part in (value or "").split(",")]
    names = [n for n in names if n]
    if not names or names == ["none"]:
        return []
    valid = ", ".join(VALID_NAMES)
    unknown = [n for n in names if n not in VALID_NAMES]
    if unknown:
        raise ConfigError(
            f"unknown SEARCH_PROVIDER {', '.join(repr(n) for n in unknown)}; valid names: {valid} "
            "(or a comma-separated failover chain such as 'bocha,duckduckgo')"
        )
    if "none" in names:
        raise ConfigError("SEARCH_PROVIDER 'none' cannot be part of a failover chain")
    unique: list[str] = []
    for n in names:
        if n in unique:
            logger.warning("SEARCH_PROVIDER names %s twice; using it once", n)
        else:
            unique.append(n)
    return unique


def make_provider(
    name: str,
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Provider:
    """One provider from settings. Raises ``ConfigError`` naming the missing env var."""
    common = {
        "timeout": settings.search_timeout,
        "snippet_chars": settings.search_snippet_chars,
        "max_count": settings.search_count,
    }
    http = {"transport": transport, "sleep": sleep}
    if name == "bocha":
        return BochaSearch(settings.bocha_api_key, url=settings.bocha_api_url, **common, **http)
    if name == "tavily":
        return TavilySearch(settings.tavily_api_key, **common, **http)
    if name == "searxng":
        return SearxngSearch(settings.searxng_url, **common, **http)
    if name == "duckduckgo":
        return DuckDuckGoSearch(**common)
    raise ConfigError(f"unknown search provider {name!r}; valid names: {', '.join(VALID_NAMES)}")


def make_web_search(
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
) -> WebSearch | None:
    """The shared web search for the app: a provider or a failover chain, behind the TTL cache
    (``search_cache_ttl``). None when SEARCH_PROVIDER is none/empty. All providers are built
    (and their keys checked) here, so a missing key fails now, not at the first question.
    ``transport``/``sleep`` are for tests."""
    names = parse_provider_names(settings.search_provider)
    if not names:
        return None
    providers: list[Provider] = []
    try:
        for name in names:
            providers.append(make_provider(name, settings, transport=transport, sleep=sleep))
    except ConfigError:
        for provider in providers:
            provider.close()
        raise
    inner: WebSearch = providers[0] if len(providers) == 1 else SearchChain(providers)
    logger.info("web search: %s (cache ttl %g s)", inner.name, settings.search_cache_ttl)
    return CachedWebSearch(inner, settings.search_cache_ttl)
