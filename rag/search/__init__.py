"""Web search providers behind one interface (``rag.schemas.WebSearch``).

    ws = make_web_search(settings)          # provider or failover chain, behind a TTL cache; or None
    session_ws = SessionSearch(ws, budget=settings.search_budget)
    outcome = session_ws.search_detailed(query, count)   # SearchOutcome; raises SearchError subclasses
    prompt_part = format_web_context(outcome.results, start_index=len(passages) + 1)
"""

from rag.errors import (
    BudgetExceeded,
    SearchAuthError,
    SearchBadResponse,
    SearchChainFailed,
    SearchConfigError,
    SearchInvalidQuery,
    SearchNetworkError,
    SearchRateLimited,
    SearchRequestError,
    SearchResponseTooLarge,
    SearchServerError,
    SearchTimeout,
)
from rag.search.base import HttpOptions, HttpProvider, Provider
from rag.search.bocha import BochaSearch
from rag.search.cache import CachedWebSearch
from rag.search.chain import SearchChain
from rag.search.duckduckgo import DuckDuckGoSearch
from rag.search.hygiene import clean_results, normalize_url, plain_text
from rag.search.registry import PROVIDERS, VALID_NAMES, make_provider, make_web_search, parse_provider_names
from rag.search.searxng import SearxngSearch
from rag.search.session import SessionSearch
from rag.search.tavily import TavilySearch

__all__ = [
    "PROVIDERS",
    "VALID_NAMES",
    "BochaSearch",
    "BudgetExceeded",
    "CachedWebSearch",
    "DuckDuckGoSearch",
    "HttpOptions",
    "HttpProvider",
    "Provider",
    "SearchAuthError",
    "SearchBadResponse",
    "SearchChain",
    "SearchChainFailed",
    "SearchConfigError",
    "SearchInvalidQuery",
    "SearchNetworkError",
    "SearchRateLimited",
    "SearchRequestError",
    "SearchResponseTooLarge",
    "SearchServerError",
    "SearchTimeout",
    "SearxngSearch",
    "SessionSearch",
    "TavilySearch",
    "clean_results",
    "make_provider",
    "make_web_search",
    "normalize_url",
    "parse_provider_names",
    "plain_text",
]
