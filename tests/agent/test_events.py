"""The typed event stream (rag.agent.events): each finished node carries its additions and the
per-question lists after it as the graph computed them; a set ``cancel`` ends a turn at its next
step; a failed turn carries a catalogue message. Plus the catalogue texts the panels show."""

from __future__ import annotations

import threading
import time
import uuid

from conftest import ev, make_settings, responder
from fixtures_ui.turn import PASSAGES, QUESTION, WEB

from rag.agent.deps import Deps
from rag.agent.events import (
    NodeFinished,
    NodeStarted,
    NodeUpdate,
    QuestionFold,
    TurnFailed,
    TurnFinished,
    run_turn,
)
from rag.agent.graph import build_graph
from rag.agent.names import EVALUATE, RETRIEVE, ROUTE, WEB_SEARCH
from rag.agent.state import RESET
from rag.i18n import Msg, text
from rag.schemas import Evaluation, Passage, SearchResult
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.ui.render import passage_label, render_sources, render_trace
from rag.ui.translate import UiState, apply_events, start_turn, trace_model, turn_result

PER_QUESTION = ("evaluations", "web_rounds", "web_results", "notices")


def graph_with_two_rounds():
    model = ScriptedChatModel(responder=responder(
        evaluations=[ev(False, ["TV episode"], web_query="q1"), ev(False, ["TV episode"], web_query="q2"),
                     ev(True, confidence=0.9)],
        answer="原著第二十七回[1]。"))
    deps = Deps(settings=make_settings(search_provider="fake", max_web_rounds=2), llm=model,
                retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    return build_graph(deps)


def test_each_node_carries_the_lists_the_graph_has_after_it():
    graph = graph_with_two_rounds()
    thread = str(uuid.uuid4())
    events = list(run_turn(graph, QUESTION, thread_id=thread))
    final = events[-1]
    assert isinstance(final, TurnFinished), final
    finished = [e for e in events if isinstance(e, NodeFinished)]
    assert all(isinstance(e.update, NodeUpdate) for e in finished)
    assert finished[0].node == ROUTE and finished[0].update.resets and finished[0].update.route is not None
    rounds = [len(e.update.lists.evaluations) for e in finished if e.node == EVALUATE]
    assert rounds == [1, 2, 3]  # each evaluate adds one, the list grows as the graph's reducer grows it
    assert all(isinstance(x, Evaluation) for e in finished for x in e.update.evaluations)
    retrieved = [e for e in finished if e.node == RETRIEVE][0].update
    assert retrieved.passages and all(isinstance(p, Passage) for p in retrieved.passages)
    last = finished[-1].update.lists
    for key in PER_QUESTION:  # after the last node: exactly the graph's final state
        assert list(getattr(last, key)) == list(final.values.get(key) or []), key
    searches = [e.update for e in finished if e.node == WEB_SEARCH]
    assert [r["query"] for r in searches[-1].lists.web_rounds] == ["q1", "q2"]
    assert len(searches[-1].web_rounds) == 1  # what this node added
    # the mapping view is the node's update as the graph returned it
    assert finished[0].update["evaluations"] == [RESET]


def test_the_fold_is_the_reducers_and_a_plain_update_is_typed():
    fold = QuestionFold()
    a = SearchResult(title="a", url="https://x.org/a", snippet="s", provider="fake")
    first = fold.update({"web_results": [RESET, a, a.model_dump(), {"bad": 1}], "notices": [RESET]})
    assert first.resets and first.web_results == (a, a) and first.lists.web_results == (a,)  # one per URL
    second = fold.update({"web_results": [a]})
    assert second.lists.web_results == (a,) and second.web_results == (a,)
    plain = NodeFinished("evaluate", 0.1, {"evaluations": [ev(True)]})
    assert isinstance(plain.update.evaluations[0], Evaluation)
    assert plain.update.lists.evaluations == plain.update.evaluations


def test_a_set_cancel_ends_the_turn_at_its_next_step():
    model = ScriptedChatModel(responder=responder(evaluations=[ev(True)], answer="原著第二十七回[1]。"))
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=FakeRetriever(PASSAGES), web_search=None))
    cancel = threading.Event()
    seen = []
    started = time.monotonic()
    for event in run_turn(graph, QUESTION, thread_id=str(uuid.uuid4()), cancel=cancel):
        seen.append(event)
        if isinstance(event, NodeStarted) and event.node == RETRIEVE:
            cancel.set()
    assert time.monotonic() - started < 10
    assert not any(isinstance(e, (TurnFinished, TurnFailed)) for e in seen)  # the reader stopped it
    assert not any(isinstance(e, NodeStarted) and e.node == EVALUATE for e in seen)


def test_a_failed_turn_carries_a_catalogue_message_in_both_languages():
    message = Msg.of("turn.time_limit", level="error", seconds="0.5", waiting="retrieve_local")
    assert "TURN_TIMEOUT=0.5 s" in text("en", message) and "retrieve_local" in text("en", message)
    assert "时限" in text("zh", message) and "retrieve_local" in text("zh", message)
    assert "流程图" in text("zh", Msg.of("turn.time_limit", seconds="1", waiting=Msg.of("turn.the_graph")))
    state = apply_events(start_turn(UiState(), "q"), [NodeStarted("route_question", 0.0),
                                                      TurnFailed(message, 0.7)])
    assert "不再等待" in render_trace(state.current, "zh")
    assert turn_result(state.current)["error"] == text("en", message)
    assert trace_model(state.current)["error"] == text("en", message)
    unexpected = Msg.of("turn.unexpected", level="error", name="ZeroDivisionError", detail="bad index")
    assert str(unexpected) == "ZeroDivisionError: bad index"
    plain = TurnFailed("boom", 0.1)
    assert isinstance(plain.message, Msg) and str(plain.message) == "boom"


def test_an_untitled_chapter_is_labelled_in_the_readers_language():
    untitled = Passage(id="p9", text="正文", book_id="b1", chapter_num=3, chapter_title="", score=0.5)
    assert passage_label(untitled, "en") == "Chapter 3" and passage_label(untitled, "zh") == "第3章"
    assert passage_label(PASSAGES[0], "zh") == PASSAGES[0].chapter_title
    state = apply_events(start_turn(UiState(), "q"), [
        NodeFinished("retrieve_local", 0.1, {"passages": [untitled]}),
        TurnFinished("", 0.2, {"passages": [untitled]}),
    ])
    assert "第3章" in render_sources(state, "zh") and "Chapter 3" not in render_sources(state, "zh")
    assert "第3章" in render_trace(state.current, "zh")
