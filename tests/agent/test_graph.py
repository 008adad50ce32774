"""The graph end to end with a scripted model, a fake retriever and a fake web search."""

from __future__ import annotations

import uuid

import pytest
from conftest import ev, make_settings, responder
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from rag.agent.deps import Deps
from rag.agent.events import NodeFinished, NodeStarted, Progress, Token, TurnFailed, TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.errors import SearchError
from rag.i18n import Msg, codes, text
from rag.schemas import Passage, SearchResult
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel

QUESTION = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"

PASSAGES = [
    Passage(id="p1", text="第二十七回 尸魔三戏唐三藏，圣僧恨逐美猴王。白骨夫人三次变化……", book_id="b1",
            book_title="西游记导读", chapter_num=27, chapter_title="第二十七回 尸魔三戏唐三藏", score=0.9, source="hybrid"),
    Passage(id="p2", text="孙悟空被逐回花果山。", book_id="b1", book_title="西游记导读", chapter_num=28,
            chapter_title="第二十八回", score=0.5, source="keyword"),
]
WEB = [SearchResult(title="86版西游记 第七集 三打白骨精", url="https://example.org/ep7", snippet="第7集《三打白骨精》",
                    site_name="example.org", provider="fake")]


def run(graph, question=QUESTION, thread_id=None):
    events = list(run_turn(graph, question, thread_id=thread_id or str(uuid.uuid4())))
    assert isinstance(events[-1], TurnFinished), events[-1]
    return events, events[-1].values


def node_sequence(events):
    return [e.node for e in events if isinstance(e, NodeFinished)]


def build(model, *, web=True, web_error=None, passages=PASSAGES, **settings):
    search = FakeWebSearch(WEB, error=web_error) if web else None
    deps = Deps(settings=make_settings(**settings), llm=model, retriever=FakeRetriever(passages), web_search=search)
    return build_graph(deps), deps


def test_simple_route_answers_directly_without_retrieval():
    model = ScriptedChatModel(responder=responder(route="simple", answer="A novel is a long fiction."))
    graph, deps = build(model)
    events, values = run(graph, "What is a novel?")
    assert node_sequence(events) == ["route_question", "direct_answer"]
    assert values["answer"].startswith("A novel is a long fiction.\n\n(Answered from the model's general knowledge")
    assert values["answer_mode"] == "direct"
    # one search only to check the question names nothing the book uses (see test_book_terms_override_...)
    assert deps.retriever.queries == ["What is a novel?"]
    assert "".join(e.text for e in events if isinstance(e, Token)) == "A novel is a long fiction."


def test_a_simple_question_naming_what_the_book_uses_goes_to_the_book():
    book = [Passage(id=str(i), text=t, chapter_title=f"第{i}回") for i, t in enumerate(
        ["红孩儿是牛魔王之子。", "红孩儿在火云洞。", "观音收服红孩儿。", "唐僧在五庄观。"], start=1)]
    model = ScriptedChatModel(responder=responder(route="simple", evaluations=[ev(True)], answer="见[1]。"))
    deps = Deps(settings=make_settings(), llm=model, retriever=FakeRetriever(book), web_search=None)
    events, values = run(build_graph(deps), "红孩儿的父母是谁？")
    assert node_sequence(events)[:3] == ["route_question", "retrieve_local", "evaluate"]
    assert values["route"].strategy == "complex" and "红孩儿" in values["route"].reason
    assert any("the book uses 红孩儿" in str(n["msg"]) for n in values["notices"])


def test_without_a_web_query_the_web_search_asks_for_the_parts_not_covered():
    from rag.agent.nodes.web import web_query_for
    from rag.checks import PartCheck
    from rag.schemas import Evaluation

    parts = [PartCheck("三打白骨精是第几回", "第二十七回", 1, "第二十七回", "verified", "quote verbatim"),
             PartCheck("电视剧第几集", "not found", None, "not found", "not_found", "no evidence")]
    evaluation = Evaluation(reason="r", enough=False, parts=parts, missing=["电视剧第几集 (not found)"], mode="evidence")
    assert web_query_for({"question": QUESTION, "evaluations": [evaluation]}) == "电视剧第几集"
    verdict = Evaluation(reason="r", enough=False, missing=["集数"])
    assert web_query_for({"question": "问题", "evaluations": [verdict]}) == "问题 集数"


