"""DuckDuckGo through ``ddgs``: mocked (no internet), every ddgs exception becomes a typed error."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_settings
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from rag.search import (
    DuckDuckGoSearch,
    SearchBadResponse,
    SearchNetworkError,
    SearchRateLimited,
    SearchTimeout,
    make_provider,
)

DDGS_RESULTS = [
    {"title": "Journey to the West - Wikipedia", "href": "https://en.wikipedia.org/wiki/Journey_to_the_West",
     "body": "Journey to the West is a Chinese novel published in the 16th century ..."},
    {"title": "Journey to the West (1986 TV series)", "href": "https://en.wikipedia.org/wiki/Journey_to_the_West_(1986_TV_series)/",
     "body": "A Chinese television series adapted from the classic novel."},
    {"title": "dup", "href": "https://www.en.wikipedia.org/wiki/Journey_to_the_West#History", "body": "duplicate"},
    {"title": "empty body", "href": "https://empty.example/", "body": ""},
]


class FakeDDGS:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def text(self, query: str, **kwargs: Any) -> Any:
        self.calls.append((query, kwargs))
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def provider_with(outcome: Any, **kw: Any) -> tuple[DuckDuckGoSearch, FakeDDGS]:
    fake = FakeDDGS(outcome)
    return DuckDuckGoSearch(ddgs_factory=lambda: fake, timeout=3.0, **kw), fake


def test_success_maps_href_body_and_cleans():
    provider, fake = provider_with(DDGS_RESULTS, max_count=8)
    outcome = provider.search_detailed("Journey to the West", 5)
    assert fake.calls == [("Journey to the West", {"region": "wt-wt", "max_results": 5, "backend": "duckduckgo"})]
    assert outcome.provider == "duckduckgo"
    assert [r.title for r in outcome.results] == ["Journey to the West - Wikipedia", "Journey to the West (1986 TV series)"]
    assert outcome.results[0].site_name == "en.wikipedia.org"
    assert {r.provider for r in outcome.results} == {"duckduckgo"}


def test_no_results_exception_is_zero_results():
    provider, _ = provider_with(DDGSException("No results found."))
    outcome = provider.search_detailed("zzzz", 5)
    assert outcome.results == [] and "duckduckgo: no results" in map(str, outcome.notes)


def test_empty_list_is_zero_results():
    provider, _ = provider_with([])
    assert provider.search("zzzz", 5) == []


@pytest.mark.parametrize(
    ("exc", "expected", "text"),
    [
        (RatelimitException("https://html.duckduckgo.com/html 202 Ratelimit"), SearchRateLimited, "rate limited"),
        (TimeoutException("https://lite.duckduckgo.com/lite/ timed out"), SearchTimeout, "no answer within 3 s"),
        (DDGSException("operation timed out"), SearchTimeout, "no answer within 3 s"),
        (DDGSException("ConnectError: dns error"), SearchNetworkError, "dns error"),
        (RuntimeError("boom inside ddgs"), SearchNetworkError, "RuntimeError"),
    ],
)
def test_ddgs_exceptions_become_typed_errors(exc, expected, text):
    provider, _ = provider_with(exc)
    with pytest.raises(expected) as info:
        provider.search("q", 3)
    assert text in str(info.value)
    assert info.value.provider == "duckduckgo"
    assert str(info.value).startswith("duckduckgo: ")


def test_wrong_shape_from_ddgs():
    provider, _ = provider_with({"not": "a list"})
    with pytest.raises(SearchBadResponse):
        provider.search("q", 3)


def test_default_factory_builds_ddgs_with_the_timeout(monkeypatch):
    import ddgs

    made: list[dict[str, Any]] = []

    class RecordingDDGS(FakeDDGS):
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)
            super().__init__(DDGS_RESULTS[:1])

    monkeypatch.setattr(ddgs, "DDGS", RecordingDDGS)
    provider = make_provider("duckduckgo", make_settings(search_timeout=4.0, search_count=2))
    assert made == []  # nothing built (and nothing reached) before the first search
    results = provider.search("q", 10)
    assert made == [{"timeout": 4}]
    assert len(results) == 1
