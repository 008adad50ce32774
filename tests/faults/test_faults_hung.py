"""Fault suite (issue 22), a hung model with the app's own wiring (``make_deps``: the query
rewriter on): when every model call hangs, or the router answers and then the judge and the
rewriter hang, the turn still ends by TURN_TIMEOUT with the passages found. Before, the rewriter's
call was not bound by the turn's deadline: the turn failed at TURN_TIMEOUT + the grace, with no
passages. Loopback OpenAI stub through the real client; LLM_TIMEOUT an hour."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from conftest import make_settings

from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.agent.wiring import make_deps
from rag.schemas import Passage
from rag.testing.fakes import FakeRetriever
from rag.testing.openai_stub import HANG, OpenAIStub, request_kind

PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]
GUARD_S = 60.0


def finish(graph: Any) -> list[Any]:
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(events=list(
        run_turn(graph, "三打白骨精是第几回？", thread_id=uuid.uuid4().hex))), daemon=True)
    thread.start()
    thread.join(GUARD_S)
    assert not thread.is_alive(), f"the turn was still running after {GUARD_S} s"
    return box["events"]


@pytest.mark.parametrize("router_answers", [False, True])
def test_a_hung_judge_or_router_still_shows_the_passages(router_answers: bool) -> None:
    def respond(body: dict[str, Any]) -> Any:
        if router_answers and request_kind(body) == "RouteDecision":
            return {"reason": "scripted", "strategy": "complex"}
        return HANG

    with OpenAIStub(respond) as stub:
        settings = make_settings(llm_base_url=stub.base_url, llm_api_key="sk-test", llm_model="stub-model",
                                 llm_timeout=3600.0, search_provider="none", turn_timeout=1.0, query_rewrite=True)
        deps = make_deps(settings, index=FakeRetriever(PASSAGES))
        assert deps.rewriter is not None
        final = finish(build_graph(deps))[-1]
    assert isinstance(final, TurnFinished), final  # before: TurnFailed, "stopped waiting for retrieve_local"
    assert [p.id for p in final.values["passages"]] == ["p1"]
    # the passage stays the turn's source (the Sources tab), not pasted into the answer
    assert "TURN_TIMEOUT" in final.answer and "来源" in final.answer and "尸魔三戏唐三藏" not in final.answer
