"""Issue 23, item 4: the compact turn profile for a small local model, the query rewrite that never
writes an answer as a query, and the raw-passage fallback that is not sentence-checked as an answer."""

from __future__ import annotations

import uuid

import pytest
from conftest import ev, evidence_for, judge_prompt, make_settings, responder
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from rag.agent.deps import Deps
from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.agent.profile import model_size_b, passage_chars, turn_profile
from rag.agent.rewrite import QueryRewriter, split_queries, states_fact
from rag.i18n import text
from rag.llm import make_chat_model
from rag.schemas import Passage
from rag.testing.fakes import FakeRetriever, ScriptedChatModel
from rag.testing.openai_stub import OpenAIStub, Trickle, request_kind
from rag.ui.render.answer import link_citations

# A book whose passages name 孙悟空 and 金箍棒 often enough for the book-term check (rag.agent.routing).
BOOK = [Passage(id=f"p{i}", text=body, book_id="b1", book_title="西游记导读", chapter_num=i, chapter_title=f"第{i}回",
                score=1 - i / 10, source="hybrid")
        for i, body in enumerate([
            "孙悟空在东海龙宫得到一根铁棒，写着如意金箍棒，重一万三千五百斤。" + "大圣将金箍棒藏在耳中。" * 80,
            "孙悟空拿出金箍棒，打死了白骨精。",
            "孙悟空把金箍棒变成绣花针。",
            "唐僧在五庄观吃人参果。",
        ], start=1)]
QUESTION = "孙悟空的金箍棒有多重？"


def run(graph, question=QUESTION):
    events = list(run_turn(graph, question, thread_id=str(uuid.uuid4())))
    assert isinstance(events[-1], TurnFinished), events[-1]
    return events[-1].values


def codes(values, node=None):
    return [n["msg"].code for n in values["notices"] if node is None or n["node"] == node]


def rewrite_responder(rewrite_reply: str, **kwargs):
    base = responder(**kwargs)

    def reply(messages, *, schema):
        if "You write search queries" in str(messages[0].content):
            return rewrite_reply
        return base(messages, schema=schema)

    return reply


# --------------------------------------------------------------------------- which profile
@pytest.mark.parametrize(("name", "size"), [
    ("qwen2.5-coder-1.5b", 1.5), ("Qwen2.5-1.5B-Instruct-GGUF", 1.5), ("qwen2.5:0.5b", 0.5),
    ("llama-3.2-3b-instruct", 3.0), ("qwen2.5:7b", 7.0), ("qwen3-30b-a3b", 30.0), ("gemma-3-270m-it", 0.27),
    ("deepseek-chat", None), ("gpt-4o-mini", None), ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1.5),
    ("replay:qwen1.5b", 1.5), ("llama3", None),
])
def test_a_model_names_size(name: str, size: float | None) -> None:
    assert model_size_b(name) == size


def test_auto_is_small_for_a_small_or_embedded_model_and_the_setting_wins() -> None:
    def model(name: str) -> ScriptedChatModel:
        return ScriptedChatModel(replies=[], model_name=name)

    assert turn_profile(make_settings(), model("qwen2.5-coder-1.5b")) == "small"
    assert turn_profile(make_settings(), model("llama3.2:3b")) == "small"
    assert turn_profile(make_settings(), model("qwen2.5:7b")) == "full"
    assert turn_profile(make_settings(), model("deepseek-chat")) == "full"
    assert turn_profile(make_settings(), None) == "full"
    assert turn_profile(make_settings(turn_profile="full"), model("qwen2.5-0.5b")) == "full"
    assert turn_profile(make_settings(turn_profile="compact"), model("deepseek-chat")) == "compact"
    from rag.llm import LOCAL_MODEL

    embedded = model("local")  # the embedded runtime, whatever its name: its metadata says so
    embedded.metadata = {LOCAL_MODEL: True}
    assert turn_profile(make_settings(), embedded) == "small"


def test_compact_passages_fit_a_4k_context() -> None:
    settings = make_settings()
    per = passage_chars(settings, 6)
    assert 6 * per <= (4096 - 1600) / 0.85 + 1 and per < settings.max_passage_chars
    assert passage_chars(settings, 1) == settings.max_passage_chars  # one passage: whole, as MAX_PASSAGE_CHARS allows
    assert passage_chars(settings, 50) == 160  # never cut to nothing


# --------------------------------------------------------------------------- the compact turn
def compact_graph(model, passages=BOOK, **settings):
    deps = Deps(settings=make_settings(turn_profile="compact", **settings), llm=model,
                retriever=FakeRetriever(passages), rewriter=QueryRewriter(model))
    return build_graph(deps), deps


