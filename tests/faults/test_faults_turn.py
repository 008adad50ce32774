"""Fault suite (issue 12), one turn's time and an empty answer. A model endpoint that never answers,
one that trickles its answer, one that goes silent mid-answer, a step that hangs outside the model:
the turn ends by TURN_TIMEOUT (plus a small grace for the last resort), the answer written so far is
kept with a notice and the sources, and no call or search starts once the time is up. A model that
answers with nothing is a failed generation, and ``python -m rag ask`` says so with exit code 3.
Real langchain-openai client against tests/openai_stub.py on loopback.

Every turn here runs under a hard guard (``finish``): without the deadline these turns would wait for
LLM_TIMEOUT, which is set to an hour, so a turn that is not bounded fails the guard instead of
hanging the suite. Nothing asserts how fast a bounded turn is."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, ev, evidence_for, judge_prompt, make_settings, responder
from langchain_core.messages import AIMessageChunk, HumanMessage

from rag import deadline as turn_deadline
from rag.agent import events
from rag.agent.deps import Deps
from rag.agent.events import Token, TurnFailed, TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.errors import LLMUnavailable
from rag.llm import DeadlineBound, failure_kind, make_chat_model, structured_invoke
from rag.schemas import Evaluation, Passage, SearchResult
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.testing.openai_stub import HANG, OpenAIStub, Trickle, request_kind

KEY = "sk-live-SECRET-turn-0a1b2c"
HOUR = 3600.0  # LLM_TIMEOUT in these tests: only the turn's own limits can end a call in time
GUARD_S = 60.0  # a bounded turn ends long before this; an unbounded one would wait an hour
PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]
ANSWER = "孙悟空三打白骨精发生在第二十七回[1]。" * 8
QUESTION = "三打白骨精是第几回？"


def finish(graph: Any, question: str = QUESTION, **kwargs: Any) -> list[Any]:
    """All events of one turn, failing (not hanging) when the turn does not end within GUARD_S."""
    box: dict[str, Any] = {}

    def work() -> None:
        box["events"] = list(run_turn(graph, question, thread_id=uuid.uuid4().hex, **kwargs))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(GUARD_S)
    assert not thread.is_alive(), f"the turn was still running after {GUARD_S} s"
    return box["events"]


def answering(answer: Any, route: str = "complex"):
    """A stub responder: instant route and judge ("enough", with verifiable evidence), then ``answer``."""
    def respond(body: dict[str, Any]) -> Any:
        kind = request_kind(body)
        if kind == "RouteDecision":
            return {"reason": "scripted", "strategy": route}
        if kind == "EvidenceJudgement":
            return evidence_for(ev(True), judge_prompt([m["content"] for m in body["messages"]]))
        return answer
    return respond


def stub_graph(stub: OpenAIStub, web: FakeWebSearch | None = None, **overrides: Any) -> Any:
    values: dict[str, Any] = {"llm_base_url": stub.base_url, "llm_api_key": KEY, "llm_model": "stub-model",
                              "llm_timeout": HOUR, "search_provider": "fake" if web else "none", **overrides}
    settings = make_settings(**values)
    return build_graph(Deps(settings=settings, llm=make_chat_model(settings), retriever=FakeRetriever(PASSAGES),
                            web_search=web))


def notices(final: TurnFinished, level: str | None = None) -> list[str]:
    return [f"{n['node']}: {n['msg']}" for n in final.values.get("notices") or []
            if level is None or n["level"] == level]


# --------------------------------------------------------------------------- the deadline
def test_a_hanging_endpoint_ends_the_turn_at_its_deadline() -> None:
    """Before: route (2 attempts x 2 requests) + evaluate (the same) + generate (2 requests), each
    waiting LLM_TIMEOUT: 604 s with the defaults. Now the router's call ends at TURN_TIMEOUT and no
    other call is started: the turn ends with the sources and says why."""
    with OpenAIStub(lambda body: HANG) as stub:
        final = finish(stub_graph(stub, turn_timeout=1.0, llm_max_retries=1))[-1]
        kinds = [request_kind(r) for r in stub.requests]
    assert isinstance(final, TurnFinished)
    assert set(kinds) == {"RouteDecision"}  # neither the judge nor the writer was called after the deadline
    errors = notices(final, "error")
    assert errors == ["generate: the answer was cut short: the turn's time limit was reached (TURN_TIMEOUT=1 s)"]
    assert any("route_question" in n and "TURN_TIMEOUT" in n for n in notices(final))
    assert "TURN_TIMEOUT，1 秒" in final.answer and "尸魔三戏唐三藏" not in final.answer
    assert [p.chapter_title for p in final.values["passages"]] == ["第二十七回 尸魔三戏唐三藏"]  # the Sources tab
    assert KEY not in repr(final.values.get("notices"))


def test_client_retries_do_not_outlast_the_deadline() -> None:
    """LangChain's timeout is per request and max_retries multiplies it: under a deadline, one
    structured call (3 client retries, an hour each) still ends when the turn's time is up."""
    settings = make_settings(llm_api_key=KEY, llm_model="stub-model", llm_timeout=HOUR, llm_max_retries=3)
    with OpenAIStub(lambda body: HANG) as stub:
        model = DeadlineBound(make_chat_model(settings.model_copy(update={"llm_base_url": stub.base_url})))
        box: dict[str, Any] = {}

        def call() -> None:
            with turn_deadline.scope(turn_deadline.Deadline.after(0.5)):
                try:
                    structured_invoke(model, Evaluation, [HumanMessage("enough?")], "function_calling")
                except LLMUnavailable as exc:
                    box["error"] = exc

        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        thread.join(GUARD_S)
        assert not thread.is_alive(), "the structured call outlasted its deadline"
    error = box["error"]
    assert failure_kind(error) == "transport" and "TURN_TIMEOUT" in str(error) and stub.base_url in str(error)
    assert KEY not in str(error)


