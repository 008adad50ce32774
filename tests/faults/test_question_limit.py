"""Fault battery, a 100,000-character question: refused in under a second, with one clear message in
both languages, on every interface (the page, ``/ask_json``, the MCP tool, ``python -m rag ask``),
before anything is embedded or sent to the model (``MAX_QUESTION_CHARS``); and a huge question that
does reach the index (a direct ``run_turn``) costs one query window of the real e5 model, so no work
of a stopped turn is still running seconds after it ended (not minutes)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import REPO, make_settings
from fixtures_ui.live import QUESTION, served_app
from fixtures_ui.pages import make_pages, scripted_deps
from gradio_client import Client

from rag.errors import QuestionTooLong, check_question
from rag.i18n import t

HUGE = "孙悟空三打白骨精是在第几回？" * 7200  # 100,800 characters


def test_the_setting_is_documented_and_its_message_in_both_languages() -> None:
    assert make_settings().max_question_chars == 2000
    assert make_settings(max_question_chars=50).max_question_chars == 50
    assert "MAX_QUESTION_CHARS=2000" in (REPO / ".env.example").read_text(encoding="utf-8")
    assert "MAX_QUESTION_CHARS" in (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    with pytest.raises(QuestionTooLong) as info:
        check_question(HUGE, 2000)
    assert "100800" in t("en", info.value.msg.code, **info.value.msg.params) and "2000" in str(info.value)
    assert "问题太长" in info.value.msg.text("zh") and "too long" in info.value.msg.text("en")
    assert check_question("短问题", 2000) == "短问题"


def test_the_page_refuses_at_once_and_keeps_the_text(tmp_path, monkeypatch) -> None:
    import gradio as gr

    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data")
    deps = scripted_deps(settings)
    pages = make_pages(deps)
    warned: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *a, **k: warned.append(message))
    from fixtures_ui.pages import new_session

    session = new_session(pages)
    started = time.monotonic()
    out = pages.chat.on_submit(session, HUGE)
    assert time.monotonic() - started < 1.0
    assert out == {pages.layout.shell.session: session}  # the question box is not cleared: nothing is lost
    assert session.active is None and not session.ui.turns  # no turn was started
    assert warned and "问题太长" in warned[0] and "100800" in warned[0], warned


def _mcp(url: str, tool: str, question: str) -> tuple[Any, float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> tuple[Any, float]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=120)) as http, \
                streamable_http_client(f"{url}/gradio_api/mcp/", http_client=http) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            started = time.monotonic()
            result = await session.call_tool(tool, {"question": question})
            return result, time.monotonic() - started

    return asyncio.run(go())


def test_the_script_api_and_mcp_refuse_at_once(tmp_path) -> None:
    from rag.ui.blocks import build_app

    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", mcp_server=True)
    deps = scripted_deps(settings, delay_s=0.5)  # a turn that did run would take seconds
    with served_app(build_app(deps), settings) as url:
        client = Client(f"{url}/", verbose=False)
        for api in ("/ask_json", "/ask"):
            started = time.monotonic()
            with pytest.raises(Exception) as info:  # noqa: PT011 - gradio_client raises its AppError
                client.predict(HUGE, api_name=api)
            took = time.monotonic() - started
            assert "too long" in str(info.value) and "100800" in str(info.value), info.value
            assert took < 1.0, (api, took)
        for tool in ("ask_json", "ask"):
            result, took = _mcp(url, tool, HUGE)
            text = " ".join(c.text for c in result.content)
            assert result.isError and "too long" in text and "MAX_QUESTION_CHARS" in text, text
            assert took < 1.0, (tool, took)
        answered = client.predict(QUESTION, api_name="/ask_json")  # a question of ordinary length still runs
    assert answered["status"] == "done"


def test_the_cli_refuses_at_once(tmp_path, monkeypatch, capsys) -> None:
    from rag import cli

    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SEARCH_PROVIDER", "none")
    monkeypatch.setenv("LLM_PROVIDER", "none")
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    opened: list[Any] = []
    import rag.index

    monkeypatch.setattr(rag.index, "open_index", lambda *a, **k: opened.append(a))
    started = time.monotonic()
    code = cli.main(["ask", HUGE])
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 1 and "too long" in err and "100800" in err and "2000" in err, err
    assert took < 1.0 and not opened  # refused before the index was opened


def _turn_threads() -> set[threading.Thread]:
    return {th for th in threading.enumerate() if th.name.startswith(("rag-turn", "e5-embed")) and th.is_alive()}


@pytest.mark.slow
def test_a_huge_question_that_reaches_the_index_costs_one_window_and_stops_with_the_turn(tmp_path: Path) -> None:
    """The real e5 embedder: a stopped turn's graph thread (its query embedding included) has ended
    within seconds of the turn (before, 100,000 characters were ~200 windows: minutes of CPU)."""
    from fixtures_ui.live import SlowScriptedChatModel, scripted_responder
    from index_fakes import write_book

    from rag.agent.deps import Deps
    from rag.agent.events import run_turn
    from rag.agent.graph import build_graph
    from rag.index import open_index

    settings = make_settings(data_dir=tmp_path / "data", search_provider="none", embed_threads=1)
    index = open_index(settings)
    try:
        book = index.ingest(write_book(tmp_path / "book.txt", chapters=2), background=False)
        assert index.wait_until_embedded(book.id, timeout=120)  # the book has its vectors: hybrid search embeds
        started = time.monotonic()
        index.embedder.embed_query(HUGE)
        assert time.monotonic() - started < 5.0  # one window, not ~200
        before = _turn_threads()
        deps = Deps(settings=settings, llm=SlowScriptedChatModel(responder=scripted_responder(), delay_s=0.0),
                    retriever=index)
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        list(run_turn(build_graph(deps), HUGE, thread_id=uuid.uuid4().hex, cancel=cancel))
        ended = time.monotonic()
        # seconds, not the minutes ~200 windows would take: measured 7 s on an idle 2-core machine, so
        # the bound leaves room for a loaded one without letting the old cost through
        while time.monotonic() - ended < 30.0 and _turn_threads() - before:
            time.sleep(0.1)
        assert not (_turn_threads() - before), _turn_threads() - before
    finally:
        index.close()