def test_a_compact_book_question_is_routed_by_code_and_not_rewritten() -> None:
    model = ScriptedChatModel(responder=rewrite_responder("should never be asked", evaluations=[ev(True)],
                                                          answer="重一万三千五百斤 [1]。"))
    graph, deps = compact_graph(model)
    values = run(graph)
    schemas = [schema for schema, _ in model.calls]
    assert "RouteDecision" not in schemas  # the book-term check decided: no router call
    assert not any("You write search queries" in str(m[0].content) for _, m in model.calls)  # no rewrite call
    assert schemas == ["EvidenceJudgement", None]  # the judge, then the answer: two calls in all
    assert values["route"].strategy == "complex" and "孙悟空" in values["route"].reason
    assert "agent.routed_by_code" in codes(values, "route_question")
    assert "agent.rewrite_skipped_compact" in codes(values, "retrieve_local")
    assert values["answer_mode"] == "full" and values["answer_checks"]


def test_a_compact_general_question_still_asks_the_router() -> None:
    model = ScriptedChatModel(responder=responder(route="simple", answer="A novel is a long fiction."))
    graph, _ = compact_graph(model)
    values = run(graph, "What is a novel?")
    assert [schema for schema, _ in model.calls] == ["RouteDecision", None]
    assert values["answer_mode"] == "direct"


def test_the_compact_answer_prompt_extends_the_judges_prompt() -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(True)], answer="重一万三千五百斤 [1]。"))
    graph, deps = compact_graph(model)
    run(graph)
    (_, judged), (_, answer) = model.calls
    # No few-shot turns: the judge reads its system prompt and the real question only.
    assert [type(m) for m in judged] == [SystemMessage, HumanMessage]
    # The answer prompt starts with exactly what the judge was sent (llama.cpp's cached prefix) ...
    assert [(type(m), m.content) for m in answer[:len(judged)]] == [(type(m), m.content) for m in judged]
    # ... then the judge's findings and the request, the only new text.
    findings, request = answer[len(judged):]
    assert isinstance(findings, AIMessage) and '"enough": true' in findings.content
    assert isinstance(request, HumanMessage) and "do NOT reply with JSON" in request.content
    assert "Chinese" in request.content and "老周在岛上住了十二年[1]。" in request.content
    # The long first passage is cut to what fits the compact context, in the prompt and in what its
    # quotes are checked against.
    per = passage_chars(deps.settings, len(BOOK))
    assert BOOK[0].text[:per] in judged[-1].content and BOOK[0].text[:per + 20] not in judged[-1].content


def test_a_compact_partial_answer_names_what_is_missing() -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["电视剧集数"])], answer="部分答案 [1]"))
    graph, _ = compact_graph(model)
    values = run(graph)
    request = model.calls[-1][1][-1].content
    assert values["answer_mode"] == "partial"
    assert "尚缺的信息" in request and "无法从资料中确认" in request
    assert '"answer": "not found"' in model.calls[-1][1][-2].content  # no unverified claim offered to the writer


def test_the_full_profile_keeps_the_router_the_rewrite_and_the_few_shot() -> None:
    model = ScriptedChatModel(responder=rewrite_responder("大圣 如意金箍棒 斤两", evaluations=[ev(True)],
                                                          answer="重一万三千五百斤 [1]。"))
    deps = Deps(settings=make_settings(turn_profile="full"), llm=model, retriever=FakeRetriever(BOOK),
                rewriter=QueryRewriter(model))
    run(build_graph(deps))
    schemas = [schema for schema, _ in model.calls]
    assert schemas == ["RouteDecision", None, "EvidenceJudgement", None]
    judged = model.calls[2][1]
    assert len(judged) == 6  # system, two few-shot examples (user + assistant each), the question
    assert "You answer questions about a book" in model.calls[-1][1][0].content


