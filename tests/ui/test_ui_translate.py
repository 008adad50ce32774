"""The pure events -> UI state translation (rag.ui.translate), on hand-made events and on the
event stream of the real graph driven by a scripted model."""

from __future__ import annotations

import copy
import uuid

from conftest import ev, make_settings, responder
from fixtures_ui.turn import E1, E2, PASSAGES, QUESTION, WEB, scripted_turn

from rag.agent.deps import Deps
from rag.agent.events import NodeFinished, NodeStarted, QuestionFold, Token, TurnFailed, run_turn
from rag.agent.graph import build_graph
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.ui.translate import UiState, apply_event, apply_events, start_turn, trace_model


def test_full_turn_builds_trace_in_order_with_both_evaluations():
    state = apply_events(start_turn(UiState(), QUESTION), scripted_turn())
    turn = state.current
    assert turn is not None and turn.status == "done"
    assert [e.node for e in turn.entries] == ["route_question", "retrieve_local", "evaluate", "web_search",
                                              "evaluate", "generate", "verify_answer"]
    assert all(e.status == "done" for e in turn.entries)
    assert [e.duration_s for e in turn.entries] == [0.1, 0.2, 0.5, 0.7, 0.8, 1.2, 1.25]
    assert turn.entries[0].route is not None and turn.entries[0].route.strategy == "complex"
    assert turn.entries[1].passages == tuple(PASSAGES)
    assert turn.entries[2].evaluation == E1 and turn.entries[2].evaluation_round == 1
    assert turn.entries[4].evaluation == E2 and turn.entries[4].evaluation_round == 2
    assert turn.evaluations == (E1, E2)
    assert turn.entries[3].web_rounds[0]["query"] == E1.web_query
    assert [str(n["msg"]) for n in turn.entries[3].notices] == ["cache miss"]
    assert turn.notices == turn.entries[3].notices
    assert turn.entries[4].notices == ()
    assert turn.answer == "第二十七回[1]，第11集[3]。"
    assert turn.passages == tuple(PASSAGES) and turn.web_results == tuple(WEB)
    assert turn.total_s == 1.3 and turn.answer_mode == "full"
    model = trace_model(turn)
    assert [e["node"] for e in model["entries"]][:2] == ["route_question", "retrieve_local"]
    assert model["entries"][1]["hits"][0] == {"label": "第二十七回 尸魔三戏唐三藏", "score": 0.91, "source": "hybrid"}
    assert model["entries"][4]["evaluation"]["enough"] is True and model["entries"][4]["round"] == 2


def test_answer_grows_token_by_token_and_running_entries_show():
    state = start_turn(UiState(), "q")
    answers = []
    for event in scripted_turn():
        state = apply_event(state, event)
        answers.append(state.current.answer)
        if isinstance(event, NodeStarted):
            assert state.current.entries[-1].node == event.node
            assert state.current.entries[-1].status == "running"
            assert state.current.entries[-1].duration_s is None
    assert "第二十七回" in answers and "第二十七回[1]，第11集[3]。" in answers
    assert answers.index("第二十七回") < answers.index("第二十七回[1]，第11集[3]。")


def test_apply_event_does_not_mutate_its_input():
    state = apply_events(start_turn(UiState(), "q"), scripted_turn()[:6])
    snapshot = copy.deepcopy(state)
    for event in scripted_turn()[6:]:
        new = apply_event(state, event)
        assert new is not state
        assert state == snapshot


def test_failure_marks_running_entries_and_keeps_message():
    state = start_turn(UiState(), "q")
    state = apply_events(state, [NodeStarted("route_question", 0.0),
                                 TurnFailed("LLMError: the model could not be reached", 2.5)])
    turn = state.current
    assert turn.status == "failed" and str(turn.error) == "LLMError: the model could not be reached"
    assert turn.entries[0].status == "error" and turn.entries[0].error == turn.error
    assert turn.total_s == 2.5


def test_node_error_and_incremental_lists():
    fold = QuestionFold().update
    state = start_turn(UiState(), "q")
    state = apply_events(state, [
        NodeStarted("web_search", 0.0),
        NodeFinished("web_search", 0.3, fold({"web_rounds": [{"query": "a", "provider": "", "results": [],
                                                              "error": "timeout", "notes": []}]}), error="boom"),
        NodeStarted("web_search", 0.3),
        # a node that returns only its own new round (not the whole list): the event carries the list after it
        NodeFinished("web_search", 0.2, fold({"web_rounds": [{"query": "b", "provider": "fake", "results": WEB,
                                                              "error": None, "notes": []}]})),
    ])
    turn = state.current
    assert [e.status for e in turn.entries] == ["error", "done"]
    assert turn.entries[0].error == "boom"
    assert [r["query"] for r in turn.web_rounds] == ["a", "b"]
    assert [r["query"] for r in turn.entries[1].web_rounds] == ["b"]


def test_answer_node_update_wins_over_streamed_tokens_and_events_without_turn():
    state = apply_events(UiState(), [Token("generate", "partial"), Token("route_question", "ignored"),
                                     NodeFinished("fallback", 0.1, {"answer": "fallback text",
                                                                    "answer_mode": "fallback"})])
    assert len(state.turns) == 1
    assert state.current.answer == "fallback text" and state.current.answer_mode == "fallback"


def test_second_turn_starts_fresh_and_keeps_history():
    state = apply_events(start_turn(UiState(), "q1"), scripted_turn())
    state = apply_events(start_turn(state, "他儿子呢？"), [NodeStarted("route_question", 0.0)])
    assert [t.question for t in state.turns] == ["q1", "他儿子呢？"]
    assert state.busy and state.current.entries[0].node == "route_question"
    assert state.turns[0].answer.startswith("第二十七回")


def test_real_graph_event_stream_translates():
    model = ScriptedChatModel(responder=responder(
        evaluations=[ev(False, ["TV episode"], web_query="86版西游记 三打白骨精 第几集"), ev(True, confidence=0.9)],
        answer="原著第二十七回[1]；电视剧第11集[3]。"))
    deps = Deps(settings=make_settings(search_provider="fake", max_web_rounds=1), llm=model,
                retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    graph = build_graph(deps)
    thread = str(uuid.uuid4())
    state = start_turn(UiState(), QUESTION)
    growing = []
    for event in run_turn(graph, QUESTION, thread_id=thread):
        state = apply_event(state, event)
        if isinstance(event, Token):
            growing.append(state.current.answer)
    turn = state.current
    assert turn.status == "done", turn.error
    assert [e.node for e in turn.entries] == ["route_question", "retrieve_local", "evaluate", "web_search",
                                              "evaluate", "generate", "verify_answer"]
    assert len(growing) > 1 and growing[-1] == "原著第二十七回[1]；电视剧第11集[3]。"
    assert [e.evaluation.enough for e in turn.entries if e.evaluation is not None] == [False, True]
    assert turn.entries[3].web_rounds[0]["query"] == "86版西游记 三打白骨精 第几集"
    assert [r.url for r in turn.web_results] == [r.url for r in WEB]
    assert turn.answer == "原著第二十七回[1]；电视剧第11集[3]。"
    assert turn.total_s is not None and turn.total_s >= sum(e.duration_s for e in turn.entries) * 0.5
