"""The real BochaSearch with a real httpx client against a loopback server speaking Bocha's
format (127.0.0.1, free port): success, timeout, errors, no key in logs, and the whole graph."""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from conftest import ev, make_settings, responder

from rag.agent.deps import Deps
from rag.agent.events import NodeFinished, TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.schemas import Passage
from rag.search import (
    BochaSearch,
    HttpOptions,
    SearchAuthError,
    SearchBadResponse,
    SearchNetworkError,
    SearchRateLimited,
    SearchServerError,
    SearchTimeout,
    SessionSearch,
    make_web_search,
)
from rag.testing.fakes import FakeRetriever, ScriptedChatModel
from rag.testing.search_stubs import BochaStubServer, bocha_page

KEY = "sk-loopback-7f3e9a1b2c4d"

PAGES = [
    bocha_page(
        "86版西游记 第七集 三打白骨精",
        "https://tv.example.cn/xiyouji/ep7",
        "1986年央视版电视剧《西游记》第七集为<em>《三打白骨精》</em>。",
        siteName="电视剧百科",
        datePublished="2019-01-05T08:00:00+08:00",
    ),
    bocha_page("重复", "https://tv.example.cn/xiyouji/ep7/", "the same page again"),
    bocha_page("原著第二十七回", "https://book.example.org/27", "第二十七回 尸魔三戏唐三藏 圣僧恨逐美猴王"),
]


def bocha_settings(stub: BochaStubServer, **overrides):
    values = {"search_provider": "bocha", "bocha_api_key": KEY, "bocha_api_url": stub.url, "search_timeout": 3.0}
    values.update(overrides)
    return make_settings(**values)


def test_real_client_against_loopback_bocha(caplog):
    caplog.set_level(logging.DEBUG)
    with BochaStubServer(pages=PAGES) as stub:
        ws = make_web_search(bocha_settings(stub))
        outcome = ws.search_detailed("三打白骨精 第几集", 5)
        ws.close()
    assert len(stub.requests) == 1
    request = stub.requests[0]
    assert request.method == "POST" and request.path == "/v1/web-search"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == {"query": "三打白骨精 第几集", "freshness": "noLimit", "summary": True, "count": 5}
    assert outcome.provider == "bocha" and outcome.cached is False
    assert [r.url for r in outcome.results] == ["https://tv.example.cn/xiyouji/ep7", "https://book.example.org/27"]
    assert outcome.results[0].snippet == "1986年央视版电视剧《西游记》第七集为《三打白骨精》。"
    assert outcome.results[0].site_name == "电视剧百科" and outcome.results[0].date == "2019-01-05"
    assert KEY not in caplog.text  # DEBUG logs of httpx/httpcore included


def test_slow_loopback_server_hits_the_timeout():
    with BochaStubServer(pages=PAGES, delay=1.5) as stub:
        provider = BochaSearch(_key(), url=stub.url, http=HttpOptions(timeout=0.3))
        started = time.monotonic()
        with pytest.raises(SearchTimeout, match=r"no answer within 0.3 s"):
            provider.search("q", 3)
        elapsed = time.monotonic() - started
        provider.close()
    assert elapsed < 1.4


def _key():
    from pydantic import SecretStr

    return SecretStr(KEY)


@pytest.mark.parametrize(
    ("status", "raw", "headers", "error", "text"),
    [
        (401, b'{"code":401,"msg":"Invalid API KEY ' + KEY.encode() + b'"}', {}, SearchAuthError, "BOCHA_API_KEY"),
        (429, b'{"code":429,"msg":"rate limit"}', {"Retry-After": "0"}, SearchRateLimited, "HTTP 429"),
        (500, b"<html>Internal Server Error</html>", {}, SearchServerError, "Internal Server Error"),
        (200, b"<html>captive portal</html>", {}, SearchBadResponse, "not JSON"),
    ],
    ids=["401", "429", "500", "not-json"],
)
def test_loopback_error_statuses(status, raw, headers, error, text, caplog):
    caplog.set_level(logging.DEBUG)
    with BochaStubServer(status=status, raw_body=raw, headers=headers) as stub:
        provider = BochaSearch(_key(), url=stub.url, http=HttpOptions(timeout=3.0))
        with pytest.raises(error) as info:
            provider.search("q", 3)
        provider.close()
    assert text in str(info.value)
    assert KEY not in str(info.value) and KEY not in caplog.text
    if status == 429:
        assert len(stub.requests) == 2  # Retry-After: 0 honoured once


