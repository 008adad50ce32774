"""A page that goes away (closed, reloaded) while its turn runs: the turn is stopped, its run ends,
and what the page shows afterwards says the page was closed, never "stopped at your request"."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from conftest import make_settings
from fixtures_ui.live import QUESTION
from fixtures_ui.pages import make_pages, new_session, scripted_deps

from rag.ui.render import chat_messages, render_trace

PAGE_NOTE = "页面已关闭，回答没有写完"
USER_NOTE = "已按你的要求停止"


@pytest.fixture
def slow_pages(tmp_path):
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data")
    return make_pages(scripted_deps(settings, delay_s=0.2))


def wait_for_answer(session, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (session.ui.current and session.ui.current.answer) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.ui.current.answer, "the answer never started"


def test_a_closed_page_stops_its_turn_and_a_reload_says_the_page_was_closed(slow_pages):
    pages, v = slow_pages, slow_pages.layout.chat
    session = new_session(pages)
    page = SimpleNamespace(session_hash="page-1")
    pages.chat.on_submit(session, QUESTION)
    runner = threading.Thread(target=lambda: list(pages.chat.on_ask(session, None, None, None, None, False, page)))
    runner.start()
    wait_for_answer(session)
    pages.chat.on_page_closed(SimpleNamespace(session_hash="page-1"))  # Gradio's unload for that page
    runner.join(10)
    assert not runner.is_alive() and session.active is None
    assert session.last_pump is not None and session.last_pump.join(10)  # the graph run ended
    turn = session.ui.current
    assert turn.status == "stopped" and turn.stopped_by == "page"
    loaded = pages.shell.on_load(None, {"sid": session.id}, "__all__")  # the reader comes back
    shown = str(loaded[v.chatbot]) + loaded[v.trace]
    assert PAGE_NOTE in shown and USER_NOTE not in shown
    pages.chat.on_page_closed(SimpleNamespace(session_hash="page-2"))  # a page that ran nothing: no harm


def test_a_handler_that_gradio_closes_counts_as_the_page_going_away(slow_pages):
    pages = slow_pages
    session = new_session(pages)
    pages.chat.on_submit(session, QUESTION)
    updates = pages.chat.on_ask(session, None, None, None, None, False)
    for _ in range(3):  # the turn runs
        next(updates)
    assert session.ui.current.status == "running"
    updates.close()  # what Gradio does to the handler of a page whose connection went away
    assert session.active is None
    assert session.ui.current.status == "stopped" and session.ui.current.stopped_by == "page"
    assert session.last_pump is not None and session.last_pump.join(10)


def test_a_reload_before_the_turn_ran_says_the_page_was_closed(slow_pages):
    pages, v = slow_pages, slow_pages.layout.chat
    session = new_session(pages)
    pages.chat.on_submit(session, QUESTION)
    loaded = pages.shell.on_load(None, {"sid": session.id}, "__all__")
    assert PAGE_NOTE in loaded[v.trace] and USER_NOTE not in loaded[v.trace]
    english = str(chat_messages(session.ui, "en")) + render_trace(session.ui.current, "en")
    assert "The page was closed" in english and "at your request" not in english