# --------------------------------------------------------------------------- the rewrite states no answer
@pytest.mark.parametrize(("line", "question"), [
    ("吴承恩是1927年去世的。", "《西游记》的作者吴承恩是哪一年去世的？"),
    ("86版电视剧中孙悟空的扮演者是张国立。", "86版电视剧中孙悟空的扮演者是谁？"),
    ("孙悟空的扮演者是张国立", "86版电视剧中孙悟空的扮演者是谁？"),
    ("金箍棒重一万三千五百斤。", QUESTION),
    ("猪八戒原是天蓬元帅。", "猪八戒原来是天上的什么神？"),
    ("Wu Cheng'en died in 1927.", "When did Wu Cheng'en die?"),
    ("The actor was Liu Xiao Ling Tong.", "Who played Sun Wukong in the 1986 series?"),
    # lines the 1.5B wrote as rewrites (bench/results/retrieval_rewrite_qwen1.5b.json)
    ("取经成功后猪八戒被封为齐天大圣。", "取经成功后猪八戒被封为什么？"),
    ("车迟国鹿力大仙要和唐僧赌酒。", "车迟国鹿力大仙要和唐僧赌什么？"),
    ("孙悟空在天庭第一次当的官是五品。", "孙悟空在天庭第一次当的官是几品？"),
    ("金顶。", "如来佛祖用什么山压住了孙悟空？"),
    ("西游记 奎木狼私自下界 100年", "奎木狼私自下界了多少时候？"),
    # the 1.5B's: a question, then its answer on the same line
    ('What title is Zhu Bajie given when the pilgrims return? Zhu Bajie is given the title of "Wuji" (武吉) by the '
     "pilgrims.", "What title is Zhu Bajie given when the pilgrims return?"),
    ("金箍棒有多重？重一万三千五百斤。", "如意金箍棒有多重？"),
])
def test_a_line_that_states_an_answer_is_refused(line: str, question: str) -> None:
    assert states_fact(line, question)


@pytest.mark.parametrize(("line", "question"), [
    ("行者的如意金箍棒有多重", QUESTION),  # the question restated in the book's words
    ("大圣 如意金箍棒 斤两 重量", QUESTION),  # keywords
    ("吴承恩 去世 薨 亡 年份", "《西游记》的作者吴承恩是哪一年去世的？"),
    ("行者三打尸魔是在原著第几回", "孙悟空三打白骨精发生在原著第几回？"),
    ("唐僧 收 行者 为徒 悟空", "唐僧的大徒弟是谁？"),  # keywords with a verb among them
    ("孔明借东风之处", "诸葛亮借东风是在哪里？"),
    ("Sun Wukong golden cudgel weight", "How heavy is Sun Wukong's staff?"),
    ("Who played the Monkey King in the 1986 television series?", "Who played Sun Wukong in the 1986 series?"),
    ("乌鸡国的国王被害死的原因是什么？", "乌鸡国的国王是怎么被害死的？"),  # the 1.5B's, a fair restatement
    ("孙悟空在天宫头一个官职是几品？", "What rank was Sun Wukong's first post in heaven?"),  # a translation
    ("Who is Sun Wukong? Where does he live?", "Who is Sun Wukong and where does he live?"),  # two questions
])
def test_good_rewrites_are_kept(line: str, question: str) -> None:
    assert not states_fact(line, question)
    assert split_queries(line, question) == ([line], [])


def test_one_refused_line_leaves_the_question_alone() -> None:
    queries, refused = split_queries("吴承恩是1927年去世的。\n吴承恩 1927 去世", "吴承恩是哪一年去世的？")
    assert queries == [] and refused == ["吴承恩是1927年去世的。", "吴承恩 1927 去世"]  # a keyword line with the guessed year too


@pytest.mark.parametrize("profile", ["full"])
def test_a_refused_rewrite_is_shown_in_the_trace_and_the_question_searched_alone(profile: str) -> None:
    question = "86版电视剧中孙悟空的扮演者是谁？"
    model = ScriptedChatModel(responder=rewrite_responder("86版电视剧中孙悟空的扮演者是张国立。\n张国立 孙悟空 扮演",
                                                          evaluations=[ev(True)], answer="见[1]。"))
    retriever = FakeRetriever(BOOK)
    graph = build_graph(Deps(settings=make_settings(turn_profile=profile), llm=model, retriever=retriever,
                             rewriter=QueryRewriter(model)))
    values = run(graph, question)
    search = [c for c in retriever.calls if c["k"] == 6][-1]  # the retrieval (the route's check asks for 8)
    assert search["query"] == question and "queries" not in search
    refused = [n for n in values["notices"] if n["msg"].code == "agent.rewrite_refused"]
    assert refused and refused[0]["level"] == "warning" and "张国立" in refused[0]["msg"].params["lines"]
    assert "agent.searched_also" not in codes(values)
    assert "改为只用原问题检索" in text("zh", refused[0]["msg"])


def test_a_good_rewrite_is_still_searched() -> None:
    model = ScriptedChatModel(responder=rewrite_responder("行者的如意金箍棒有多重\n大圣 如意金箍棒 斤两",
                                                          evaluations=[ev(True)], answer="见[1]。"))
    retriever = FakeRetriever(BOOK)
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=retriever, rewriter=QueryRewriter(model)))
    values = run(graph)
    assert retriever.calls[-1]["queries"] == ["行者的如意金箍棒有多重", "大圣 如意金箍棒 斤两"]
    assert "agent.searched_also" in codes(values) and "agent.rewrite_refused" not in codes(values)


