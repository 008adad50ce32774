"""Fault battery, an upstream error body on a public page: a model endpoint that answers 401 with its
own text (naming LLM_BASE_URL's host and path, a server path, echoing the key and its header) must
not reach a visitor through the query-rewrite notice or "generation failed", in the page's turn,
``/ask_json`` or the MCP tool: every line says "the model endpoint", like the router's and the
judge's. Real langchain-openai client against a
loopback stub; the live app for ``/ask_json`` and MCP."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from conftest import make_settings
from fixtures_ui.live import served_app
from gradio_client import Client

from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.agent.wiring import make_deps
from rag.i18n import text
from rag.schemas import Passage
from rag.testing.fakes import FakeRetriever
from rag.testing.openai_stub import OpenAIStub

KEY = "sk-upstream-canary-9f8e7d6c5b4a3210"
PATH = "internal-gateway/v7"
SERVER_PATH = "/srv/gateway/conf/routes.yaml"
QUESTION = "三打白骨精是第几回？"
PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]


def _body(base_url: str) -> str:
    host = base_url.split("://", 1)[1].split("/", 1)[0]
    return (f"Incorrect API key provided: {KEY}. Upstream {base_url}/chat/completions via {host} "
            f"({SERVER_PATH}) refused the request headers Authorization: Bearer {KEY}; x-api-key: {KEY}")


def _rejecting(stub_url: list[str]) -> Any:
    return lambda body: (401, _body(stub_url[0]))


def _leaks(seen: str, base_url: str) -> list[str]:
    host_port = base_url.split("://", 1)[1].split("/", 1)[0]
    port = host_port.rsplit(":", 1)[1]
    return [leak for leak in (KEY, PATH, SERVER_PATH, host_port, f":{port}", "127.0.0.1", "Incorrect API key")
            if leak in seen]


def _settings(base_url: str, **extra: Any) -> Any:
    return make_settings(llm_base_url=base_url, llm_api_key=KEY, llm_model="stub-model", llm_max_retries=0,
                         search_provider="none", turn_timeout=30.0, public_page=True, query_rewrite=True, **extra)


def test_a_rejected_call_shows_no_upstream_text_in_the_turn() -> None:
    url: list[str] = []
    with OpenAIStub(_rejecting(url)) as stub:
        url.append(stub.base_url.replace("/v1", f"/{PATH}"))
        settings = _settings(url[0])
        graph = build_graph(make_deps(settings, index=FakeRetriever(PASSAGES)))
        final = list(run_turn(graph, QUESTION, thread_id=uuid.uuid4().hex))[-1]
    assert isinstance(final, TurnFinished)
    notices = final.values["notices"]
    codes = {n["msg"].code if hasattr(n, "__getitem__") else n.msg.code for n in notices}
    assert "agent.query_rewrite_failed" in codes and "agent.generation_failed" in codes, codes
    shown = [text(lang, n["msg"]) for n in notices for lang in ("en", "zh")]
    seen = " ".join([final.answer, *shown, repr(notices)])
    assert not _leaks(seen, url[0]), (_leaks(seen, url[0]), seen)
    for code in ("agent.query_rewrite_failed", "agent.generation_failed"):
        line = next(text("en", n["msg"]) for n in notices if n["msg"].code == code)
        assert "the model endpoint" in line and "401" in line, line  # what failed, said generically


def _mcp_ask_json(url: str) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> Any:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=120)) as http, \
                streamable_http_client(f"{url}/gradio_api/mcp/", http_client=http) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("ask_json", {"question": QUESTION})

    result = asyncio.run(go())
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


@pytest.mark.parametrize("via", ["ask_json", "mcp"])
def test_a_rejected_call_shows_no_upstream_text_to_scripts(tmp_path, via: str) -> None:
    from rag.ui.blocks import build_app

    url: list[str] = []
    with OpenAIStub(_rejecting(url)) as stub:
        url.append(stub.base_url.replace("/v1", f"/{PATH}"))
        settings = _settings(url[0], data_dir=tmp_path / "data", mcp_server=True)
        demo = build_app(make_deps(settings, index=FakeRetriever(PASSAGES)))
        with served_app(demo, settings) as app:
            if via == "mcp":
                result = _mcp_ask_json(app)
            else:
                result = Client(f"{app}/", verbose=False).predict(QUESTION, api_name="/ask_json")
    notices = " ".join(n["message"] for n in result["notices"])
    assert "could not rewrite the question" in notices and "generation failed" in notices, notices
    seen = json.dumps(result, ensure_ascii=False)
    assert not _leaks(seen, url[0]), (_leaks(seen, url[0]), notices)