def test_a_trickling_answer_is_cut_at_the_deadline_and_kept() -> None:
    """Before: a model sending a piece every 0.2 s was never cut (this answer: 32 s). Now the answer
    written by the deadline is kept, followed by one line that says why it stops."""
    with OpenAIStub(answering(Trickle(ANSWER, every=0.2))) as stub:
        result = finish(stub_graph(stub, turn_timeout=2.0, stream_idle_timeout=10.0))
    final = result[-1]
    assert isinstance(final, TurnFinished)
    partial = final.answer.split("\n\n")[0]
    assert partial and ANSWER.startswith(partial) and len(partial) < len(ANSWER)
    assert "".join(e.text for e in result if isinstance(e, Token)).startswith(partial)  # what was streamed stays
    rest = final.answer.split(partial, 1)[1]
    assert "TURN_TIMEOUT" in rest and "第二十七回" not in rest and rest.count("\n") == 2  # one line, no passages
    assert notices(final, "error") == [
        "generate: the answer was cut short: the turn's time limit was reached (TURN_TIMEOUT=2 s)"]


def test_a_stream_that_goes_silent_is_cut_after_the_idle_limit() -> None:
    """Before: a stream that stopped sending waited for the client's read timeout (LLM_TIMEOUT) and
    then lost what it had written. Now STREAM_IDLE_TIMEOUT ends it, and the text stays."""
    with OpenAIStub(answering(Trickle(ANSWER, every=0.05, piece=4, stall_after=3))) as stub:
        final = finish(stub_graph(stub, turn_timeout=HOUR, stream_idle_timeout=0.5))[-1]
    assert isinstance(final, TurnFinished)
    assert final.answer.startswith(ANSWER[:12] + "\n\n")  # the three pieces sent, nothing lost
    assert "STREAM_IDLE_TIMEOUT" in final.answer and "第二十七回" not in final.answer
    assert notices(final, "error") == [
        "generate: the answer was cut short: the model sent nothing for 0.5 s (STREAM_IDLE_TIMEOUT)"]


def test_a_slow_first_piece_is_not_an_idle_stream() -> None:
    """The idle limit starts once text flows: a model that reads a long prompt before its first token
    is bounded by the turn, not by STREAM_IDLE_TIMEOUT."""
    with OpenAIStub(answering(Trickle("第二十七回[1]。", every=0.01, piece=3, first_after=1.0))) as stub:
        final = finish(stub_graph(stub, turn_timeout=HOUR, stream_idle_timeout=0.3))[-1]
    assert isinstance(final, TurnFinished)
    assert final.answer == "第二十七回[1]。" and notices(final, "error") == []


def test_no_web_search_starts_after_the_deadline() -> None:
    with OpenAIStub(lambda body: HANG) as stub:
        web = FakeWebSearch([SearchResult(title="t", url="https://example.org/", snippet="s", provider="fake")])
        final = finish(stub_graph(stub, web=web, turn_timeout=1.0, max_web_rounds=2))[-1]
    assert isinstance(final, TurnFinished)
    assert web.queries == []
    rounds = final.values["web_rounds"]
    assert rounds and all("not searched" in str(r["error"]) and "TURN_TIMEOUT" in str(r["error"]) for r in rounds)


class HangingRetriever(FakeRetriever):
    """A book index that never answers (a Chroma server gone silent), until released."""

    def __init__(self) -> None:
        super().__init__(PASSAGES)
        self.release = threading.Event()

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None) -> list[Passage]:
        self.release.wait()
        return super().retrieve(query, k, book_id)


