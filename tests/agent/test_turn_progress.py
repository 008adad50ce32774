"""A turn's model calls, seen from the trace and from Stop: ``Progress`` events while a call writes
(at most a few a second), and a cancelled turn that gives up the model's stream in flight."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from conftest import ev, evidence_for, judge_prompt, make_settings
from langchain_core.messages import AIMessageChunk

from rag.agent.deps import Deps
from rag.agent.events import (
    PROGRESS_INTERVAL_S,
    NodeFinished,
    NodeStarted,
    Progress,
    Token,
    run_turn,
    translate_stream,
)
from rag.agent.graph import build_graph
from rag.agent.names import EVALUATE, GENERATE
from rag.llm import make_chat_model
from rag.schemas import Passage
from rag.testing.fakes import FakeRetriever
from rag.testing.openai_stub import OpenAIStub, Trickle, request_kind
from rag.ui.render import render_trace
from rag.ui.translate import UiState, apply_events, start_turn

PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]
PROSE = "".join(chr(0x4E00 + i * 7) for i in range(400))  # a long answer that never repeats a clause


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def chunks(clock: Clock) -> Any:
    """A judge call that streams tool-call arguments, then an answer that streams text."""
    yield "tasks", {"id": "e", "name": EVALUATE, "input": {}}
    for at in (0.0, 0.1, 0.2, 0.3, 0.6, 0.7):
        clock.now = at
        message = AIMessageChunk(content="", tool_call_chunks=[{"name": None, "args": '{"a":', "id": None,
                                                                  "index": 0}])
        yield "messages", (message, {"langgraph_node": EVALUATE})
    yield "tasks", {"id": "e", "name": EVALUATE, "result": {}}
    yield "tasks", {"id": "g", "name": GENERATE, "input": {}}
    for at in (1.0, 1.2, 1.6):
        clock.now = at
        yield "messages", (AIMessageChunk(content="第二十七回"), {"langgraph_node": GENERATE})
    yield "tasks", {"id": "g", "name": GENERATE, "result": {"answer": "第二十七回" * 3}}


def test_a_writing_model_call_sends_progress_at_most_every_interval():
    clock = Clock()
    events = list(translate_stream(chunks(clock), clock=clock))
    progress = [(e.node, e.chars) for e in events if isinstance(e, Progress)]
    # 5 characters of arguments each time; one event at the first piece, then one per interval
    assert PROGRESS_INTERVAL_S == 0.5
    assert progress == [(EVALUATE, 5), (EVALUATE, 25), (GENERATE, 5), (GENERATE, 15)]
    assert "".join(e.text for e in events if isinstance(e, Token)) == "第二十七回" * 3  # tokens as before


def test_the_trace_shows_the_characters_written_while_the_step_runs():
    clock = Clock()
    events = list(translate_stream(chunks(clock), clock=clock))
    upto = next(i for i, e in enumerate(events) if isinstance(e, Progress) and e.chars == 25)
    running = apply_events(start_turn(UiState(), "q"), events[:upto + 1])
    assert running.current.entries[-1].written == 25
    assert "生成中… 25 字" in render_trace(running.current, "zh")
    assert "writing… 25 characters" in render_trace(running.current, "en")
    done = apply_events(running, [e for e in events[upto + 1:] if isinstance(e, NodeFinished)][:1])
    assert "25 字" not in render_trace(done.current, "zh")  # a finished step shows its duration


def answering(answer: Any):
    def respond(body: dict[str, Any]) -> Any:
        kind = request_kind(body)
        if kind == "RouteDecision":
            return {"reason": "scripted", "strategy": "complex"}
        if kind == "EvidenceJudgement":
            return evidence_for(ev(True), judge_prompt([m["content"] for m in body["messages"]]))
        return answer
    return respond


def stub_graph(stub: OpenAIStub) -> Any:
    settings = make_settings(llm_base_url=stub.base_url, llm_api_key="sk-test-0123456789", llm_model="stub-model",
                             llm_timeout=3600.0, turn_timeout=120.0, stream_idle_timeout=30.0, search_provider="none")
    return build_graph(Deps(settings=settings, llm=make_chat_model(settings), retriever=FakeRetriever(PASSAGES)))


def test_a_cancelled_turn_abandons_the_answer_stream_within_seconds():
    """Before: the cancel ended the events, but the answer's stream ran on to its end (here 80 s;
    a closed page kept the model busy for minutes). Now the model's connection is closed within a
    few seconds, and the turn's run ends."""
    cancel = threading.Event()
    seen: list[Any] = []
    with OpenAIStub(answering(Trickle(PROSE, every=0.2))) as stub:
        graph = stub_graph(stub)

        def work() -> None:
            for event in run_turn(graph, "三打白骨精是第几回？", thread_id=uuid.uuid4().hex, cancel=cancel):
                seen.append(event)
                if isinstance(event, Token):
                    cancel.set()

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive() and cancel.is_set()
        cancelled_at = time.monotonic()
        assert stub.hung_up.wait(5.0), "the answer's request was not abandoned"
        assert time.monotonic() - cancelled_at < 5.0
    assert any(isinstance(e, NodeStarted) and e.node == GENERATE for e in seen)
    assert sum(len(e.text) for e in seen if isinstance(e, Token)) < 30


def test_progress_comes_from_a_real_streamed_answer():
    with OpenAIStub(answering(Trickle(PROSE[:60], every=0.02, piece=2))) as stub:
        events = list(run_turn(stub_graph(stub), "三打白骨精是第几回？", thread_id=uuid.uuid4().hex))
    progress = [e.chars for e in events if isinstance(e, Progress) and e.node == GENERATE]
    assert progress and progress == sorted(progress) and progress[-1] <= 60
    assert len(progress) <= 60 * 0.02 / PROGRESS_INTERVAL_S + 2  # a few a second, not one per piece
