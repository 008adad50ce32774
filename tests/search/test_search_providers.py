"""Bocha, Tavily and SearXNG over respx-mocked HTTP: success, every error class, empty and
malformed bodies, Retry-After, and keys that never leak."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx
from conftest import make_settings

from rag.errors import SearchError
from rag.search import (
    SearchAuthError,
    SearchBadResponse,
    SearchConfigError,
    SearchInvalidQuery,
    SearchNetworkError,
    SearchRateLimited,
    SearchRequestError,
    SearchServerError,
    SearchTimeout,
    make_provider,
)
from rag.testing.search_stubs import bocha_page, bocha_response

BOCHA_KEY = "sk-bocha-0123456789abcdef"
TAVILY_KEY = "tvly-dev-0123456789abcdef"
BOCHA_URL = "https://api.bochaai.com/v1/web-search"
TAVILY_URL = "https://api.tavily.com/search"
SEARXNG_BASE = "http://searx.local:8888"
SEARXNG_URL = SEARXNG_BASE + "/search"


def bocha_success() -> dict[str, Any]:
    return bocha_response(
        [
            bocha_page(
                "三打白骨精 - 百度百科",
                "https://baike.baidu.com/item/三打白骨精",
                "《三打白骨精》出自《西游记》第二十七回<em>尸魔三戏唐三藏</em>，圣僧恨逐美猴王。",
                siteName="百度百科",
                datePublished="2023-05-04T10:00:00+08:00",
            ),
            bocha_page(
                "86版西游记 第7集",
                "https://www.example.cn/xiyouji/ep7?utm_source=bocha",
                "1986年央视版《西游记》第七集《计收猪八戒》……",
                siteName="example",
            ),
        ],
        query="三打白骨精",
    )


def tavily_success() -> dict[str, Any]:
    return {
        "query": "三打白骨精",
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": [
            {
                "title": "Journey to the West, chapter 27",
                "url": "https://en.wikipedia.org/wiki/Journey_to_the_West",
                "content": "In chapter 27 the White Bone Demon tricks Tang Sanzang three times.",
                "score": 0.98,
                "raw_content": None,
            },
            {
                "title": "Episode list (1986 TV series)",
                "url": "https://example.org/1986-series",
                "content": "Episode 7 ... &amp; more",
                "score": 0.71,
                "raw_content": None,
            },
        ],
        "response_time": 1.09,
    }


def searxng_success() -> dict[str, Any]:
    return {
        "query": "三打白骨精",
        "number_of_results": 0,
        "results": [
            {
                "url": "https://zh.wikipedia.org/wiki/西遊記",
                "title": "西遊記 - 維基百科",
                "content": "第二十七回 屍魔三戲唐三藏 聖僧恨逐美猴王",
                "engine": "wikipedia",
                "parsed_url": ["https", "zh.wikipedia.org", "/wiki/西遊記", "", "", ""],
                "template": "default.html",
                "engines": ["wikipedia", "bing"],
                "positions": [1, 3],
                "publishedDate": None,
                "score": 4.0,
                "category": "general",
            },
            {
                "url": "https://example.org/episodes",
                "title": "86版《西游记》分集剧情",
                "content": "第7集 计收猪八戒",
                "engine": "bing",
                "publishedDate": "2021-02-03T00:00:00",
                "score": 1.0,
                "category": "general",
            },
        ],
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [["google", "timeout"]],
    }


@dataclass
class Spec:
    name: str
    method: str
    url: str
    success: Callable[[], dict[str, Any]]
    empty: dict[str, Any]
    key: str | None
    settings: dict[str, Any]


SPECS = [
    Spec("bocha", "POST", BOCHA_URL, bocha_success, bocha_response([]), BOCHA_KEY, {"bocha_api_key": BOCHA_KEY}),
    Spec("tavily", "POST", TAVILY_URL, tavily_success, {"query": "q", "results": []}, TAVILY_KEY,
         {"tavily_api_key": TAVILY_KEY}),
    Spec("searxng", "GET", SEARXNG_URL, searxng_success, {"query": "q", "results": [], "unresponsive_engines": []}, None,
         {"searxng_url": SEARXNG_BASE}),
]
IDS = [s.name for s in SPECS]


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def build(spec: Spec, sleeps: Sleeps | None = None, **overrides: Any):
    settings = make_settings(search_provider=spec.name, search_timeout=2.0, **{**spec.settings, **overrides})
    return make_provider(spec.name, settings, sleep=sleeps if sleeps is not None else Sleeps())


def route(mock: respx.MockRouter, spec: Spec) -> respx.Route:
    return mock.route(method=spec.method, url__startswith=spec.url)


@pytest.fixture
def mock():
    with respx.mock(assert_all_called=False) as router:
        yield router


# ---------------------------------------------------------------- success


def test_bocha_success_maps_fields_and_sends_the_documented_request(mock):
    r = route(mock, SPECS[0]).mock(return_value=httpx.Response(200, json=bocha_success()))
    provider = build(SPECS[0])
    outcome = provider.search_detailed("三打白骨精", 5)
    request = r.calls.last.request
    assert request.headers["Authorization"] == f"Bearer {BOCHA_KEY}"
    import json

    assert json.loads(request.content) == {"query": "三打白骨精", "freshness": "noLimit", "summary": True, "count": 5}
    assert outcome.provider == "bocha"
    assert len(outcome.results) == 2  # results present -> results returned (the JS bug said "no results")
    first = outcome.results[0]
    assert first.title == "三打白骨精 - 百度百科"
    assert first.url == "https://baike.baidu.com/item/三打白骨精"
    # the summary (not the shorter snippet) with its HTML tags stripped to plain text
    assert first.snippet == "《三打白骨精》出自《西游记》第二十七回尸魔三戏唐三藏，圣僧恨逐美猴王。"
    assert first.site_name == "百度百科" and first.date == "2023-05-04" and first.provider == "bocha"
    assert outcome.results[1].site_name == "example"


def test_bocha_uses_snippet_when_summary_is_blank(mock):
    page = bocha_page("t", "https://a.example/x", "ignored")
    page["summary"] = "   "
    page["snippet"] = "the snippet"
    route(mock, SPECS[0]).mock(return_value=httpx.Response(200, json=bocha_response([page])))
    assert [r.snippet for r in build(SPECS[0]).search("q", 3)] == ["the snippet"]


def test_tavily_success(mock):
    r = route(mock, SPECS[1]).mock(return_value=httpx.Response(200, json=tavily_success()))
    results = build(SPECS[1]).search("White Bone Demon", 4)
    body = __import__("json").loads(r.calls.last.request.content)
    assert body["query"] == "White Bone Demon" and body["max_results"] == 4 and body["search_depth"] == "basic"
    assert r.calls.last.request.headers["Authorization"] == f"Bearer {TAVILY_KEY}"
    assert [x.url for x in results] == ["https://en.wikipedia.org/wiki/Journey_to_the_West", "https://example.org/1986-series"]
    assert results[0].site_name == "en.wikipedia.org"
    assert results[1].snippet == "Episode 7 ... & more"
    assert {x.provider for x in results} == {"tavily"}


def test_searxng_success_and_unresponsive_engines_note(mock):
    r = route(mock, SPECS[2]).mock(return_value=httpx.Response(200, json=searxng_success()))
    outcome = build(SPECS[2]).search_detailed("三打白骨精", 8)
    params = r.calls.last.request.url.params
    assert params["q"] == "三打白骨精" and params["format"] == "json"
    assert "Authorization" not in r.calls.last.request.headers
    assert [x.title for x in outcome.results] == ["西遊記 - 維基百科", "86版《西游记》分集剧情"]
    assert outcome.results[0].date == "" and outcome.results[1].date == "2021-02-03"
    assert any("unresponsive engines: google timeout" in n for n in map(str, outcome.notes))


def test_searxng_url_with_trailing_search_path_is_not_doubled(mock):
    r = mock.get(url__startswith=SEARXNG_URL).mock(return_value=httpx.Response(200, json=searxng_success()))
    build(SPECS[2], searxng_url=SEARXNG_BASE + "/search/").search("q", 2)
    assert r.calls.last.request.url.path == "/search"


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_count_is_capped_by_the_setting_and_the_request(mock, spec):
    many = {
        "bocha": bocha_response([bocha_page(f"t{i}", f"https://s{i}.example/p", f"text {i}") for i in range(12)]),
        "tavily": {"results": [{"title": f"t{i}", "url": f"https://s{i}.example/p", "content": f"text {i}"}
                               for i in range(12)]},
        "searxng": {"results": [{"title": f"t{i}", "url": f"https://s{i}.example/p", "content": f"text {i}"}
                                for i in range(12)]},
    }[spec.name]
    route(mock, spec).mock(return_value=httpx.Response(200, json=many))
    provider = build(spec, search_count=5)
    assert len(provider.search("q", 3)) == 3
    assert len(provider.search("q", 50)) == 5


# ---------------------------------------------------------------- empty, malformed


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_zero_results_is_not_an_error(mock, spec):
    route(mock, spec).mock(return_value=httpx.Response(200, json=spec.empty))
    outcome = build(spec).search_detailed("nothing matches this", 5)
    assert outcome.results == []
    assert outcome.provider == spec.name
    assert f"{spec.name}: no results" in map(str, outcome.notes)


def test_bocha_without_webpages_is_zero_results(mock):
    body = bocha_response([])
    del body["data"]["webPages"]
    route(mock, SPECS[0]).mock(return_value=httpx.Response(200, json=body))
    assert build(SPECS[0]).search("q", 3) == []


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_non_json_body(mock, spec):
    route(mock, spec).mock(
        return_value=httpx.Response(200, text="<html><body>Bad gateway page</body></html>",
                                    headers={"Content-Type": "text/html"})
    )
    with pytest.raises(SearchBadResponse) as info:
        build(spec).search("q", 3)
    message = str(info.value)
    assert message.startswith(f"{spec.name}: ")
    assert "not JSON (text/html)" in message and "Bad gateway page" in message


WRONG_SHAPES = {
    "bocha": [[1, 2], {"code": 200, "msg": None}, {"data": []}, {"data": {"webPages": "x"}},
              {"data": {"webPages": {"value": {"a": 1}}}}, {"data": {"webPages": {"value": ["a", "b"]}}}],
    "tavily": [[1], {"answer": "x"}, {"results": "x"}, {"results": [1, 2]}],
    "searxng": ["just a string", {"query": "q"}, {"results": {"url": "x"}}, {"results": [None]}],
}


@pytest.mark.parametrize(
    ("spec", "body"), [(s, b) for s in SPECS for b in WRONG_SHAPES[s.name]],
    ids=[f"{s.name}-{i}" for s in SPECS for i in range(len(WRONG_SHAPES[s.name]))],
)
def test_wrong_shape_json(mock, spec, body):
    route(mock, spec).mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(SearchBadResponse, match="unexpected shape|instead of results"):
        build(spec).search("q", 3)


def test_items_without_usable_url_are_skipped_not_fatal(mock):
    pages = [bocha_page("no url", "", "x"), bocha_page("js", "javascript:alert(1)", "x"),
             bocha_page("ok", "https://ok.example/", "fine")]
    route(mock, SPECS[0]).mock(return_value=httpx.Response(200, json=bocha_response(pages)))
    assert [r.title for r in build(SPECS[0]).search("q", 5)] == ["ok"]


# ---------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize("spec", SPECS[:2], ids=IDS[:2])
@pytest.mark.parametrize("status", [401, 403])
def test_keyed_provider_auth_errors_name_the_env_var(mock, spec, status):
    route(mock, spec).mock(return_value=httpx.Response(status, json={"code": status, "msg": "Invalid API KEY"}))
    with pytest.raises(SearchAuthError) as info:
        build(spec).search("q", 3)
    message = str(info.value)
    assert f"{spec.name.upper()}_API_KEY" in message and f"HTTP {status}" in message
    assert "Invalid API KEY" in message
    assert info.value.provider == spec.name


def test_bocha_403_mentions_the_balance(mock):
    route(mock, SPECS[0]).mock(return_value=httpx.Response(403, json={"code": 403, "msg": "余额不足"}))
    with pytest.raises(SearchAuthError, match="余额不足.*balance"):
        build(SPECS[0]).search("q", 3)


def test_searxng_403_says_json_output_is_not_enabled(mock):
    route(mock, SPECS[2]).mock(return_value=httpx.Response(403, text="403 Forbidden"))
    with pytest.raises(SearchConfigError, match="JSON output is not enabled"):
        build(SPECS[2]).search("q", 3)


def test_bocha_error_code_inside_a_200_body(mock):
    route(mock, SPECS[0]).mock(
        return_value=httpx.Response(200, json={"code": 401, "log_id": "x", "msg": "Invalid API KEY", "data": None})
    )
    with pytest.raises(SearchAuthError, match="BOCHA_API_KEY"):
        build(SPECS[0]).search("q", 3)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_429_with_retry_after_is_retried_once_then_succeeds(mock, spec):
    r = route(mock, spec).mock(side_effect=[
        httpx.Response(429, headers={"Retry-After": "2"}, json={"msg": "slow down"}),
        httpx.Response(200, json=spec.success()),
    ])
    sleeps = Sleeps()
    outcome = build(spec, sleeps).search_detailed("q", 5)
    assert sleeps == [2.0]
    assert r.call_count == 2
    assert len(outcome.results) == 2
    assert any("retried once after 2 s" in n for n in map(str, outcome.notes))


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_429_twice_raises_rate_limited_after_one_retry(mock, spec):
    r = route(mock, spec).mock(return_value=httpx.Response(429, headers={"Retry-After": "1"}, json={"msg": "quota"}))
    sleeps = Sleeps()
    with pytest.raises(SearchRateLimited) as info:
        build(spec, sleeps).search("q", 5)
    assert r.call_count == 2 and sleeps == [1.0]
    assert info.value.retry_after == 1.0
    assert "HTTP 429" in str(info.value) and "quota" in str(info.value)


def test_429_with_a_long_retry_after_is_not_waited_for(mock):
    r = route(mock, SPECS[0]).mock(return_value=httpx.Response(429, headers={"Retry-After": "3600"}))
    sleeps = Sleeps()
    with pytest.raises(SearchRateLimited, match="retry after 3600 s"):
        build(SPECS[0], sleeps).search("q", 5)
    assert sleeps == [] and r.call_count == 1


def test_429_without_retry_after_is_not_retried(mock):
    r = route(mock, SPECS[1]).mock(return_value=httpx.Response(429, text=""))
    sleeps = Sleeps()
    with pytest.raises(SearchRateLimited):
        build(SPECS[1], sleeps).search("q", 5)
    assert sleeps == [] and r.call_count == 1


def test_429_retry_after_as_http_date(mock):
    from datetime import datetime, timedelta, timezone
    from email.utils import format_datetime

    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=5), usegmt=True)
    route(mock, SPECS[2]).mock(side_effect=[httpx.Response(429, headers={"Retry-After": when}),
                                             httpx.Response(200, json=searxng_success())])
    sleeps = Sleeps()
    assert len(build(SPECS[2], sleeps).search("q", 5)) == 2
    assert len(sleeps) == 1 and 3.0 <= sleeps[0] <= 5.0


@pytest.mark.parametrize("status", [432, 433])
def test_tavily_plan_limit_is_rate_limited(mock, status):
    route(mock, SPECS[1]).mock(return_value=httpx.Response(status, json={"detail": {"error": "plan limit"}}))
    with pytest.raises(SearchRateLimited, match="usage limit.*plan limit"):
        build(SPECS[1]).search("q", 3)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_carries_a_short_body_excerpt(mock, spec, status):
    body = "upstream exploded: " + "x" * 1000
    route(mock, spec).mock(return_value=httpx.Response(status, text=body))
    with pytest.raises(SearchServerError) as info:
        build(spec).search("q", 3)
    message = str(info.value)
    assert f"HTTP {status}" in message and "upstream exploded" in message
    assert len(message) < 300
    assert info.value.status == status


def test_tavily_json_error_detail_is_extracted(mock):
    route(mock, SPECS[1]).mock(return_value=httpx.Response(400, json={"detail": {"error": "query is too long"}}))
    with pytest.raises(SearchRequestError, match="HTTP 400.*query is too long"):
        build(SPECS[1]).search("q", 3)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_timeout(mock, spec):
    route(mock, spec).mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(SearchTimeout, match=r"no answer within 2 s"):
        build(spec).search("q", 3)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_network_error(mock, spec):
    route(mock, spec).mock(side_effect=httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(SearchNetworkError, match="could not reach .*Connection refused"):
        build(spec).search("q", 3)


def test_every_error_is_a_search_error_subclass():
    for cls in (SearchAuthError, SearchBadResponse, SearchConfigError, SearchNetworkError, SearchRateLimited,
                SearchRequestError, SearchServerError, SearchTimeout, SearchInvalidQuery):
        assert issubclass(cls, SearchError)


def test_empty_query_is_a_typed_error_without_a_request(mock):
    r = route(mock, SPECS[0]).mock(return_value=httpx.Response(200, json=bocha_success()))
    with pytest.raises(SearchInvalidQuery):
        build(SPECS[0]).search("   ", 3)
    assert r.call_count == 0


# ---------------------------------------------------------------- secrets


@pytest.mark.parametrize("spec", SPECS[:2], ids=IDS[:2])
def test_key_never_appears_in_errors_logs_or_repr(mock, spec, caplog):
    caplog.set_level(logging.DEBUG)
    provider = build(spec)
    key = spec.key
    assert key not in repr(provider)
    bodies = [
        httpx.Response(401, json={"msg": f"key {key} is invalid"}),
        httpx.Response(500, text=f"echo Authorization: Bearer {key}"),
        httpx.Response(200, text=f"<html>{key}</html>"),
        httpx.Response(429, json={"message": f"too many for {key}"}),
        httpx.Response(400, json={"detail": {"error": f"bad {key}"}}),
    ]
    errors: list[str] = []
    for body in bodies:
        route(mock, spec).mock(return_value=body)
        with pytest.raises(SearchError) as info:
            provider.search("q", 3)
        errors.append(str(info.value))
    route(mock, spec).mock(side_effect=httpx.ConnectError(f"refused for {key}"))
    with pytest.raises(SearchNetworkError) as info:
        provider.search("q", 3)
    errors.append(str(info.value))
    for message in errors:
        assert key not in message
        assert "***" in message
    assert key not in caplog.text


def test_searxng_url_credentials_are_redacted(mock):
    route(mock, SPECS[2]).mock(side_effect=httpx.ConnectError("refused"))
    provider = build(SPECS[2], searxng_url="http://admin:hunter2secret@searx.local:8888")
    with pytest.raises(SearchNetworkError) as info:
        provider.search("q", 3)
    assert "hunter2secret" not in str(info.value) and "searx.local" in str(info.value)


def test_an_unexpected_exception_while_parsing_is_still_typed(mock, monkeypatch):
    from rag.search import BochaSearch

    route(mock, SPECS[0]).mock(return_value=httpx.Response(200, json=bocha_success()))

    def broken(self, data):
        raise KeyError(f"oops {BOCHA_KEY}")

    monkeypatch.setattr(BochaSearch, "_check_body_code", broken)
    with pytest.raises(SearchBadResponse) as info:
        build(SPECS[0]).search("q", 3)
    assert "unexpected KeyError" in str(info.value) and BOCHA_KEY not in str(info.value)