def test_book_enough_generates_without_web():
    model = ScriptedChatModel(responder=responder(evaluations=[ev(True, confidence=0.95)], answer="第二十七回 [1]"))
    graph, deps = build(model)
    events, values = run(graph)
    assert node_sequence(events) == ["route_question", "retrieve_local", "evaluate", "generate", "verify_answer"]
    assert values["answer_mode"] == "full"
    assert deps.web_search.queries == []
    assert [p.id for p in values["passages"]] == ["p1", "p2"]
    assert "[1]" in values["local_context"] and "第二十七回" in values["local_context"]
    # The generate prompt numbers the passages and carries no web sources.
    generate_prompt = model.calls[-1][1][1].content
    assert "[1] 《西游记导读》 第二十七回" in generate_prompt
    assert "[2]" in generate_prompt


def test_not_enough_then_web_then_enough():
    model = ScriptedChatModel(responder=responder(evaluations=[
        ev(False, ["电视剧集数"], web_query="86版西游记 三打白骨精 第几集"), ev(True)], answer="第27回 [1]，第7集 [3]"))
    graph, deps = build(model)
    events, values = run(graph)
    assert node_sequence(events) == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate", "verify_answer"]
    assert deps.web_search.queries == ["86版西游记 三打白骨精 第几集"]
    assert [e.enough for e in values["evaluations"]] == [False, True]
    assert values["answer_mode"] == "full"
    # The second evaluation sees book and web sources, labelled, web numbered after the book.
    second_eval_prompt = [c for c in model.calls if c[0] == "EvidenceJudgement"][1][1][-1].content
    assert "=== BOOK SOURCES ===" in second_eval_prompt and "=== WEB SOURCES" in second_eval_prompt
    assert "[3] 86版西游记 第七集" in second_eval_prompt
    generate_prompt = model.calls[-1][1][1].content
    assert "https://example.org/ep7" in generate_prompt


def test_still_not_enough_after_web_gives_partial_answer_naming_missing():
    model = ScriptedChatModel(responder=responder(evaluations=[
        ev(False, ["电视剧集数"], web_query="q1"), ev(False, ["电视剧集数", "播出年份"])], answer="部分答案"))
    graph, deps = build(model)
    events, values = run(graph)
    assert node_sequence(events)[-2:] == ["generate", "verify_answer"]
    assert len(values["web_rounds"]) == 1  # default cap
    assert values["answer_mode"] == "partial"
    generate_prompt = model.calls[-1][1][1].content
    assert "NOT sufficient" in generate_prompt and "电视剧集数 (not found); 播出年份 (not found)" in generate_prompt
    assert "尚缺的信息" in generate_prompt  # the heading in the question's language
    assert "无法从资料中确认" in model.calls[-1][1][0].content


@pytest.mark.parametrize("how", ["no_provider", "zero_rounds"])
def test_web_disabled_goes_to_partial_generate(how):
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["电视剧集数"], web_query="q")]))
    if how == "no_provider":
        graph, deps = build(model, web=False)
    else:
        graph, deps = build(model, max_web_rounds=0)
    events, values = run(graph)
    assert "web_search" not in node_sequence(events)
    assert values["answer_mode"] == "partial"
    if deps.web_search is not None:
        assert deps.web_search.queries == []
    # The judge was told that no search is possible.
    eval_prompt = [c for c in model.calls if c[0] == "EvidenceJudgement"][0][1][0].content
    assert "No further search is possible" in eval_prompt


def test_invalid_json_twice_takes_conservative_path():
    model = ScriptedChatModel(responder=responder(
        evaluations=["this is not json", "{broken", ev(True)], answer="ok"))
    graph, deps = build(model)
    events, values = run(graph)
    first = values["evaluations"][0]
    assert first.enough is False and "invalid twice" in first.reason
    assert any(n["node"] == "evaluate" and "invalid twice" in str(n["msg"]) for n in values["notices"])
    # Conservative branch: not enough -> web search, then the next evaluation says enough.
    assert node_sequence(events) == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate", "verify_answer"]


def test_invalid_json_once_is_retried():
    model = ScriptedChatModel(responder=responder(evaluations=["garbage", ev(True)]))
    graph, _ = build(model)
    _, values = run(graph)
    assert values["evaluations"][0].enough is True
    assert any("retried once" in str(n["msg"]) for n in values["notices"])


