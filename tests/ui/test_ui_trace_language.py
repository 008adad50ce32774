"""The trace speaks the page's language: a route the code decided says why in that language (never
the English of the code), node names are shown translated (the raw name stays an attribute for
scripts), a web round names its provider in words."""

from __future__ import annotations

import re

import pytest

from rag.agent.events import NodeFinished, NodeStarted, QuestionFold
from rag.agent.names import NODES
from rag.agent.routing import by_code, overruled, route_reason, router_failed
from rag.i18n import Msg, node_title
from rag.schemas import RouteDecision
from rag.ui.render import render_trace
from rag.ui.translate import UiState, apply_events, start_turn

ENGLISH_OF_THE_CODE = ("retrieval by code", "the book itself uses", "router failed", "-> retrieval")


def routed(route: RouteDecision) -> str:
    fold = QuestionFold().update
    events = [NodeStarted("route_question", 0.0), NodeFinished("route_question", 0.1, fold({"route": route}))]
    return render_trace(apply_events(start_turn(UiState(), "武松打虎是第几回？"), events).current, "zh")


@pytest.mark.parametrize("route", [
    by_code(["打虎", "武松"]),
    router_failed(Msg.of("text", value="HTTP 503")),
    overruled(RouteDecision(reason="常识问题", strategy="simple"), ["武松"]),
], ids=["by_code", "router_failed", "overruled"])
def test_a_route_the_code_decided_is_said_in_the_page_language(route):
    out = routed(route)
    reason = re.search(r'<span class="code-text">(.*?)</span>', out).group(1)
    assert not any(english in reason for english in ENGLISH_OF_THE_CODE), reason
    assert re.search(r"[\u4e00-\u9fff]{4}", reason) and "model-text" not in out
    assert route.strategy == "complex" and isinstance(route_reason(route), Msg)


def test_the_names_and_the_model_words_stay_in_the_reason():
    assert "打虎、武松" in routed(by_code(["打虎", "武松"]))
    assert "常识问题" in routed(overruled(RouteDecision(reason="常识问题", strategy="simple"), ["武松"]))
    # logs and the CLI keep the English text, with the names
    assert "打虎" in by_code(["打虎"]).reason and "retrieval" in by_code(["打虎"]).reason


def test_the_routers_own_words_are_shown_as_the_models_text():
    out = routed(RouteDecision(reason="needs the book", strategy="complex"))
    assert '<span class="model-text">needs the book</span>' in out


def test_node_names_are_translated_and_the_raw_name_is_only_an_attribute():
    out = routed(by_code(["武松"]))
    visible = re.sub(r"<[^>]+>", " ", out)  # the text a reader sees, attributes dropped
    assert "route_question" not in visible and "路由判断" in visible
    assert 'data-node="route_question"' in out  # scripts and the browser tests read it
    for node in NODES:
        assert re.fullmatch(r"[^a-z_]+", node_title("zh", node)), node


def test_a_web_round_names_its_provider_in_words():
    fold = QuestionFold().update
    rounds = [{"query": "q", "provider": "none", "results": [], "notes": []},
              {"query": "q", "provider": "bocha,duckduckgo", "results": [], "notes": []}]
    events = [NodeStarted("web_search", 0.0), NodeFinished("web_search", 0.1, fold({"web_rounds": rounds}))]
    out = render_trace(apply_events(start_turn(UiState(), "q"), events).current, "zh")
    assert "不搜索网络" in out and "博查（Bocha） → DuckDuckGo" in out and ">none<" not in out
