"""One scripted turn of the graph as UI events (route, retrieve, evaluate, web search, evaluate,
generate), shared by the translation and rendering tests."""

from __future__ import annotations

from rag.agent.events import NodeFinished, NodeStarted, QuestionFold, Token, TurnFinished
from rag.agent.state import RESET
from rag.checks import SentenceCheck
from rag.i18n import Msg
from rag.schemas import Evaluation, Passage, RouteDecision, SearchResult

QUESTION = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"
PASSAGES = [
    Passage(id="p1", text="白骨夫人三次变化，悟空三打。", book_id="b1", book_title="西游记导读", chapter_num=27,
            chapter_title="第二十七回 尸魔三戏唐三藏", score=0.91, source="hybrid"),
    Passage(id="p2", text="悟空被逐回花果山。", book_id="b1", chapter_num=28, chapter_title="第二十八回", score=0.42,
            source="keyword"),
]
WEB = [
    SearchResult(title="<img src=x onerror=alert(1)>", url="https://example.org/ep", snippet="第11集", provider="fake"),
    SearchResult(title="86版西游记分集", url="https://tv.example.org/list", snippet="分集剧情", site_name="tv"),
]
E1 = Evaluation(reason="book has the chapter, not the episode", enough=False, missing=["TV episode"],
                web_query="1986 西游记 三打白骨精 第几集", confidence=0.8)
E2 = Evaluation(reason="both parts covered", enough=True, missing=[], web_query=None, confidence=0.9)


ANSWER = "第二十七回[1]，第11集[3]。"
CHECKS = [SentenceCheck(text=ANSWER, start=0, end=len(ANSWER), citations=(1, 3), status="supported",
                        reason=Msg.of("check.sentence_supported"), origin="both")]


def scripted_turn() -> list:
    """A turn's events as the graph emits them: each update holds only what its node added (and the
    per-question lists after it, as ``rag.agent.events`` folds them), and route_question's update
    starts the per-question lists afresh."""
    fold = QuestionFold().update
    return [
        NodeStarted("route_question", 0.0),
        NodeFinished("route_question", 0.1, fold({"route": RouteDecision(reason="about the book", strategy="complex"),
                                                  "standalone_question": QUESTION, "passages": [],
                                                  "evaluations": [RESET], "web_rounds": [RESET],
                                                  "web_results": [RESET], "notices": [RESET]})),
        NodeStarted("retrieve_local", 0.1),
        NodeFinished("retrieve_local", 0.2, fold({"passages": PASSAGES})),
        NodeStarted("evaluate", 0.3),
        NodeFinished("evaluate", 0.5, fold({"evaluations": [E1], "notices": []})),
        NodeStarted("web_search", 0.5),
        NodeFinished("web_search", 0.7, fold({
            "web_rounds": [{"query": E1.web_query, "provider": "fake", "results": WEB, "error": None,
                            "notes": [Msg.of("search.budget", used=1, total=20)]}],
            "web_results": WEB,
            "notices": [{"node": "web_search", "level": "info", "msg": Msg.of("text", value="cache miss")}],
        })),
        NodeStarted("evaluate", 0.7),
        NodeFinished("evaluate", 0.8, fold({"evaluations": [E2], "notices": []})),
        NodeStarted("generate", 0.8),
        Token("generate", "第二十七回"),
        Token("generate", "[1]，第11集[3]。"),
        NodeFinished("generate", 1.2, fold({"answer": "第二十七回[1]，第11集[3]。", "answer_mode": "full"})),
        NodeStarted("verify_answer", 1.2),
        NodeFinished("verify_answer", 1.25, fold({"answer_checks": CHECKS})),
        TurnFinished("第二十七回[1]，第11集[3]。", 1.3, {"passages": PASSAGES, "web_results": WEB,
                                                      "answer_mode": "full"}),
    ]