def test_router_failure_twice_takes_retrieval():
    model = ScriptedChatModel(responder=responder(route=[RuntimeError("boom"), "not json"], evaluations=[ev(True)]))
    graph, _ = build(model)
    events, values = run(graph)
    assert node_sequence(events)[:2] == ["route_question", "retrieve_local"]
    assert values["route"].strategy == "complex"
    assert any(n["node"] == "route_question" for n in values["notices"])
    notice = next(n for n in values["notices"] if n["node"] == "route_question")
    # the kind of failure is read from the error's type: the second attempt wrote bad JSON
    assert notice["msg"].code == "agent.router_invalid" and notice["level"] == notice["msg"].level == "warning"
    assert "msg" in notice and "message" not in notice and notice["msg"].params["error"].code == "llm.invalid_output"


def test_search_failure_still_reaches_an_honest_answer():
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["电视剧集数"], web_query="q"),
                                                              ev(False, ["电视剧集数"])], answer="只能确认第27回 [1]"))
    graph, _ = build(model, web_error=SearchError("bocha", "HTTP 503 from server"))
    events, values = run(graph)
    assert node_sequence(events) == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate", "verify_answer"]
    web_round = values["web_rounds"][0]
    assert str(web_round["error"]) == "bocha: HTTP 503 from server"
    assert any(n["node"] == "web_search" and "503" in str(n["msg"]) for n in values["notices"])
    failed = next(n for n in values["notices"] if n["node"] == "web_search")
    assert failed["msg"].code == "agent.web_failed" and failed["level"] == "error"
    assert failed["msg"].text("zh") == "网络搜索失败：bocha: HTTP 503 from server"
    web_finished = [e for e in events if isinstance(e, NodeFinished) and e.node == "web_search"][0]
    assert web_finished.update["web_rounds"][0]["error"]
    assert values["answer_mode"] == "partial"


def test_nothing_found_anywhere_falls_back_without_model_text():
    model = ScriptedChatModel(responder=responder(evaluations=[]))
    graph, _ = build(model, passages=[], web_error=SearchError("bocha", "timeout after 8s"))
    events, values = run(graph)
    assert node_sequence(events) == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "fallback"]
    assert values["answer_mode"] == "fallback"
    assert "没有找到" in values["answer"] and "timeout after 8s" in values["answer"]
    # No evaluation call reached the model: there was nothing to judge.
    assert [c[0] for c in model.calls] == ["RouteDecision"]


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cap=st.integers(min_value=0, max_value=3),
       verdicts=st.lists(st.one_of(st.booleans(), st.just("invalid")), min_size=1, max_size=12),
       search_fails=st.booleans())
def test_web_rounds_never_exceed_the_cap(cap, verdicts, search_fails):
    script = [ev(v, ["x"], web_query="q") if isinstance(v, bool) else "not json" for v in verdicts]
    # Pad so that the model never runs out before the graph would stop on its own.
    script += [ev(False, ["x"], web_query="q")] * 20
    model = ScriptedChatModel(responder=responder(evaluations=script))
    graph, deps = build(model, max_web_rounds=cap, web_error=SearchError("fake", "down") if search_fails else None)
    events, values = run(graph)
    assert len(values["web_rounds"]) <= cap
    assert len(deps.web_search.queries) <= cap
    assert node_sequence(events).count("evaluate") <= cap + 1
    assert node_sequence(events)[-1] in {"verify_answer", "fallback"}


def test_state_is_reset_between_questions_in_one_thread():
    model = ScriptedChatModel(responder=responder(
        evaluations=[ev(False, ["电视剧集数"], web_query="q"), ev(True), ev(True)],
        answer="回答", rewrite="白骨精的丈夫是谁？"))
    graph, deps = build(model)
    thread = "session-1"
    _, first = run(graph, thread_id=thread)
    assert len(first["web_rounds"]) == 1 and len(first["evaluations"]) == 2
    events, second = run(graph, "他丈夫呢？", thread_id=thread)
    assert node_sequence(events) == ["route_question", "retrieve_local", "evaluate", "generate", "verify_answer"]
    assert second["web_rounds"] == [] and second["web_results"] == []
    assert len(second["evaluations"]) == 1 and second["notices"] == []
    # The follow-up was rewritten with the history and retrieval used the rewritten question.
    assert second["standalone_question"] == "白骨精的丈夫是谁？"
    assert deps.retriever.queries[-1] == "白骨精的丈夫是谁？"
    assert [m.type for m in second["messages"]] == ["human", "ai", "human", "ai"]
    # A new thread starts with no history (no rewrite call).
    calls_before = len(model.calls)
    run(graph, "新问题", thread_id="session-2")
    assert all("standalone question" not in str(c[1][0].content) for c in model.calls[calls_before:])