# --------------------------------------------------------------------------- a failed or cut answer
@pytest.mark.parametrize("profile", ["full", "compact"])
def test_a_failed_model_leaves_one_line_and_no_passages_in_the_answer(profile: str) -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(True)], answer=RuntimeError("connection reset")))
    graph = build_graph(Deps(settings=make_settings(turn_profile=profile), llm=model, retriever=FakeRetriever(BOOK)))
    values = run(graph)
    assert "RuntimeError" in values["answer"] and "来源" in values["answer"]
    assert "[1]" not in values["answer"] and "一万三千五百斤" not in values["answer"]  # no passage pasted in
    assert values["answer_checks"] == []  # the app's line is not checked as an answer sentence
    assert values["unprocessed_from"] == 0
    assert "agent.verify_skipped_raw" in codes(values, "verify_answer")
    page = link_citations(values["answer"], 0, values["passages"], [], values["answer_checks"], "zh")
    assert text("zh", "sent_uncited") not in page and "sent-uncited" not in page


def test_an_answer_cut_short_is_checked_up_to_the_line_that_says_so() -> None:
    """Real HTTP: a loopback OpenAI-compatible server that goes silent mid-answer (STREAM_IDLE_TIMEOUT)."""
    answer = "金箍棒重一万三千五百斤 [1]。" * 3

    def respond(body):
        kind = request_kind(body)
        if kind == "RouteDecision":
            return {"reason": "scripted", "strategy": "complex"}
        if kind == "EvidenceJudgement":
            return evidence_for(ev(True), judge_prompt([m["content"] for m in body["messages"]]))
        return Trickle(answer, every=0.02, piece=len(answer) // 3, stall_after=2)

    with OpenAIStub(respond) as stub:
        settings = make_settings(llm_base_url=stub.base_url, llm_api_key="sk-test", llm_model="stub-model",
                                 llm_timeout=3600.0, stream_idle_timeout=0.5)
        values = run(build_graph(Deps(settings=settings, llm=make_chat_model(settings), retriever=FakeRetriever(BOOK))))
    raw_from = values["unprocessed_from"]
    written = answer[:2 * (len(answer) // 3)]
    assert raw_from == len(written) + 2 and values["answer"].startswith(written + "\n\n")
    assert "STREAM_IDLE_TIMEOUT" in values["answer"][raw_from:] and "[1]" not in values["answer"][raw_from:]
    assert "\n" not in values["answer"][raw_from:]  # one line, no passages after it
    checks = values["answer_checks"]
    assert checks and all(c.end <= raw_from for c in checks)  # the model's sentences only
    assert checks[0].status == "supported" and "agent.verify_skipped_raw" in codes(values, "verify_answer")


def test_a_complete_answer_is_checked_whole() -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(True)], answer="金箍棒重一万三千五百斤 [1]。"))
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=FakeRetriever(BOOK)))
    values = run(graph)
    assert values["unprocessed_from"] is None and values["answer_checks"][0].status == "supported"
    assert "agent.verify_skipped_raw" not in codes(values)


# --------------------------------------------------------------------------- the book's language (issue 24)
def test_the_rewrite_is_asked_for_in_the_language_of_the_books_text_not_of_its_file_name() -> None:
    """A Chinese book named by its file ("sanguoyanyi") was said to be "written in the language of its
    title", so a capable model restated English questions in English."""
    prompts: list[str] = []

    def reply(messages, *, schema):
        if "You write search queries" in str(messages[0].content):
            prompts.append(str(messages[0].content))
            return "刘备 关羽 张飞 结义\n桃园 结义"
        return responder(evaluations=[ev(True)], answer="见[1]。")(messages, schema=schema)

    book = [Passage(id="s1", text="刘备、关羽、张飞三人于桃园结义，誓同生死。" * 3, book_id="sg", book_title="sanguoyanyi",
                    chapter_num=1, chapter_title="第1章", score=1.0, source="hybrid")]
    model = ScriptedChatModel(responder=reply)
    retriever = FakeRetriever(book, titles={"sg": "sanguoyanyi"})
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=retriever, rewriter=QueryRewriter(model)))
    events = list(run_turn(graph, "Where did Liu Bei swear brotherhood?", thread_id=str(uuid.uuid4()), book_id="sg"))
    assert isinstance(events[-1], TurnFinished)
    assert prompts and "The book is written in Chinese." in prompts[0] and "《sanguoyanyi》" in prompts[0]
    assert retriever.calls[-1]["queries"] == ["刘备 关羽 张飞 结义", "桃园 结义"]
