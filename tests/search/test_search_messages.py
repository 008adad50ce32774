"""The search's messages are codes: its errors, the notes of an outcome (budget, cache, failover) and
the ConfigErrors of the registry, in both languages; the provider table feeds the names."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
import pytest
import respx
from conftest import make_settings

from rag.errors import ConfigError, SearchError, SearchTimeout
from rag.i18n import en, text, zh
from rag.schemas import SearchOutcome, SearchResult
from rag.search import (
    CachedWebSearch,
    SearchChain,
    SearchChainFailed,
    SearchServerError,
    SessionSearch,
)
from rag.search import notes as search_notes
from rag.search.registry import REGISTRY, VALID_NAMES, choices, make_provider, make_web_search
from rag.testing.search_stubs import bocha_response

BOCHA_URL = "https://api.bochaai.com/v1/web-search"
SEARCH_DIR = Path(__file__).resolve().parents[2] / "rag" / "search"


def _result(i: int = 0) -> SearchResult:
    return SearchResult(title=f"T{i}", url=f"https://r{i}.example/", snippet=f"snippet {i}", provider="fake")


class Fake:
    name = "fake"

    def __init__(self, error: SearchError | None = None) -> None:
        self.error = error

    def search(self, query: str, count: int) -> list[SearchResult]:
        if self.error is not None:
            raise self.error
        return [_result()]


def test_every_search_code_used_in_the_code_is_in_both_catalogues():
    used: set[str] = set()
    for path in [*SEARCH_DIR.glob("*.py"), SEARCH_DIR.parent / "errors.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("search."):
                used.add(node.value)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "_msg"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                used.add(f"search.{node.args[0].value}")
    used -= {"search.", "search.formats"}  # the prefix of ``_msg``; a SearXNG setting named in a message
    missing = {code for code in used if code not in en.SEARCH or code not in zh.SEARCH}
    assert used and not missing, missing


def test_session_notes_are_codes_and_render_in_chinese():
    session = SessionSearch(CachedWebSearch(Fake(), ttl=60), budget=20)
    first = session.search_detailed("q", 3)
    assert [str(n) for n in first.notes] == ["budget 1/20"]
    assert [m.code for m in first.notes] == ["search.budget"]
    assert text("zh", first.notes[0]) == "搜索额度 1/20"
    again = session.search_detailed("q", 3)
    codes = [m.code for m in again.notes]
    assert codes == ["search.cache_hit", "search.budget_free"]
    assert str(again.notes[1]) == "budget 1/20 (cache hit, not counted)"
    assert text("zh", again.notes[0]).startswith("缓存命中（fake，")


def test_unlimited_budget_and_no_results_notes():
    assert str(search_notes.budget(3, None)) == "budget 3/unlimited"
    assert text("zh", search_notes.no_results()) == "没有结果"
    assert str(search_notes.no_results("bocha")) == "bocha: no results"
    assert search_notes.is_no_results(search_notes.no_results("bocha"))


def test_an_outcomes_notes_are_messages_and_survive_json():
    outcome = SearchOutcome(results=[], provider="x", notes=[search_notes.no_results("x")])
    again = SearchOutcome.model_validate_json(outcome.model_dump_json())
    assert again == outcome and again.notes[0].code == "search.provider_no_results"


def test_failover_notes_carry_the_error_message():
    chain = SearchChain([Fake(SearchServerError("one", "down", 503)), Fake()])
    outcome = chain.search_detailed("q", 3)
    codes = [m.code for m in outcome.notes]
    assert codes == ["search.provider_failed", "search.answered_after"]
    assert str(outcome.notes[0]) == "fake failed (SearchServerError): one: down"
    assert text("zh", outcome.notes[1]) == "1 次失败后由 fake 给出了结果"


def test_chain_failure_is_a_msg_with_each_error():
    errors: list[SearchError] = [SearchTimeout("a", "slow"), SearchServerError("b", "down", 500)]
    exc = SearchChainFailed("a,b", errors)
    assert exc.msg.code == "search.chain_failed" and exc.msg.level == "error"
    assert str(exc) == "a,b: every provider failed (SearchTimeout: a: slow; SearchServerError: b: down)"
    assert "所有搜索服务都失败了" in text("zh", exc.msg)


def test_the_failed_and_not_configured_notices_for_the_agent():
    failed = search_notes.failed(SearchTimeout("bocha", "slow"))
    assert failed.level == "error" and str(failed) == "web search failed: bocha: slow"
    assert text("zh", failed) == "网络搜索失败：bocha: slow"
    assert text("zh", search_notes.not_configured()) == "未配置网络搜索"


@respx.mock
def test_http_errors_are_codes_with_the_same_english():
    respx.post(BOCHA_URL).mock(return_value=httpx.Response(500, text="boom"))
    provider = make_provider("bocha", make_settings(bocha_api_key="sk-bocha-secret-1"))
    with pytest.raises(SearchServerError) as info:
        provider.search("q", 3)
    assert info.value.msg.code == "search.server_error"
    assert str(info.value) == "bocha: server error HTTP 500: boom"
    assert text("zh", info.value.msg) == "bocha：服务器错误 HTTP 500：boom"


@respx.mock
def test_provider_notes_are_codes():
    respx.post(BOCHA_URL).mock(return_value=httpx.Response(200, json=bocha_response([])))
    provider = make_provider("bocha", make_settings(bocha_api_key="sk-bocha-secret-1"))
    outcome = provider.search_detailed("q" * 500, 3)
    assert [m.code for m in outcome.notes] == ["search.query_cut", "search.provider_no_results"]


def test_the_registry_table_feeds_the_names_and_the_choices():
    names = [spec.name for spec in REGISTRY]
    assert (*names, "none") == VALID_NAMES
    assert [value for _, value in choices()] == [*names, "none"]
    assert {spec.name: spec.env for spec in REGISTRY}["searxng"] == ("SEARXNG_URL",)
    assert all(spec.cls.name == spec.name for spec in REGISTRY)
    for spec in REGISTRY:  # each key-bearing provider names the env var of its key
        assert getattr(spec.cls, "key_env", "") in {"", *spec.env}


@pytest.mark.parametrize(("value", "code"), [("googol", "search.unknown_provider"),
                                             ("bocha,none", "search.none_in_chain"),
                                             ("tavily", "search.setting_missing")])
def test_registry_config_errors_are_codes(value, code):
    with pytest.raises(ConfigError) as info:
        make_web_search(make_settings(search_provider=value, bocha_api_key="sk-bocha-secret-1"))
    assert info.value.msg.code == code and info.value.msg.level == "error"
    assert text("zh", info.value.msg) != str(info.value)


def test_make_provider_rejects_an_unknown_name_with_a_code():
    with pytest.raises(ConfigError) as info:
        make_provider("googol", make_settings())
    assert info.value.msg.code == "search.unknown_provider"