def test_event_order_for_the_ui():
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["集数"], web_query="q"), ev(True)],
                                                  answer="答案 [1][3]"))
    graph, _ = build(model)
    events, _ = run(graph)
    kinds = []
    for e in events:
        if isinstance(e, NodeStarted):
            kinds.append(f"start:{e.node}")
        elif isinstance(e, NodeFinished):
            kinds.append(f"end:{e.node}")
        elif isinstance(e, Token):
            if not kinds or kinds[-1] != f"token:{e.node}":
                kinds.append(f"token:{e.node}")
        elif not isinstance(e, Progress):  # a streaming call's progress, for the trace (test_turn_progress)
            kinds.append(type(e).__name__)
    assert kinds == [
        "start:route_question", "end:route_question",
        "start:retrieve_local", "end:retrieve_local",
        "start:evaluate", "end:evaluate",
        "start:web_search", "end:web_search",
        "start:evaluate", "end:evaluate",
        "start:generate", "token:generate", "end:generate", "start:verify_answer", "end:verify_answer",
        "TurnFinished",
    ]
    finished = [e for e in events if isinstance(e, NodeFinished)]
    assert all(e.duration_s >= 0 for e in finished)
    assert finished[2].update["evaluations"][0].missing == ["集数 (not found)"]
    assert "".join(e.text for e in events if isinstance(e, Token)) == "答案 [1][3]"


def test_a_generation_error_is_one_line_and_the_sources_stay_in_the_sources_tab():
    model = ScriptedChatModel(responder=responder(evaluations=[ev(True)], answer=RuntimeError("connection reset")))
    graph, _ = build(model)
    _, values = run(graph)
    assert "RuntimeError" in values["answer"] and "来源" in values["answer"]
    # no passage pasted into the answer: they are the turn's sources, shown in their own tab
    assert "第二十七回" not in values["answer"] and "\n" not in values["answer"].strip()
    assert values["passages"] and any("第二十七回" in p.label() for p in values["passages"])
    assert any(n["node"] == "generate" and n["level"] == "error" for n in values["notices"])


def test_retrieval_only_mode_without_model():
    deps = Deps(settings=make_settings(), llm=None, retriever=FakeRetriever(PASSAGES), web_search=None)
    graph = build_graph(deps)
    events, values = run(graph, "白骨精")
    assert node_sequence(events) == ["retrieval_only"]
    assert values["answer_mode"] == "retrieval_only"
    assert "仅检索模式" in values["answer"] and "第二十七回" in values["answer"] and "LLM_BASE_URL" in values["answer"]
    assert values["evaluations"] == []  # never pretends to have judged


def test_evaluation_log_records_each_round():
    records = []
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["集数"], web_query="wq"), ev(True)]))
    deps = Deps(settings=make_settings(), llm=model, retriever=FakeRetriever(PASSAGES),
                web_search=FakeWebSearch(WEB), eval_log=records.append)
    run(build_graph(deps))
    assert [r["round"] for r in records] == [1, 2]
    # Each record holds what its evaluation knew: round 1 judged the book alone, round 2 the web
    # search that ran the query the judge asked for (no prediction of the next edge).
    assert records[0]["searched"] is None and "branch" not in records[0]
    assert records[1]["searched"] == {"query": "wq", "provider": "fake", "results": 1, "error": None}
    assert records[0]["model"] == "scripted-fake" and records[0]["evaluation"]["web_query"] == "wq"
    assert records[0]["evaluation"]["missing"] == ["集数 (not found)"]
    assert [r["invalid_json"] for r in records] == [False, False]