def test_a_step_that_hangs_outside_the_model_fails_the_turn_after_the_grace(monkeypatch) -> None:
    """The last resort: run_turn stops waiting at the deadline plus TURN_GRACE_S, whatever hangs,
    and names the step it waited for."""
    monkeypatch.setattr(events, "TURN_GRACE_S", 0.2)
    retriever = HangingRetriever()
    settings = make_settings(turn_timeout=0.5)
    llm = ScriptedChatModel(responder=responder("complex", [ev(True)]))
    try:
        result = finish(build_graph(Deps(settings=settings, llm=llm, retriever=retriever)))
    finally:
        retriever.release.set()
    final = result[-1]
    assert isinstance(final, TurnFailed)
    assert final.message.code == "turn.time_limit" and final.message.level == "error"
    assert "TURN_TIMEOUT=0.5 s" in str(final.message) and "retrieve_local" in str(final.message)


# --------------------------------------------------------------------------- an empty answer
@pytest.mark.parametrize("reply", ["", "  \n\t "])
def test_an_empty_answer_is_a_failed_generation(reply: str) -> None:
    """Before: the answer was '' (or blanks), with no notice. Now: a notice and one line."""
    with OpenAIStub(answering(reply)) as stub:
        final = finish(stub_graph(stub))[-1]
    assert isinstance(final, TurnFinished)
    assert notices(final, "error") == ["generate: the model returned an empty answer"]
    assert final.answer.startswith("模型返回了空答案。") and "第二十七回" not in final.answer
    assert final.values["passages"]  # the sources stay in the Sources tab


def test_an_empty_direct_answer_is_a_failed_generation() -> None:
    llm = ScriptedChatModel(responder=responder("simple", answer=" "))
    final = finish(build_graph(Deps(settings=make_settings(), llm=llm)), "What is a novel?")[-1]
    assert isinstance(final, TurnFinished)
    assert notices(final, "error") == ["direct_answer: the model returned an empty answer"]
    assert final.answer == "The model returned an empty answer."  # no "answered from general knowledge" note


def _ask(stub: OpenAIStub, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "SEARCH_", "TURN_", "STREAM_"))}
    base.update({"OLLAMA_AUTODETECT": "false", "PYTHONPATH": str(REPO), "LLM_BASE_URL": stub.base_url,
                 "LLM_MODEL": "stub-model", "LLM_TIMEOUT": str(HOUR), "DATA_DIR": str(tmp_path / "data"), **env})
    return subprocess.run([sys.executable, "-m", "rag", "ask", "What is a novel?", "--no-web"], capture_output=True,
                          text=True, env=base, cwd=tmp_path, timeout=GUARD_S)


NOVEL = "A novel is a long work of narrative fiction, usually written in prose, with characters and a plot."


@pytest.mark.parametrize(("reply", "says"), [
    ("", "The model returned an empty answer."),
    (HANG, "TURN_TIMEOUT = 2 s"),
    (Trickle(NOVEL, every=0.1), "TURN_TIMEOUT = 2 s"),
])
def test_cli_ask_exits_3_without_a_complete_answer(tmp_path: Path, reply: Any, says: str) -> None:
    """Before: an empty answer printed nothing and exited 0; a trickling one was never cut."""
    with OpenAIStub(answering(reply, route="simple")) as stub:
        result = _ask(stub, tmp_path, TURN_TIMEOUT="2")
    assert result.returncode == 3, result.stderr
    assert says in result.stdout and "[error] direct_answer:" in result.stderr
    assert "Traceback" not in result.stderr
    if isinstance(reply, Trickle):  # what was streamed is printed once, then why it stops
        partial = result.stdout.split("\n")[0]
        assert partial and NOVEL.startswith(partial) and result.stdout.count(partial) == 1


def test_a_piece_that_arrives_after_its_node_ended_is_not_shown() -> None:
    """A stream given up at a limit may still deliver its next piece: it is not part of the answer."""
    chunks = [("tasks", {"id": "t1", "name": "generate", "input": {}}),
              ("messages", (AIMessageChunk(content="kept"), {"langgraph_node": "generate"})),
              ("tasks", {"id": "t1", "name": "generate", "result": {"answer": "kept"}}),
              ("messages", (AIMessageChunk(content=" late"), {"langgraph_node": "generate"}))]
    assert [e.text for e in events.translate_stream(chunks) if isinstance(e, Token)] == ["kept"]


def test_cli_ask_exits_0_with_an_answer(tmp_path: Path) -> None:
    with OpenAIStub(answering("A novel is a long work of fiction.", route="simple")) as stub:
        result = _ask(stub, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("A novel is a long work of fiction.")
