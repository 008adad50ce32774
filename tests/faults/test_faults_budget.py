"""Fault suite (issue 22), the server's web-search key: every ``/ask_json`` call is a new
conversation, but not a new budget (SEARCH_BUDGET counts per visitor: a browser session, or the
script API's calls together), and the server's searches per hour (SEARCH_SERVER_PER_HOUR) cap all
visitors together. The trace says when a budget stops a search. The live app (a loopback port,
gradio_client), the real graph with the scripted model and a counting web search."""

from __future__ import annotations

import json

import pytest
from conftest import make_settings
from fixtures_ui.live import PASSAGES, QUESTION, WEB, SlowScriptedChatModel, scripted_responder, served_app
from gradio_client import Client

from rag.agent.deps import Deps
from rag.errors import BudgetExceeded
from rag.testing.fakes import FakeRetriever, FakeWebSearch
from rag.ui.blocks import build_app


def test_new_api_calls_do_not_reset_the_web_budget(tmp_path) -> None:
    settings = make_settings(search_provider="fake", max_web_rounds=1, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", search_budget=2)
    web = FakeWebSearch(WEB)
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=0.0)
    demo = build_app(Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=web))
    with served_app(demo, settings) as url:
        client = Client(f"{url}/", verbose=False)
        results = [client.predict(QUESTION, api_name="/ask_json") for _ in range(4)]
    assert len(web.queries) == 2, web.queries  # before: 4, one fresh budget per call
    last = json.dumps(results[-1]["notices"], ensure_ascii=False)
    assert "budget is used up (2/2 searches)" in last, last


def test_the_server_caps_searches_per_hour_for_all_visitors() -> None:
    from rag.search.session import HOUR_S, SessionSearch, ledger_for

    web = FakeWebSearch(WEB)
    alice = SessionSearch(web, budget=10, visitor="alice", per_hour=3)
    bob = SessionSearch(web, budget=10, visitor="bob", per_hour=3)
    alice.search("a", 5), alice.search("b", 5), bob.search("c", 5)
    with pytest.raises(BudgetExceeded) as info:
        bob.search("d", 5)
    assert "web searches for the hour are used up (3 an hour)" in str(info.value)
    assert len(web.queries) == 3 and bob.used == 1
    again = SessionSearch(web, budget=10, visitor="bob")  # a new session of bob's: the same count
    assert again.used == 1
    ledger = ledger_for(web)
    start = ledger.clock()
    ledger.clock = lambda: start + HOUR_S + 1  # an hour later
    assert again.search("e", 5) and bob.used == 2
