"""MCP (issue 23, item 6) on the live app (rag.ui.serve.launch on a loopback port, the real graph with
the scripted model and web search): with MCP_SERVER=true the script API's ``/ask`` and ``/ask_json``
are the only MCP tools, listed and called with the ``mcp`` package's own client over streamable
HTTP and SSE; results carry the scripted answer and its citations; failures are one clear line;
each client address has its own web-search budget; with MCP_SERVER off there is no MCP endpoint."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from conftest import make_settings
from fixtures_ui.live import (
    ANSWER,
    PASSAGES,
    QUESTION,
    WEB,
    SlowScriptedChatModel,
    scripted_responder,
    served_app,
)
from gradio_client import Client
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from rag.agent.deps import Deps
from rag.testing.fakes import FakeRetriever, FakeWebSearch
from rag.ui.blocks import build_app

PARAMETERS = ["question", "book", "chapter_from", "chapter_to", "read_up_to", "allow_web_spoilers"]


class CountingWebSearch(FakeWebSearch):
    """The scripted web results, counting the searches that reach it."""

    calls: int = 0

    def search(self, query: str, count: int) -> Any:
        type(self).calls += 1
        return super().search(query, count)


def _app(tmp, **overrides: Any) -> tuple[Any, Any]:
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp / "data", search_budget=1, **overrides)
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=0.01)
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=CountingWebSearch(WEB))
    return build_app(deps), settings


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # X-Forwarded-For from loopback stands for a proxy in front of the app: believed only when configured
    before = os.environ.get("FORWARDED_ALLOW_IPS")
    os.environ["FORWARDED_ALLOW_IPS"] = "127.0.0.1"
    demo, settings = _app(tmp_path_factory.mktemp("mcp"), mcp_server=True)
    try:
        with served_app(demo, settings) as url:
            yield url
    finally:
        if before is None:
            os.environ.pop("FORWARDED_ALLOW_IPS", None)
        else:
            os.environ["FORWARDED_ALLOW_IPS"] = before


@asynccontextmanager
async def _http_session(url: str, *, headers: dict[str, str] | None = None, source: str | None = None,
                        endpoint: str = "/gradio_api/mcp/"):
    transport = httpx.AsyncHTTPTransport(local_address=source) if source else None
    async with httpx.AsyncClient(headers=headers, transport=transport, timeout=httpx.Timeout(30, read=120)) as http, \
            streamable_http_client(f"{url}{endpoint}", http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _run(url: str, work: Callable[[ClientSession], Awaitable[Any]], **client: Any) -> Any:
    async def go() -> Any:
        async with _http_session(url, **client) as session:
            return await work(session)

    return asyncio.run(go())


def _call(url: str, tool: str, arguments: dict[str, Any], **client: Any) -> Any:
    async def call(session: ClientSession) -> Any:
        return await session.call_tool(tool, arguments)

    return _run(url, call, **client)


def _json(result: Any) -> dict[str, Any]:
    assert not result.isError, result.content
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)  # JSON text, not Python's repr of a dict


def test_only_ask_and_ask_json_are_tools_over_streamable_http(live):
    async def tools(session: ClientSession) -> Any:
        return (await session.list_tools()).tools, (await session.list_resources()).resources, \
            (await session.list_prompts()).prompts

    listed, resources, prompts = _run(live, tools)
    assert sorted(t.name for t in listed) == ["ask", "ask_json"]  # no handler of the page
    assert resources == [] and prompts == []
    by_name = {t.name: t for t in listed}
    assert by_name["ask"].description.startswith("Ask a question about the loaded book(s); streams the answer")
    assert by_name["ask_json"].description.startswith("Ask a question and get everything about the answer as JSON")
    for tool in listed:
        schema = tool.inputSchema
        assert list(schema["properties"]) == PARAMETERS and schema["required"] == ["question"]
        assert schema["properties"]["question"] == {"type": "string",
                                                    "description": "the question, in Chinese or English."}
        assert schema["properties"]["chapter_from"]["type"] == "integer"
        assert schema["properties"]["allow_web_spoilers"]["type"] == "boolean"


def test_the_same_tools_over_sse(live):
    async def go() -> list[str]:
        async with sse_client(f"{live}/gradio_api/mcp/sse") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            result = await session.call_tool("ask", {"question": QUESTION})
            assert not result.isError and result.content[0].text == ANSWER
            return sorted(t.name for t in listed)

    assert asyncio.run(go()) == ["ask", "ask_json"]


def test_ask_returns_the_models_answer(live):
    result = _call(live, "ask", {"question": QUESTION}, headers={"X-Forwarded-For": "192.0.2.1"})
    assert not result.isError
    assert [c.text for c in result.content] == [ANSWER]  # the final text, plain (no HTML)


def test_a_client_asking_for_progress_gets_it_and_the_answer(live):
    progress: list[str | None] = []

    async def call(session: ClientSession) -> Any:
        async def note(value: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        answered = await session.call_tool("ask", {"question": QUESTION}, progress_callback=note)
        failed = await session.call_tool("ask", {"question": ""}, progress_callback=note)
        return answered, failed

    answered, failed = _run(live, call, headers={"X-Forwarded-For": "192.0.2.3"})
    assert [c.text for c in answered.content] == [ANSWER]
    assert "Processing" in progress
    assert failed.isError and [c.text for c in failed.content] == ["Error: the question is empty"]


def test_ask_json_returns_the_answer_with_its_citations(live):
    result = _json(_call(live, "ask_json", {"question": QUESTION}, headers={"X-Forwarded-For": "192.0.2.2"}))
    assert result["status"] == "done" and result["answer"] == ANSWER and result["mode"] == "full"
    assert [p["n"] for p in result["passages"]] == [1, 2]
    assert result["passages"][0]["text"] == PASSAGES[0].text
    assert [w["url"] for w in result["web_sources"]][:2] == [WEB[0].url, WEB[1].url]
    checks = result["sentence_checks"]
    assert [c["status"] for c in checks] == ["supported", "supported", "unsupported", "uncited"]
    assert checks[0]["citations"] == [1] and checks[1]["citations"] == [3, 4]


def test_a_failing_call_is_one_clear_line(live, monkeypatch):
    result = _call(live, "ask_json", {"question": "   "})
    assert result.isError and [c.text for c in result.content] == ["the question is empty"]

    import rag.agent.events

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("/srv/enough-rag/secret/chroma.sqlite3 is locked")

    monkeypatch.setattr(rag.agent.events, "run_turn", broken)
    for tool in ("ask", "ask_json"):
        result = _call(live, tool, {"question": QUESTION})
        assert result.isError
        text = " ".join(c.text for c in result.content)
        assert text == "the question could not be answered: the server ran into an error (its log has the details)"
        assert "/srv" not in text and "Traceback" not in text


def _web_sources(url: str, **client: Any) -> int:
    return len(_json(_call(url, "ask_json", {"question": QUESTION}, **client))["web_sources"])


def test_each_mcp_client_address_has_its_own_web_search_budget(live):
    # SEARCH_BUDGET=1: an address's first question searches the web, its second may not.
    # X-Forwarded-For from loopback stands for a proxy in front of the app (FORWARDED_ALLOW_IPS, set above).
    first, second = {"X-Forwarded-For": "198.51.100.1"}, {"X-Forwarded-For": "198.51.100.2"}
    before = CountingWebSearch.calls
    assert _web_sources(live, headers=first) > 0
    assert _web_sources(live, headers=first) == 0  # budget used up
    assert _web_sources(live, headers=second) > 0  # another client: a budget of its own
    assert CountingWebSearch.calls - before == 2


def test_an_mcp_client_cannot_pick_its_own_address(live):
    # From 127.0.0.2 (not a trusted proxy) X-Forwarded-For is not believed: both calls are
    # 127.0.0.2's, although Gradio's loopback call forwards the header to the endpoint.
    assert _web_sources(live, source="127.0.0.2", headers={"X-Forwarded-For": "203.0.113.1"}) > 0
    assert _web_sources(live, source="127.0.0.2", headers={"X-Forwarded-For": "203.0.113.2"}) == 0


def test_script_api_clients_have_a_budget_per_address_and_a_forged_mcp_header_is_ignored(live):
    def sources(headers: dict[str, str]) -> int:
        result = Client(f"{live}/", verbose=False, headers=headers).predict(QUESTION, api_name="/ask_json")
        return len(result["web_sources"])

    assert sources({"X-Forwarded-For": "198.51.100.20"}) > 0
    assert sources({"X-Forwarded-For": "198.51.100.21"}) > 0
    forged = {"X-Forwarded-For": "198.51.100.20", "x-rag-mcp-client": "0" * 32 + " 198.51.100.99"}
    assert sources(forged) == 0  # counted as 198.51.100.20's, whose budget is used up


def test_no_mcp_endpoint_when_mcp_server_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_MCP_SERVER", "true")  # Gradio's own switch does not turn it on
    demo, settings = _app(tmp_path)
    assert settings.mcp_server is False
    with served_app(demo, settings) as url:
        assert httpx.get(f"{url}/gradio_api/mcp/schema", timeout=10).status_code == 404
        response = httpx.post(f"{url}/gradio_api/mcp/", timeout=10, headers={"Accept": "application/json, text/event-stream"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert response.status_code in (404, 405)
        with pytest.raises(BaseException):  # noqa: B017, PT011 - the client gives up one way or another
            _run(url, lambda session: session.list_tools())
        assert set(Client(f"{url}/", verbose=False).view_api(print_info=False, return_format="dict")
                   ["named_endpoints"]) == {"/ask", "/ask_json"}  # the script API is still there


def test_the_setting_reads_mcp_server(monkeypatch):
    from rag.config import Settings

    monkeypatch.setenv("MCP_SERVER", "true")
    assert Settings(_env_file=None).mcp_server is True
    monkeypatch.delenv("MCP_SERVER")
    assert Settings(_env_file=None).mcp_server is False


def test_the_readme_client_config_reaches_the_tools(live):
    import re

    from conftest import REPO

    for name, heading in (("README.md", "## Use it from an MCP client"), ("README.zh.md", "## 在 MCP 客户端中使用")):
        section = (REPO / name).read_text(encoding="utf-8").split(heading, 1)[1].split("\n## ", 1)[0]
        configs = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]
        assert len(configs) == 2 and "MCP_SERVER=true" in section
        url = configs[0]["mcpServers"]["enough-rag"]["url"]
        assert configs[1]["mcpServers"]["enough-rag"] == {"command": "npx", "args": ["mcp-remote", url]}
        assert url.startswith("http://127.0.0.1:7860/")

        async def names(session: ClientSession) -> list[str]:
            return sorted(t.name for t in (await session.list_tools()).tools)

        assert _run(live, names, endpoint=url.removeprefix("http://127.0.0.1:7860")) == ["ask", "ask_json"]
