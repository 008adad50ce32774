"""The chat page's handlers called directly (no server): a whole turn streams into the chat, the
trace and the sources; one turn at a time; Stop; a reload stops the turn its page can no longer
follow; the question's scope reaches the graph; a reset forgets; the banner follows reachability."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from conftest import make_settings
from fixtures_ui.live import ANSWER, FOLLOW_UP, FOLLOW_UP_REWRITE, PASSAGES, QUESTION, free_port
from fixtures_ui.pages import last, make_pages, new_session, scripted_deps, value

import rag.ui.pages.chat as chat_module
from rag.agent.deps import Deps
from rag.scope import Scope
from rag.testing.fakes import FakeRetriever


@pytest.fixture
def pages(tmp_path):
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data")
    return make_pages(scripted_deps(settings))


def ask(pages, session, text: str, *scope: Any) -> dict[Any, Any]:
    submitted = pages.chat.on_submit(session, text)
    streamed = list(pages.chat.on_ask(session, "__all__", *(scope or (None, None, None, False))))
    return {"submitted": submitted, "streamed": streamed, "final": last(streamed)}


def test_a_whole_turn_streams_into_chat_trace_and_sources(pages):
    v = pages.layout.chat
    session = new_session(pages)
    out = ask(pages, session, QUESTION)
    assert value(out["submitted"], v.question) == ""  # the box is cleared at once
    assert out["submitted"][v.stop]["visible"] is True and out["submitted"][v.send]["visible"] is False
    assert "trace-queued" in out["submitted"][v.trace]  # shown as queued until it gets a slot
    assert len(out["streamed"]) > 3  # the answer grows in several updates
    final = out["final"]
    assert final[v.send]["visible"] is True and final[v.stop]["visible"] is False
    messages = final[v.chatbot]
    assert messages[0]["content"] == QUESTION and "另见原著第一百回" in str(messages[-1]["content"])
    nodes = [n for n in ("route_question", "retrieve_local", "evaluate", "web_search", "generate", "verify_answer")
             if f'data-node="{n}"' in final[v.trace]]
    assert len(nodes) == 6 and "trace-total" in final[v.trace]
    assert "第二十七回 尸魔三戏唐三藏" in final[v.sources] and 'id="src-0-1"' in final[v.sources]
    assert "白骨夫人三次变化" in final[v.preview_store]  # previews work before the Sources tab is opened
    assert [e["enough"] for e in final[v.eval_json]] == [False, True]
    assert "搜索额度 1/20" in final[v.trace]
    assert session.active is None and session.ui.current.answer == ANSWER


def test_one_turn_at_a_time_and_empty_questions_are_refused(pages, recwarn):
    session = new_session(pages)
    assert pages.chat.on_submit(session, "   ") == {pages.layout.shell.session: session}
    pages.chat.on_submit(session, QUESTION)
    refused = pages.chat.on_submit(session, FOLLOW_UP)
    assert refused == {pages.layout.shell.session: session}  # nothing else changes: the box keeps its text
    assert [t.question for t in session.ui.turns] == [QUESTION]
    assert list(pages.chat.on_ask(session, None, None, None, None, False))[-1][pages.layout.chat.send]["visible"]


def test_a_follow_up_is_rewritten_and_a_reset_forgets_it(pages):
    session = new_session(pages)
    ask(pages, session, QUESTION)
    assert FOLLOW_UP_REWRITE in ask(pages, session, FOLLOW_UP)["final"][pages.layout.chat.trace]
    thread = session.thread_id
    reset = pages.chat.on_reset(session)
    assert reset[pages.layout.chat.chatbot] == [] and "rag-trace empty" in reset[pages.layout.chat.trace]
    assert session.thread_id != thread
    again = ask(pages, session, FOLLOW_UP)["final"]
    assert FOLLOW_UP_REWRITE not in again[pages.layout.chat.trace]
    assert QUESTION not in str(again[pages.layout.chat.chatbot])


def test_stop_ends_the_run_and_keeps_what_was_answered(tmp_path):
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data")
    pages = make_pages(scripted_deps(settings, delay_s=0.2))
    v, session = pages.layout.chat, new_session(pages)
    pages.chat.on_submit(session, QUESTION)
    updates: list = []
    runner = threading.Thread(target=lambda: updates.extend(pages.chat.on_ask(session, None, None, None, None, False)))
    runner.start()
    deadline = time.monotonic() + 30
    while "三打白骨精发生在原著" not in (session.ui.current.answer or "") and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = pages.chat.on_stop(session)
    runner.join(30)
    assert not runner.is_alive() and session.active is None
    assert stopped[v.send]["visible"] is True and "trace-stopped" in stopped[v.trace]
    turn = session.ui.current
    assert turn.status == "stopped" and "另见原著第一百回" not in turn.answer
    assert session.last_pump is not None and session.last_pump.join(10)  # the graph run ended
    assert "已按你的要求停止" in str(last(updates)[v.chatbot])
    pages.chat.on_submit(session, FOLLOW_UP)  # the next question is taken
    assert "trace-stopped" not in last(pages.chat.on_ask(session, None, None, None, None, False))[v.trace]


def test_stop_of_a_queued_turn_frees_the_session(pages):
    session = new_session(pages)
    pages.chat.on_submit(session, QUESTION)
    pages.chat.on_stop(session)
    assert session.active is None and session.ui.current.status == "stopped"
    assert pages.chat.on_submit(session, FOLLOW_UP)[pages.layout.chat.question] == ""


def test_a_reload_stops_the_turn_its_page_cannot_follow(pages):
    session = new_session(pages)
    pages.chat.on_submit(session, QUESTION)  # asked, then the page reloads before it ran
    loaded = pages.shell.on_load(None, {"sid": session.id}, "__all__")
    assert loaded[pages.layout.shell.session] is session
    assert "trace-stopped" in loaded[pages.layout.chat.trace] and loaded[pages.layout.chat.send]["visible"] is True
    assert session.active is None and pages.chat.on_submit(session, FOLLOW_UP)[pages.layout.chat.question] == ""


def test_the_scope_reaches_the_graph(pages, monkeypatch):
    scopes: list = []
    original = chat_module.run_turn

    def run_turn(graph, question, *, thread_id, book_id=None, scope=None, cancel=None):
        scopes.append({"book_id": book_id, "chapters": scope.chapters, "read_up_to": scope.read_up_to,
                       "allow_web_spoilers": scope.allow_web_spoilers})
        return original(graph, question, thread_id=thread_id, book_id=book_id)

    monkeypatch.setattr(chat_module, "run_turn", run_turn)
    session = new_session(pages)
    pages.chat.on_submit(session, QUESTION)
    list(pages.chat.on_ask(session, "b1", 7, 2, 5, True))
    pages.chat.on_submit(session, QUESTION)
    list(pages.chat.on_ask(session, "__all__", None, None, None, False))
    assert scopes == [{"book_id": "b1", "chapters": (2, 7), "read_up_to": 5, "allow_web_spoilers": True},
                      {"book_id": None, "chapters": None, "read_up_to": None, "allow_web_spoilers": False}]


def test_demo_question_follows_the_language(pages):
    assert pages.chat.on_demo(new_session(pages, "zh")) == QUESTION
    assert pages.chat.on_demo(new_session(pages, "en")).startswith("In which chapter of the novel")


def test_retrieval_only_mode_answers_from_the_book(tmp_path):
    settings = make_settings(data_dir=tmp_path / "data", ui_language="en", retrieval_k=3)
    pages = make_pages(Deps(settings=settings, llm=None, retriever=FakeRetriever(PASSAGES), web_search=None))
    session = new_session(pages, "en")
    banner = pages.shell.on_load(session, {}, None)[pages.layout.shell.banner]
    assert "mode-retrieval-only" in banner and "mode-web-off" in banner
    final = ask(pages, session, "石猴拜谁为师？")["final"]
    assert 'data-node="retrieval_only"' in final[pages.layout.chat.trace]
    assert 'href="#src-0-1"' in str(final[pages.layout.chat.chatbot])
    assert "白骨夫人三次变化" in final[pages.layout.chat.preview_store]


def test_a_model_that_cannot_be_reached_shows_in_the_banner_and_the_trace(tmp_path):
    from rag.agent.wiring import make_deps

    dead = f"http://127.0.0.1:{free_port()}/v1"
    settings = make_settings(llm_base_url=dead, llm_model="some-model", llm_max_retries=0, llm_timeout=5,
                             max_web_rounds=0, data_dir=tmp_path / "data", eval_log_enabled=False)
    pages = make_pages(make_deps(settings, index=FakeRetriever(PASSAGES)))
    session = new_session(pages)
    banner = pages.shell.on_load(session, {}, None)[pages.layout.shell.banner]
    assert "mode-model-unreachable" in banner and "无法连接模型 some-model：服务器配置的模型地址" in banner
    assert dead not in banner  # the server's URL is never shown
    session.llm_unreachable = None
    final = ask(pages, session, QUESTION)["final"]
    assert "mode-model-unreachable" in final[pages.layout.shell.banner]
    trace = final[pages.layout.chat.trace]
    assert "无法连接模型" in trace and "改为查书" in trace and "两次无效" not in trace


@pytest.mark.parametrize("fields", [("abc", "", ""), ("", "", "0"), ("-3", "5", "")])
def test_a_scope_field_that_is_not_a_chapter_ends_the_turn_with_a_message(pages, fields):
    """Issue 25, item 1: the turn says which field is wrong and ends; the session is free again."""
    session = new_session(pages)
    out = ask(pages, session, QUESTION, *fields, False)
    trace = out["final"][pages.layout.chat.trace]
    assert "不是第几章的数字" in trace and "trace-queued" not in trace
    assert out["final"][pages.layout.chat.send]["visible"] is True
    assert session.active is None and session.ui.current.status == "failed"


def test_empty_scope_fields_mean_the_whole_book(pages, monkeypatch):
    scopes: list = []
    original = chat_module.run_turn

    def run_turn(graph, question, *, thread_id, book_id=None, scope=None, cancel=None):
        scopes.append(scope)
        return original(graph, question, thread_id=thread_id, book_id=book_id)

    monkeypatch.setattr(chat_module, "run_turn", run_turn)
    session = new_session(pages)
    ask(pages, session, QUESTION, "", "", "", False)
    ask(pages, session, QUESTION, "3", "", "二十七", False)
    assert scopes == [Scope(), Scope(chapters=(3, 10**6), read_up_to=27)]


def test_an_ask_event_that_fails_before_its_handler_ends_the_turn(pages):
    """Issue 25, item 1: Gradio refused an input (the handler never ran): the question does not stay
    "queued" forever; it ends with a message and the next question is taken."""
    v = pages.layout.chat
    session = new_session(pages)
    submitted = pages.chat.on_submit(session, QUESTION)
    assert "trace-queued" in submitted[v.trace]
    failed = pages.chat.on_ask_failed(session)
    assert "trace-queued" not in failed[v.trace] and "页面请求失败" in failed[v.trace]
    assert failed[v.send]["visible"] is True and failed[v.stop]["visible"] is False
    assert session.active is None and session.ui.current.status == "failed"
    assert pages.chat.on_submit(session, FOLLOW_UP)[v.stop]["visible"] is True


def test_the_retrieval_only_answer_shows_ranks_not_raw_scores(tmp_path):
    """Issue 25, item 6: "[1] ..." is the rank; the RRF number ("score 0.912") is not reader text."""
    settings = make_settings(data_dir=tmp_path / "data", ui_language="en", retrieval_k=3)
    pages = make_pages(Deps(settings=settings, llm=None, retriever=FakeRetriever(PASSAGES), web_search=None))
    session = new_session(pages, "en")
    final = ask(pages, session, "石猴拜谁为师？")["final"]
    answer = session.ui.current.answer
    assert "[1]" in answer and "[2]" in answer and "score" not in answer and "0.912" not in answer
    assert "0.912" not in str(final[pages.layout.chat.chatbot])


def test_a_model_that_answers_too_slowly_is_slow_not_unreachable(tmp_path):
    import socket

    from rag.agent.wiring import make_deps

    with socket.socket() as hung:  # connections are accepted (the backlog) and never answered
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        base = f"http://127.0.0.1:{hung.getsockname()[1]}/v1"
        settings = make_settings(llm_base_url=base, llm_model="slow-model", llm_max_retries=0, llm_timeout=0.5,
                                 max_web_rounds=0, data_dir=tmp_path / "data", eval_log_enabled=False,
                                 query_rewrite=False)
        pages = make_pages(make_deps(settings, index=FakeRetriever(PASSAGES)))
        session = new_session(pages)
        final = ask(pages, session, QUESTION)["final"]
    banner = final[pages.layout.shell.banner]
    assert "mode-model-slow" in banner and "mode-model-unreachable" not in banner
    assert "slow-model" in banner and base not in banner
    assert session.llm_slow and session.llm_unreachable is None
