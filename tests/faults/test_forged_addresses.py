"""Fault battery, whose web-search budget a script call spends: a forged ``x-gradio-user: mcp`` header
does not buy a second budget beside the caller's own address's, and ``X-Forwarded-For`` from
loopback is only believed when FORWARDED_ALLOW_IPS says so (a proxy on this machine). The live app
(rag.ui.serve.launch) with the scripted model and a counting web search, SEARCH_BUDGET=1."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_settings
from fixtures_ui.live import PASSAGES, QUESTION, WEB, SlowScriptedChatModel, scripted_responder, served_app
from gradio_client import Client

from rag.agent.deps import Deps
from rag.testing.fakes import FakeRetriever, FakeWebSearch
from rag.ui.mcp import CLIENT_HEADER, MCP_USER_HEADER, client_address, sign_client


def test_an_unsigned_mcp_user_header_buys_no_budget_of_its_own() -> None:
    forged = {MCP_USER_HEADER: "mcp"}
    assert client_address(forged, "198.51.100.7") == "198.51.100.7"  # before: "mcp", a second budget
    assert client_address(forged, "2001:db8::7") == "2001:db8::7"
    assert client_address(forged, "127.0.0.1") == "127.0.0.1"  # an unconfigured local proxy's visitors too
    assert client_address({CLIENT_HEADER: sign_client("203.0.113.9"), **forged}, "127.0.0.1") == "203.0.113.9"
    assert client_address({CLIENT_HEADER: "0" * 32 + " 203.0.113.9"}, "198.51.100.7") == "198.51.100.7"


def _app(tmp, **overrides: Any) -> tuple[Any, Any]:
    from rag.ui.blocks import build_app

    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp / "data", search_budget=1, **overrides)
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=0.0)
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    return build_app(deps), settings


def _sources(url: str, headers: dict[str, str]) -> int:
    result = Client(f"{url}/", verbose=False, headers=headers).predict(QUESTION, api_name="/ask_json")
    return len(result["web_sources"])


@pytest.mark.parametrize("trusted", [False, True])
def test_forwarded_for_from_loopback_is_believed_only_when_configured(tmp_path, monkeypatch, trusted: bool) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")  # restored afterwards, whatever launch sets
    if not trusted:
        monkeypatch.delenv("FORWARDED_ALLOW_IPS")
    demo, settings = _app(tmp_path)
    with served_app(demo, settings) as url:
        first = _sources(url, {"X-Forwarded-For": "198.51.100.40"})
        other = _sources(url, {"X-Forwarded-For": "198.51.100.41"})
        forged = _sources(url, {"X-Forwarded-For": "198.51.100.40", MCP_USER_HEADER: "mcp"})
    assert first > 0
    if trusted:  # a local proxy: each forwarded address has its own budget, and a forged header none more
        assert other > 0 and forged == 0
    else:  # nobody configured a proxy: every call here is 127.0.0.1's, whatever it claims
        assert other == 0 and forged == 0
