"""The web search providers in one table: their name, what builds them, the settings they need and a
label for the settings page. ``make_web_search(settings)`` picks the provider (or failover chain)
named in SEARCH_PROVIDER; ``VALID_NAMES`` are the names SEARCH_PROVIDER may hold."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from rag.config import Settings
from rag.errors import ConfigError
from rag.i18n import Msg
from rag.schemas import WebSearch
from rag.search.base import HttpOptions, Provider
from rag.search.bocha import BochaSearch
from rag.search.cache import CachedWebSearch
from rag.search.chain import SearchChain
from rag.search.duckduckgo import DuckDuckGoSearch
from rag.search.searxng import SearxngSearch
from rag.search.tavily import TavilySearch

logger = logging.getLogger(__name__)

Sleep = Callable[[float], None]


def _bocha(s: Settings, http: HttpOptions) -> Provider:
    return BochaSearch(s.bocha_api_key, url=s.bocha_api_url, http=http)


def _tavily(s: Settings, http: HttpOptions) -> Provider:
    return TavilySearch(s.tavily_api_key, http=http)


def _searxng(s: Settings, http: HttpOptions) -> Provider:
    return SearxngSearch(s.searxng_url, http=http)


def _duckduckgo(s: Settings, http: HttpOptions) -> Provider:
    return DuckDuckGoSearch(timeout=http.timeout, snippet_chars=http.snippet_chars, max_count=http.max_count)


@dataclass(frozen=True)
class ProviderSpec:
    name: str  # the name in SEARCH_PROVIDER (the class's ``name``)
    label: str  # shown in the settings page's choices
    cls: type[Provider]
    build: Callable[[Settings, HttpOptions], Provider]  # the class, given what it needs from settings
    env: tuple[str, ...] = ()  # the settings it needs (named when one is missing)


#: Every provider, in the order the settings page lists them.
REGISTRY: tuple[ProviderSpec, ...] = (
    ProviderSpec("bocha", "Bocha", BochaSearch, _bocha, ("BOCHA_API_KEY",)),
    ProviderSpec("tavily", "Tavily", TavilySearch, _tavily, ("TAVILY_API_KEY",)),
    ProviderSpec("searxng", "SearXNG", SearxngSearch, _searxng, ("SEARXNG_URL",)),
    ProviderSpec("duckduckgo", "DuckDuckGo", DuckDuckGoSearch, _duckduckgo),
)
SPECS: dict[str, ProviderSpec] = {spec.name: spec for spec in REGISTRY}
NONE = "none"
PROVIDERS: tuple[str, ...] = tuple(SPECS)
VALID_NAMES: tuple[str, ...] = (*PROVIDERS, NONE)


def choices() -> list[tuple[str, str]]:
    """(label, name) for every value of SEARCH_PROVIDER with a single provider, "none" last."""
    return [(spec.label, spec.name) for spec in REGISTRY] + [(NONE, NONE)]


def _unknown(names: list[str]) -> ConfigError:
    return ConfigError(Msg.of("search.unknown_provider", level="error", names=", ".join(repr(n) for n in names),
                              valid=", ".join(VALID_NAMES)))


def parse_provider_names(value: str | None) -> list[str]:
    """``"Bocha, duckduckgo"`` -> ``["bocha", "duckduckgo"]``; ``"none"``/empty -> ``[]``."""
    names = [part.strip().lower() for part in (value or "").split(",")]
    names = [n for n in names if n]
    if not names or names == [NONE]:
        return []
    unknown = [n for n in names if n not in VALID_NAMES]
    if unknown:
        raise _unknown(unknown)
    if NONE in names:
        raise ConfigError(Msg.of("search.none_in_chain", level="error"))
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
    sleep: Sleep | None = None,
) -> Provider:
    """One provider from settings. Raises ``ConfigError`` naming the missing env var."""
    spec = SPECS.get(name)
    if spec is None:
        raise _unknown([name])
    http = HttpOptions(timeout=settings.search_timeout, snippet_chars=settings.search_snippet_chars,
                       max_count=settings.search_count, transport=transport, sleep=sleep)
    return spec.build(settings, http)


def make_web_search(
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Sleep | None = None,
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
