"""The chat as people use it (issue 13), the parts below the browser: one turn at a time and Stop
(rag.ui.session, rag.ui.translate.stop_turn), sessions a reload finds again, links that end where
the URL ends, scores as ranks, upload progress and time left, messages in one language, the
scope parsed into the one Scope that run_turn takes, the endpoint check on Apply, and the
router's notice for a model that cannot be reached."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import ev, make_settings, responder
from fixtures_ui.live import free_port
from fixtures_ui.turn import PASSAGES, QUESTION, scripted_turn

from rag.agent.deps import Deps
from rag.agent.events import NodeStarted, Token, run_turn
from rag.agent.graph import build_graph
from rag.deadline import END, TIMEOUT, Pump
from rag.errors import ConfigError
from rag.i18n import Msg, t, text
from rag.schemas import Passage
from rag.scope import Scope, chapter_range, parse_scope
from rag.testing.fakes import FakeRetriever, ScriptedChatModel
from rag.testing.openai_stub import OpenAIStub
from rag.ui.pages.books import EtaTracker, eta_seconds, stage_text
from rag.ui.pages.settings import SettingsForm, apply_settings, probe_target
from rag.ui.probe import ProbeCache, chat_models_first, display_url, probe_endpoint
from rag.ui.render import book_status_text, find_urls, fmt_eta, how_found, link_citations, render_trace
from rag.ui.session import Session, SessionStore
from rag.ui.translate import UiState, apply_event, apply_events, start_turn, stop_turn

# --------------------------------------------------------------------------- one turn at a time, Stop


def slow_events(n: int, delay: float, closed: threading.Event) -> Iterator[Any]:
    try:
        for i in range(n):
            time.sleep(delay)
            yield Token("generate", f"t{i}")
    finally:
        closed.set()  # what closing the graph's stream does: the run ends


def test_pump_hands_over_events_and_stop_closes_the_run():
    closed = threading.Event()
    pump = Pump(slow_events(1000, 0.02, closed))
    first = pump.get(5.0)
    assert isinstance(first, Token) and first.text == "t0"
    pump.stop()
    assert pump.join(5.0) and closed.is_set()  # the iterator was closed by its own thread
    seen = []
    while (item := pump.get(0.5)) is not END:
        seen.append(item)
    assert len(seen) <= 2  # at most what was queued before the stop
    assert pump.get(0.01) is END  # stays ended


def test_pump_times_out_while_a_node_runs():
    closed = threading.Event()
    pump = Pump(slow_events(1, 1.0, closed))
    assert pump.get(0.05) is TIMEOUT
    pump.stop()
    assert pump.join(5.0)


def test_a_session_runs_one_turn_at_a_time():
    session = Session("zh")
    turn = session.begin("q1")
    assert turn is not None and session.begin("q2") is None
    assert session.stop() is turn and turn.cancel.is_set()
    session.end(turn)
    assert session.begin("q3") is not None


def test_new_conversation_forgets_chat_trace_and_memory_and_stops_the_turn():
    session = Session("en")
    session.ui = apply_events(start_turn(UiState(), "q"), scripted_turn())
    turn = session.begin("q2")
    thread = session.thread_id
    session.new_conversation()
    assert turn.cancel.is_set() and session.active is None
    assert session.ui == UiState() and session.thread_id != thread


def test_stop_turn_keeps_what_was_answered_and_marks_the_rest_stopped():
    state = apply_events(start_turn(UiState(), "q"), scripted_turn()[:11])  # generate is streaming
    assert state.busy and state.current.entries[-1].status == "running"
    stopped = stop_turn(state, 2.5)
    turn = stopped.current
    assert turn.status == "stopped" and turn.total_s == 2.5 and not stopped.busy
    assert turn.entries[-1].status == "stopped" and turn.answer == state.current.answer
    assert stop_turn(stopped, 9.0) == stopped  # once only
    trace = render_trace(turn, "zh")
    assert "trace-stopped" in trace and t("zh", "stopped_note") in trace and "status-stopped" in trace


def test_queued_turn_runs_on_its_first_event():
    state = start_turn(UiState(), "q", queued=True)
    assert state.busy and state.current.status == "queued"
    assert "trace-queued" in render_trace(state.current, "en")
    state = apply_event(state, NodeStarted("route_question", 0.0))
    assert len(state.turns) == 1 and state.current.status == "running"


def test_session_store_finds_sessions_again_bounded_and_forgetful():
    now = [0.0]
    store = SessionStore(max_sessions=2, ttl_s=100, clock=lambda: now[0])
    a, b = store.add(Session()), store.add(Session())
    assert store.get(a.id) is a and store.get("nope") is None and store.get(None) is None
    busy = b.begin("running")
    c = store.add(Session())  # over the bound: the least recently used idle one (a) goes
    assert store.get(a.id) is None and store.get(b.id) is b and store.get(c.id) is c
    now[0] = 150.0
    assert store.get(c.id) is None  # idle too long
    assert store.get(b.id) is b  # busy sessions stay
    b.end(busy)


# --------------------------------------------------------------------------- links, scores, lists


@pytest.mark.parametrize("text,urls", [
    ("分集列表见（https://tv.example.net/xiyouji/list）。另见", ["https://tv.example.net/xiyouji/list"]),
    ("见https://a.example/x，然后", ["https://a.example/x"]),
    ("see https://a.example/path_(x). Next", ["https://a.example/path_(x)"]),
    ("(https://a.example/x), and www.b.example/y.", ["https://a.example/x", "https://www.b.example/y"]),
    ("「https://a.example/q?x=1&y=2」", ["https://a.example/q?x=1&y=2"]),
    ("https://a.example/x[1]", ["https://a.example/x"]),
    ("javascript:alert(1) https:// nothing", []),
])
def test_bare_urls_end_where_the_url_ends(text, urls):
    assert [href for _, _, href in find_urls(text)] == urls


def test_linked_answer_leaves_nothing_for_the_markdown_autolinker():
    md = link_citations("分集列表见（https://tv.example.net/xiyouji/list）。另见 `http://code.example` [1]。", 0,
                        PASSAGES, [])
    assert 'href="https://tv.example.net/xiyouji/list"' in md
    assert "%EF%BC%89" not in md and "）。另见" in md
    outside_tags = re.sub(r"<[^>]+>", "", md)
    assert "https://" not in outside_tags.replace("`http://code.example`", "")  # shown as &#58; entities
    assert "`http://code.example`" in md  # code spans stay as written
    assert 'href="#src-0-1"' in md


def test_hits_show_rank_and_how_found_with_the_raw_score_on_hover():
    hybrid = Passage(id="a", text="t", score=0.0331, source="hybrid", chapter_title="第一回")
    keyword = Passage(id="b", text="t", score=3.2, source="keyword", chapter_title="第二回")
    out = how_found(hybrid, 1, "en") + how_found(keyword, 2, "zh")
    visible = re.sub(r'title="[^"]*"', "", out)
    assert "#1 · keyword + vector" in visible and "#2 · 关键词" in visible
    assert "0.033" not in visible and "3.200" not in visible
    assert "raw score 0.033 (RRF fusion score" in out and "原始分数 3.200（BM25 分" in out


def test_trace_lists_are_numbered_once():
    state = apply_events(start_turn(UiState(), QUESTION), scripted_turn())
    out = render_trace(state.current, "en")
    assert "<ol class=\"hits\"" not in out and '<ul class="hits">' in out
    assert re.search(r'<li class="hit"><span class="hit-num">\[1\]</span>', out)


# --------------------------------------------------------------------------- books


def test_upload_progress_says_the_book_is_searchable_before_vectors():
    assert stage_text("en", "keyword", 10, 10) == "Keyword search ready: you can ask now"
    assert stage_text("zh", "embedding", 3, 10).startswith("关键词检索已就绪：现在就可以提问")
    assert stage_text("en", "reading", 0, 1) == "Reading the book"
    assert "keyword keyword" not in stage_text("en", "keyword", 10, 10)


def test_time_left_from_the_embedding_rate():
    assert eta_seconds([(0.0, 0), (10.0, 50)], 200) == pytest.approx(30.0)
    assert eta_seconds([(0.0, 5)], 200) is None and eta_seconds([(0.0, 5), (1.0, 5)], 200) is None
    now = [0.0]
    tracker = EtaTracker(clock=lambda: now[0])
    assert tracker.observe("b", 0, 600, True) is None
    now[0] = 60.0
    assert tracker.observe("b", 100, 600, True) == pytest.approx(300.0)
    assert tracker.observe("b", 600, 600, False) is None
    assert fmt_eta(300, "en") == "about 5 min left" and fmt_eta(25, "zh") == "约 30 秒 后完成"
    book = {"id": "b", "status": "embedding", "embedded": 100, "chunks": 600}
    assert book_status_text(book, "en", 300) == "searchable (keyword) · embedding 16% · about 5 min left"
    assert book_status_text({**book, "status": "ready"}, "zh") == "就绪"


# --------------------------------------------------------------------------- one language at a time


def test_messages_from_the_code_follow_the_language():
    empty = Msg.of("book.empty_file", level="error", name="empty.txt")
    assert t("zh", "index_failed", message=text("zh", empty)) == \
        "无法索引这本书：empty.txt：文件是空的（0 字节）。"
    with pytest.raises(ConfigError) as bad:
        apply_settings(Deps(settings=make_settings()), None, None, SettingsForm(base_url="ftp://x", k=6, rounds=1))
    assert bad.value.msg.code == "settings.base_url_scheme" and bad.value.msg.level == "error"
    assert str(bad.value) == "the LLM base URL must start with http:// or https://"
    assert t("zh", "settings_failed", message=bad.value.msg) == "设置无效：模型 Base URL 必须以 http:// 或 https:// 开头"
    failed = Msg.of("llm.call_failed", endpoint="http://h:1/v1", what=Msg.of("llm.cannot_connect"),
                    kind="APIConnectionError", detail="Connection error.")
    notice = Msg.of("agent.eval_unreachable", level="warning", error=failed)  # as the evaluate node writes it
    assert text("zh", notice).startswith("无法连接模型；按“不够”处理（调用 http://h:1/v1 的模型失败（无法连接")
    assert text("en", notice) == ("the model could not be reached; assumed not enough (model call failed at "
                                     "http://h:1/v1 (cannot connect; APIConnectionError): Connection error.)")
    notice = str(notice)
    assert text("zh", "anything else") == "anything else"  # a plain string is shown as written
    assert text("en", notice) == notice


def test_strategy_is_translated_in_the_chat_thought():
    from rag.ui.render import chat_messages

    state = apply_events(start_turn(UiState(), QUESTION), scripted_turn())
    thought = chat_messages(state, "zh")[1]["content"]
    assert "复杂（需要查书）" in thought and "complex" not in thought


# --------------------------------------------------------------------------- the graph's scope keywords


def test_a_scope_is_parsed_applied_and_taken_by_run_turn():
    assert parse_scope("", None, "") == Scope() and Scope().whole_book and Scope().searched is None
    assert parse_scope("5", "1", "三", allow_web_spoilers=True) == Scope((1, 5), 3, True)
    assert Scope((1, 5), 3).searched == (1, 3) and Scope(read_up_to=4).searched == (0, 4)
    run_turn(object(), "q", thread_id="t", scope=Scope(chapters=(1, 2), read_up_to=1, allow_web_spoilers=True))
    assert chapter_range(None, None) is None and chapter_range(5, 2) == (2, 5) and chapter_range(3, 0) == (3, 10**6)
    with pytest.raises(ValueError):
        chapter_range(-1, 2)


# --------------------------------------------------------------------------- checking an endpoint


class _Status(BaseHTTPRequestHandler):
    status = 401
    hits: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(self.status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"no")


def serve_status(status: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Status,), {"status": status, "hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_probe_tells_unreachable_rejected_and_unlisted_apart():
    with OpenAIStub(lambda body: "x", models=("bge-m3", "qwen2.5-7b")) as stub:
        ok = probe_endpoint(stub.base_url, "sk-test")
    assert ok.status == "ok" and ok.models == ("qwen2.5-7b", "bge-m3") and ok.reachable
    dead = probe_endpoint(f"http://127.0.0.1:{free_port()}/v1", "sk-test", timeout=2)
    assert dead.status == "unreachable" and dead.why == "connect" and "sk-test" not in repr(dead)
    for status, kind in ((401, "rejected"), (404, "no_list")):
        server = serve_status(status)
        try:
            found = probe_endpoint(f"http://127.0.0.1:{server.server_address[1]}/v1", "k")
        finally:
            server.shutdown()
        assert found.status == kind and found.http_status == status
    assert display_url("http://user:pw@host:8000/v1?x=1") == "http://host:8000/v1"
    assert chat_models_first(["text-embedding-3", "gpt"]) == ("gpt", "text-embedding-3")


def test_probe_cache_asks_once_per_ttl():
    server = serve_status(404)
    now = [0.0]
    try:
        cache = ProbeCache(ttl_s=60, clock=lambda: now[0])
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        first = cache.probe(url, None, "where")
        second = cache.probe(url, None, "where")
        now[0] = 61.0
        cache.probe(url, None, "where")
    finally:
        server.shutdown()
    assert first is second and first.status == "no_list"
    assert server.RequestHandlerClass.hits == ["/v1/models", "/v1/models"]


def test_what_apply_checks():
    server = make_settings(llm_base_url="http://server.internal/v1", llm_model="m", llm_api_key="srv")
    assert probe_target(server, base_url="", key="", model="m", allow_endpoints=True) is None
    assert probe_target(server, base_url="http://mine/v1", key="k", model="", allow_endpoints=True) == (
        "http://mine/v1", "k", True)
    assert probe_target(server, base_url="", key="", model="other", allow_endpoints=True) == (
        "http://server.internal/v1", "srv", False)  # the server's URL: never shown (own=False)
    assert probe_target(server, base_url="http://mine/v1", key="", model="", allow_endpoints=False) is None
    assert probe_target(make_settings(), base_url="", key="", model="x", allow_endpoints=True) is None


# --------------------------------------------------------------------------- the router's notice


def test_router_says_when_the_model_cannot_be_reached():
    def unreachable(messages, *, schema):
        raise ConnectionError("connection refused")

    deps = Deps(settings=make_settings(max_web_rounds=0), llm=ScriptedChatModel(responder=unreachable),
                retriever=FakeRetriever(PASSAGES))
    values = build_graph(deps).invoke({"question": "q"}, {"configurable": {"thread_id": uuid.uuid4().hex}})
    route_notices = [str(n["msg"]) for n in values["notices"] if n["node"] == "route_question"]
    assert route_notices and route_notices[0].startswith("the model could not be reached; took the retrieval path")
    assert not any("invalid twice" in n for n in route_notices)

    garbage = ScriptedChatModel(responder=responder(route={"nonsense": 1}, evaluations=[ev(True)]))
    values = build_graph(Deps(settings=make_settings(max_web_rounds=0), llm=garbage,
                              retriever=FakeRetriever(PASSAGES))).invoke(
        {"question": "q"}, {"configurable": {"thread_id": uuid.uuid4().hex}})
    route_notices = [str(n["msg"]) for n in values["notices"] if n["node"] == "route_question"]
    assert route_notices[0].startswith("router output invalid twice")


def test_the_browser_keeps_no_url_with_credentials_and_updates_merge():
    from rag.ui.pages.base import merge
    from rag.ui.pages.settings import keepable_url

    assert keepable_url(" http://host:8000/v1 ") == "http://host:8000/v1"
    assert keepable_url("https://user:pw@host/v1") == "" and keepable_url("") == ""
    assert keepable_url("http://host/v1?next=a@b") == "http://host/v1?next=a@b"  # not in the host part
    merged = merge({"chat": ["m1"]}, {"chat": {"__type__": "update", "label": "Chat"}, "other": 1})
    assert merged == {"chat": {"__type__": "update", "value": ["m1"], "label": "Chat"}, "other": 1}
