"""The judge's decision rule (``rag.agent.judge.decide``): code overrides the model's "enough" only for
what it can show is wrong; a part it cannot decide is marked so, shown in the trace, and the model's
verdict stands on it, unless the model is a small one (``JudgeConfig.strict``)."""

from __future__ import annotations

from typing import Any

from rag.agent.context import format_book_context
from rag.agent.judge import JudgeConfig, JudgeRequest, judge
from rag.agent.profile import small_model
from rag.cli import PART_MARKS
from rag.schemas import Passage
from rag.testing.fakes import ScriptedChatModel
from rag.ui.render.trace import evaluation_html

PASSAGES = [Passage(id="a", text="悟空大闹天宫，被如来佛祖压在五行山下，五百年后才被唐僧救出。", chapter_title="大闹天宫")]
QUESTION = "悟空大闹天宫之后怎样了？"
QUOTE = "被如来佛祖压在五行山下，五百年后才被唐僧救出"
# a faithful paraphrase whose words are mostly not the quote's: character comparison cannot decide it
PARAPHRASE = {"part": "悟空大闹天宫之后怎样了", "answer": "被佛祖镇压，后来由取经的和尚放出", "source": 1, "quote": QUOTE}


def decided(parts: list[dict[str, Any]], enough: bool = True, *, strict: bool = False, question: str = QUESTION):
    reply = {"reason": "scripted", "parts": parts, "enough": enough, "web_query": None, "confidence": 0.8}
    request = JudgeRequest(question, PASSAGES, context=format_book_context(PASSAGES))
    return judge(ScriptedChatModel(replies=[reply]), request, JudgeConfig(strict=strict)).evaluation


def test_a_part_code_cannot_decide_leaves_a_capable_models_enough_standing() -> None:
    ev = decided([PARAPHRASE])
    assert [p.status for p in ev.parts] == ["undecided"]
    assert ev.enough and ev.model_enough and "could not confirm" in ev.reason


def test_an_undecided_part_is_not_enough_when_the_model_says_not_enough_or_is_small() -> None:
    assert not decided([PARAPHRASE], enough=False).enough
    strict = decided([PARAPHRASE], strict=True)
    assert not strict.enough and [p.status for p in strict.parts] == ["unverified"]
    assert small_model(ScriptedChatModel(replies=[], model_name="replay:qwen1.5b"))
    assert not small_model(ScriptedChatModel(replies=[], model_name="replay:capable"))


def test_what_code_can_show_wrong_still_makes_it_not_enough() -> None:
    not_in_sources = {**PARAPHRASE, "quote": "如来把悟空关进了炼丹炉里烧了七七四十九天"}
    hedged = {**PARAPHRASE, "answer": "被压在山下（未说明多久）"}
    for part in (not_in_sources, hedged):
        ev = decided([part])
        assert not ev.enough and [p.status for p in ev.parts] == ["unverified"], part
        assert "did not verify" in ev.reason
    # a question part left out: the judge covered only the first sentence of a two-part question
    left_out = decided([PARAPHRASE], question=f"{QUESTION}后来他拜谁为师，取了什么法号？")
    assert not left_out.enough and any("拜谁为师" in m for m in left_out.missing)


def test_an_undecided_part_is_shown_as_such_in_the_trace_and_the_cli() -> None:
    ev = decided([PARAPHRASE])
    assert "代码无法判定" in evaluation_html(ev, 1, "zh") and "not decided by code" in evaluation_html(ev, 1, "en")
    assert 'class="part part-undecided"' in evaluation_html(ev, 1, "en")
    assert PART_MARKS["undecided"].strip() == "[undecided]"


def test_the_option_a_verified_answer_picks_covers_a_choice_question() -> None:
    question = "如来把悟空压在哪座山下？是五行山还是花果山？"
    part = {"part": "悟空被压在哪里", "answer": "五行山", "source": 1, "quote": QUOTE}
    ev = decided([part], question=question)
    assert [p.status for p in ev.parts] == ["verified"] and ev.enough
    # the same part with an answer the quote does not verify covers nothing of the choice
    wrong = decided([{**part, "answer": "花果山"}], question=question)
    assert not wrong.enough
