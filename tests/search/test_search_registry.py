"""make_web_search: names, chains, missing keys; failover; the shared TTL cache; the session budget."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
import respx
from conftest import make_settings

from rag.errors import ConfigError, SearchError
from rag.i18n import Msg
from rag.schemas import SearchOutcome, SearchResult, WebSearch
from rag.search import (
    BudgetExceeded,
    CachedWebSearch,
    SearchAuthError,
    SearchChain,
    SearchChainFailed,
    SearchServerError,
    SessionSearch,
    make_web_search,
)
from rag.testing.search_stubs import bocha_page, bocha_response

BOCHA_URL = "https://api.bochaai.com/v1/web-search"
TAVILY_URL = "https://api.tavily.com/search"
KEYS = {"bocha_api_key": "sk-bocha-secret-1", "tavily_api_key": "tvly-secret-2"}


def tavily_body(n: int = 2) -> dict[str, Any]:
    return {"query": "q", "results": [{"title": f"T{i}", "url": f"https://t{i}.example/", "content": f"tavily {i}",
                                       "score": 0.5} for i in range(n)]}


# ---------------------------------------------------------------- make_web_search


@pytest.mark.parametrize("value", ["none", "", "  ", "NONE", " , "])
def test_none_or_empty_gives_no_web_search(value):
    assert make_web_search(make_settings(search_provider=value)) is None


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ConfigError) as info:
        make_web_search(make_settings(search_provider="bocha,googol"))
    message = str(info.value)
    assert "'googol'" in message
    for name in ("bocha", "tavily", "searxng", "duckduckgo", "none"):
        assert name in message


def test_none_inside_a_chain_is_rejected():
    with pytest.raises(ConfigError, match="none"):
        make_web_search(make_settings(search_provider="bocha,none", **KEYS))


@pytest.mark.parametrize(
    ("provider", "env"),
    [("bocha", "BOCHA_API_KEY"), ("tavily", "TAVILY_API_KEY"), ("searxng", "SEARXNG_URL"),
     ("duckduckgo,bocha", "BOCHA_API_KEY")],
)
def test_missing_key_fails_at_construction_naming_the_env_var(provider, env):
    with pytest.raises(ConfigError, match=env):
        make_web_search(make_settings(search_provider=provider))


def test_blank_key_counts_as_missing():
    with pytest.raises(ConfigError, match="BOCHA_API_KEY"):
        make_web_search(make_settings(search_provider="bocha", bocha_api_key="   "))


@pytest.mark.parametrize(("field", "env"), [("bocha_api_url", "BOCHA_API_URL"), ("searxng_url", "SEARXNG_URL")])
def test_non_http_urls_are_config_errors(field, env):
    provider = "bocha" if field == "bocha_api_url" else "searxng"
    with pytest.raises(ConfigError, match=env):
        make_web_search(make_settings(search_provider=provider, **{field: "file:///etc/passwd"}, **KEYS))


def test_key_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("SEARCH_PROVIDER", "Tavily")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-from-env")
    ws = make_web_search(make_settings())
    assert ws is not None and ws.name == "tavily"
    assert "tvly-from-env" not in repr(ws)


def test_single_provider_and_chain_names_and_protocol():
    single = make_web_search(make_settings(search_provider="bocha", **KEYS))
    chain = make_web_search(make_settings(search_provider=" Bocha , tavily,bocha ", **KEYS))
    assert single is not None and chain is not None
    assert single.name == "bocha"
    assert chain.name == "bocha,tavily"  # duplicates dropped, order kept
    assert isinstance(single, WebSearch) and isinstance(chain, WebSearch)
    assert isinstance(chain, CachedWebSearch) and isinstance(chain.inner, SearchChain)


def test_importing_builds_no_client_and_loads_no_ddgs():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, httpx\n"
        "made = []\n"
        "orig = httpx.Client.__init__\n"
        "def init(self, *a, **k):\n"
        "    made.append(1); orig(self, *a, **k)\n"
        "httpx.Client.__init__ = init\n"
        "import rag.search, rag.testing.search_stubs\n"
        "print(len(made), 'ddgs.ddgs' in sys.modules)\n"
        "from rag.config import Settings\n"
        "rag.search.make_web_search(Settings(_env_file=None, search_provider='bocha', bocha_api_key='k-123456'))\n"
        "print(len(made))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "False", "1"]


# ---------------------------------------------------------------- failover


@respx.mock
def test_chain_fails_over_and_says_who_answered():
    bocha = respx.post(BOCHA_URL).mock(return_value=httpx.Response(401, json={"code": 401, "msg": "Invalid API KEY"}))
    tavily = respx.post(TAVILY_URL).mock(return_value=httpx.Response(200, json=tavily_body()))
    ws = make_web_search(make_settings(search_provider="bocha,tavily", **KEYS))
    outcome = ws.search_detailed("q", 5)
    assert bocha.call_count == 1 and tavily.call_count == 1
    assert outcome.provider == "tavily"
    assert [r.provider for r in outcome.results] == ["tavily", "tavily"]
    assert str(outcome.notes[0]).startswith("bocha failed (SearchAuthError): bocha: the key in BOCHA_API_KEY was rejected")
    assert "tavily answered after 1 failure(s)" in map(str, outcome.notes)
    assert KEYS["bocha_api_key"] not in " ".join(map(str, outcome.notes))


@respx.mock
def test_chain_first_answers_second_untouched():
    respx.post(BOCHA_URL).mock(return_value=httpx.Response(200, json=bocha_response([
        bocha_page("B", "https://b.example/", "bocha text")])))
    tavily = respx.post(TAVILY_URL).mock(return_value=httpx.Response(200, json=tavily_body()))
    outcome = make_web_search(make_settings(search_provider="bocha,tavily", **KEYS)).search_detailed("q", 5)
    assert outcome.provider == "bocha" and tavily.call_count == 0 and outcome.notes == []


@respx.mock
def test_chain_zero_results_is_an_answer_not_a_failure():
    respx.post(BOCHA_URL).mock(return_value=httpx.Response(200, json=bocha_response([])))
    tavily = respx.post(TAVILY_URL).mock(return_value=httpx.Response(200, json=tavily_body()))
    outcome = make_web_search(make_settings(search_provider="bocha,tavily", **KEYS)).search_detailed("q", 5)
    assert outcome.results == [] and outcome.provider == "bocha" and tavily.call_count == 0


@respx.mock
def test_chain_all_failing_raises_one_typed_error_with_each_cause():
    respx.post(BOCHA_URL).mock(return_value=httpx.Response(503, text="maintenance"))
    respx.post(TAVILY_URL).mock(side_effect=httpx.ConnectError("refused"))
    ws = make_web_search(make_settings(search_provider="bocha,tavily", **KEYS))
    with pytest.raises(SearchChainFailed) as info:
        ws.search_detailed("q", 5)
    assert isinstance(info.value, SearchError)
    assert [type(e).__name__ for e in info.value.errors] == ["SearchServerError", "SearchNetworkError"]
    assert "maintenance" in str(info.value) and "refused" in str(info.value)
    assert str(info.value).startswith("bocha,tavily: every provider failed")


def test_chain_with_duckduckgo_fallback(monkeypatch):
    import ddgs

    class FakeDDGS:
        def __init__(self, **kwargs: Any) -> None:
            pass

        def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
            return [{"title": "D", "href": "https://d.example/", "body": "from ddg"}]

    monkeypatch.setattr(ddgs, "DDGS", FakeDDGS)
    with respx.mock:
        respx.post(BOCHA_URL).mock(side_effect=httpx.ReadTimeout("slow"))
        ws = make_web_search(make_settings(search_provider="bocha,duckduckgo", **KEYS))
        outcome = ws.search_detailed("q", 5)
    assert outcome.provider == "duckduckgo"
    assert [r.snippet for r in outcome.results] == ["from ddg"]
    assert any(n.startswith("bocha failed (SearchTimeout)") for n in map(str, outcome.notes))


# ---------------------------------------------------------------- cache


class CountingSearch:
    """A WebSearch double that counts calls (the provider behind the cache)."""

    def __init__(self, name: str = "fake", results: int = 3, error: SearchError | None = None) -> None:
        self.name = name
        self.calls: list[tuple[str, int]] = []
        self.n = results
        self.error = error
        self._lock = threading.Lock()

    def search(self, query: str, count: int) -> list[SearchResult]:
        with self._lock:
            self.calls.append((query, count))
        if self.error:
            raise self.error
        return [SearchResult(title=f"{query} {i}", url=f"https://r{i}.example/", snippet="s", provider=self.name)
                for i in range(min(count, self.n))]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_hit_within_ttl_miss_after():
    inner, clock = CountingSearch(), Clock()
    ws = CachedWebSearch(inner, ttl=60, clock=clock)
    first = ws.search_detailed("Sun Wukong", 3)
    clock.now += 30
    second = ws.search_detailed("  sun   WUKONG ", 2)
    assert len(inner.calls) == 1
    assert first.cached is False and second.cached is True
    assert len(second.results) == 2
    assert [str(n) for n in second.notes] == ["cache hit (fake, 30 s old)"]
    clock.now += 31
    third = ws.search_detailed("Sun Wukong", 3)
    assert third.cached is False and len(inner.calls) == 2


def test_cache_does_not_serve_a_smaller_answer_for_a_bigger_count():
    inner = CountingSearch(results=10)
    ws = CachedWebSearch(inner, ttl=60, clock=Clock())
    ws.search("q", 2)
    assert len(ws.search("q", 5)) == 5 and len(inner.calls) == 2
    # a provider that had only 3 results answers any bigger count from the cache
    few = CountingSearch(results=3)
    ws2 = CachedWebSearch(few, ttl=60, clock=Clock())
    ws2.search("q", 5)
    assert len(ws2.search("q", 8)) == 3 and len(few.calls) == 1


def test_errors_are_not_cached_and_ttl_zero_disables():
    failing = CountingSearch(error=SearchServerError("fake", "boom", 500))
    ws = CachedWebSearch(failing, ttl=60)
    for _ in range(2):
        with pytest.raises(SearchServerError):
            ws.search("q", 3)
    assert len(failing.calls) == 2
    inner = CountingSearch()
    off = CachedWebSearch(inner, ttl=0)
    off.search("q", 3)
    off.search("q", 3)
    assert len(inner.calls) == 2


def test_cache_is_bounded():
    inner = CountingSearch()
    ws = CachedWebSearch(inner, ttl=60, max_entries=2, clock=Clock())
    for q in ("a", "b", "c"):
        ws.search(q, 1)
    ws.search("a", 1)  # evicted: asked again
    ws.search("c", 1)  # still there
    assert [q for q, _ in inner.calls] == ["a", "b", "c", "a"]


def test_cache_is_thread_safe_under_concurrent_sessions():
    inner = CountingSearch()
    ws = CachedWebSearch(inner, ttl=60)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for j in range(50):
                out = ws.search_detailed(f"q{(i + j) % 5}", 3)
                assert len(out.results) == 3
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert 5 <= len(inner.calls) <= 5 * 8  # misses only while the first answers race in
    assert ws.hits + ws.misses == 400


@respx.mock
def test_make_web_search_caches_per_provider_and_query():
    route = respx.post(BOCHA_URL).mock(return_value=httpx.Response(200, json=bocha_response([
        bocha_page("B", "https://b.example/", "bocha text")])))
    ws = make_web_search(make_settings(search_provider="bocha", search_cache_ttl=100, **KEYS))
    ws.search("q", 3)
    outcome = ws.search_detailed("q", 3)
    ws.search("other", 3)
    assert route.call_count == 2 and outcome.cached and outcome.provider == "bocha"


# ---------------------------------------------------------------- session budget


def test_budget_counts_searches_and_refuses_past_it():
    inner = CountingSearch()
    session = SessionSearch(CachedWebSearch(inner, ttl=0), budget=2)
    assert [str(n) for n in session.search_detailed("a", 3).notes] == ["budget 1/2"]
    assert [str(n) for n in session.search_detailed("b", 3).notes] == ["budget 2/2"]
    with pytest.raises(BudgetExceeded) as info:
        session.search_detailed("c", 3)
    assert isinstance(info.value, SearchError)
    assert "budget is used up (2/2 searches)" in str(info.value) and "SEARCH_BUDGET" in str(info.value)
    assert len(inner.calls) == 2 and session.remaining == 0


def test_cache_hits_are_free_even_past_the_budget():
    inner = CountingSearch()
    shared = CachedWebSearch(inner, ttl=600)
    session = SessionSearch(shared, budget=1)
    session.search("a", 3)
    hit = session.search_detailed("a", 3)
    assert hit.cached and [str(n) for n in hit.notes] == ["cache hit (fake, 0 s old)", "budget 1/1 (cache hit, not counted)"]
    with pytest.raises(BudgetExceeded):
        session.search("b", 3)
    assert len(inner.calls) == 1


def test_failed_searches_count_and_sessions_are_independent():
    failing = CountingSearch(error=SearchAuthError("fake", "bad key"))
    shared = CachedWebSearch(failing, ttl=600)
    one, two = SessionSearch(shared, budget=1), SessionSearch(shared, budget=1)
    with pytest.raises(SearchAuthError):
        one.search("a", 3)
    with pytest.raises(BudgetExceeded):
        one.search("a", 3)
    with pytest.raises(SearchAuthError):
        two.search("a", 3)
    assert one.used == 1 and two.used == 1


def test_session_over_a_plain_websearch_and_unlimited_budget():
    class Plain:
        name = "plain"

        def search(self, query: str, count: int) -> list[SearchResult]:
            return []

    session = SessionSearch(Plain(), budget=None)
    outcome = session.search_detailed("q", 3)
    assert outcome == SearchOutcome(results=[], provider="plain", notes=[Msg.of("search.budget_unlimited", used=1)])
    assert [m.code for m in outcome.notes] == ["search.budget_unlimited"]
    assert session.name == "plain" and isinstance(session, WebSearch)


def test_budget_is_exact_under_concurrency():
    inner = CountingSearch()
    session = SessionSearch(CachedWebSearch(inner, ttl=0), budget=7)
    refused: list[BudgetExceeded] = []

    def worker(i: int) -> None:
        for j in range(5):
            try:
                session.search(f"q{i}-{j}", 1)
            except BudgetExceeded as exc:
                refused.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(inner.calls) == 7 and len(refused) == 13 and session.used == 7