def test_undecodable_body_is_a_bad_response():
    with BochaStubServer(raw_body=b"definitely not gzip", headers={"Content-Encoding": "gzip"}) as stub:
        provider = BochaSearch(_key(), url=stub.url, http=HttpOptions(timeout=3.0))
        with pytest.raises(SearchBadResponse, match="cannot be decoded"):
            provider.search("q", 3)
        provider.close()


def test_nothing_listening_is_a_network_error():
    with BochaStubServer() as stub:
        url = stub.url
    provider = BochaSearch(_key(), url=url, http=HttpOptions(timeout=2.0))
    with pytest.raises(SearchNetworkError, match="could not reach http://127.0.0.1"):
        provider.search("q", 3)
    provider.close()


# ---------------------------------------------------------------- the whole graph

QUESTION = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"
BOOK = [Passage(id="p1", text="第二十七回 尸魔三戏唐三藏，圣僧恨逐美猴王。", book_id="b1", book_title="西游记",
                chapter_num=27, chapter_title="第二十七回 尸魔三戏唐三藏", score=0.9, source="hybrid")]


def test_whole_graph_with_loopback_bocha_as_web_search():
    model = ScriptedChatModel(responder=responder(
        evaluations=[ev(False, ["电视剧集数"], web_query="86版西游记 三打白骨精 第几集"), ev(True)],
        answer="原著第二十七回 [1]；电视剧第七集 [2]。"))
    with BochaStubServer(pages=PAGES) as stub:
        settings = bocha_settings(stub, search_budget=5)
        shared = make_web_search(settings)
        session = SessionSearch(shared, budget=settings.search_budget)
        graph = build_graph(Deps(settings=settings, llm=model, retriever=FakeRetriever(BOOK), web_search=session))
        events = list(run_turn(graph, QUESTION, thread_id=str(uuid.uuid4())))
        shared.close()
    final = events[-1]
    assert isinstance(final, TurnFinished), final
    nodes = [e.node for e in events if isinstance(e, NodeFinished)]
    assert nodes == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate", "verify_answer"]
    assert [r.body["query"] for r in stub.requests] == ["86版西游记 三打白骨精 第几集"]
    values = final.values
    (web_round,) = values["web_rounds"]
    assert web_round["provider"] == "bocha" and web_round["error"] is None
    assert "budget 1/5" in map(str, web_round["notes"])
    assert [r.url for r in values["web_results"]] == ["https://tv.example.cn/xiyouji/ep7", "https://book.example.org/27"]
    # web results reach the prompt as delimited data, numbered after the book passage
    assert "<<<WEB_RESULT 2>>>" in values["web_context"] and "[2] 86版西游记 第七集 三打白骨精" in values["web_context"]
    generate_prompt = model.calls[-1][1][1].content
    assert "https://tv.example.cn/xiyouji/ep7" in generate_prompt and "<<<END_WEB_RESULT>>>" in generate_prompt
    assert values["answer"] == "原著第二十七回 [1]；电视剧第七集 [2]。"
    assert values["answer_mode"] == "full"


def test_whole_graph_records_a_provider_failure_and_still_answers():
    model = ScriptedChatModel(responder=responder(
        evaluations=[ev(False, ["电视剧集数"], web_query="q"), ev(False, ["电视剧集数"])], answer="部分答案"))
    with BochaStubServer(status=401, raw_body=b'{"code":401,"msg":"Invalid API KEY"}') as stub:
        settings = bocha_settings(stub)
        shared = make_web_search(settings)
        graph = build_graph(Deps(settings=settings, llm=model, retriever=FakeRetriever(BOOK),
                                 web_search=SessionSearch(shared, budget=3)))
        events = list(run_turn(graph, QUESTION, thread_id=str(uuid.uuid4())))
        shared.close()
    final = events[-1]
    assert isinstance(final, TurnFinished), final
    (web_round,) = final.values["web_rounds"]
    assert "BOCHA_API_KEY" in str(web_round["error"]) and KEY not in str(web_round["error"])
    assert any(n["node"] == "web_search" and n["level"] == "error" for n in final.values["notices"])
    assert final.values["answer_mode"] == "partial"