def test_unexpected_exception_in_a_node_becomes_turn_failed():
    class Exploding:
        def retrieve(self, query, k=None, book_id=None):
            raise ZeroDivisionError("bad index")

    model = ScriptedChatModel(responder=responder(evaluations=[ev(True)]))
    deps = Deps(settings=make_settings(), llm=model, retriever=Exploding(), web_search=None)
    events = list(run_turn(build_graph(deps), QUESTION, thread_id="t"))
    assert isinstance(events[-1], TurnFailed)
    assert "bad index" in str(events[-1].message)


def test_long_conversations_keep_a_bounded_history():
    from rag.agent.nodes.route import KEEP_MESSAGES

    model = ScriptedChatModel(responder=responder(route="simple", answer="ok"))
    graph, _ = build(model)
    for i in range(KEEP_MESSAGES):
        _, values = run(graph, f"question {i}", thread_id="long")
    assert len(values["messages"]) <= KEEP_MESSAGES + 2
    assert values["messages"][-2].content == f"question {KEEP_MESSAGES - 1}"


def test_a_key_echoed_in_provider_errors_never_reaches_the_trace():
    secret = "sk-live-ABCDEF0123456789"
    model = ScriptedChatModel(responder=responder(
        evaluations=[RuntimeError(f"401 invalid key {secret}"), RuntimeError(f"401 invalid key {secret}")]))
    search = FakeWebSearch(error=SearchError("bocha", f"refused token {secret}"))
    deps = Deps(settings=make_settings(), llm=model, retriever=FakeRetriever(PASSAGES), web_search=search,
                secrets=[secret])
    events = list(run_turn(build_graph(deps), QUESTION, thread_id="t"))
    assert isinstance(events[-1], TurnFinished)
    shown = repr([e.update for e in events if isinstance(e, NodeFinished)]) + repr(events[-1].values)
    assert secret not in shown
    assert "401 invalid key ***" in shown and "refused token ***" in shown


def test_direct_answers_say_they_did_not_consult_the_book():
    model = ScriptedChatModel(responder=responder(route="simple", answer="章回体是中国古典长篇小说的体裁。"))
    graph, _ = build(model)
    _, values = run(graph, "什么是章回体小说？")
    assert values["answer"].startswith("章回体是中国古典长篇小说的体裁。")
    assert values["answer"].endswith("没有查阅书籍，也没有经过判断。）")


def test_the_fakes_and_bare_sources_meet_the_protocols_the_nodes_call():
    from rag.agent.deps import as_retriever, as_web_search
    from rag.schemas import Retriever, WebSearch

    fake = FakeRetriever(PASSAGES, titles={"b1": "西游记"})
    assert isinstance(fake, Retriever) and as_retriever(fake) is fake and fake.book("b1").title == "西游记"
    assert isinstance(FakeWebSearch(), WebSearch)

    class Bare:  # only retrieve, without chapter scopes
        def retrieve(self, query, k=None, book_id=None):
            return PASSAGES[:1]

    class PlainSearch:
        name = "plain"

        def search(self, query, count):
            return []

    adapted = as_retriever(Bare())
    assert isinstance(adapted, Retriever) and adapted.search("q", k=2).passages == PASSAGES[:1]
    with pytest.raises(LookupError):
        adapted.book("b1")
    outcome = as_web_search(PlainSearch()).search_detailed("q", 3)
    assert outcome.provider == "plain" and outcome.results == []


@pytest.mark.parametrize("label", ["partial", "contradicted"])
def test_the_models_sentence_label_is_a_code(label):
    scripted = responder(evaluations=[ev(True, confidence=0.95)], answer="第二十七回 [1]")

    def reply(messages, *, schema):
        return {"reason": "only the chapter", "label": label} if schema == "SentenceLabel" else scripted(
            messages, schema=schema)

    graph, _ = build(ScriptedChatModel(responder=reply), verify_answers="llm")
    _, values = run(graph)
    check = values["answer_checks"][0]
    assert check.status == "unsupported"  # "partly stated" is no ✓ either: an added detail is what it misses
    assert isinstance(check.reason, Msg) and "check.sentence_model_label" in codes(check.reason)
    said = "partly" if label == "partial" else label
    assert str(check.reason).endswith(f"the model: {said} (only the chapter)")
    assert text("zh", check.reason).endswith(f"模型判断：{said}（only the chapter）")
