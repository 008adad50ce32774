"""The judge in each mode with a scripted model: verified, unverified, not found, invalid output."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from rag.agent import prompts
from rag.agent.context import format_book_context
from rag.agent.judge import JudgeConfig, JudgeRequest, judge, judge_messages, sources_of
from rag.i18n import Msg, codes, text
from rag.schemas import Passage, SearchResult
from rag.testing.fakes import ScriptedChatModel

PASSAGES = [
    Passage(id="a", text="须菩提祖师半夜传授悟空长生之道。祖师便传他筋斗云：一个筋斗能翻十万八千里。",
            chapter_title="学艺与筋斗云（第二回）", book_title="《西游记导读》"),
    Passage(id="b", text="悟空大闹天宫，被如来佛祖压在五行山下，五百年后才被唐僧救出。", chapter_title="大闹天宫"),
]
WEB = [SearchResult(title="TV guide", url="https://tv.example.net/x", snippet="The 1986 series shows it in episode 9.")]
QUESTION = "谁传授悟空筋斗云？一个筋斗能翻多远？"


def part(p: str, answer: str, source: int | None, quote: str) -> dict[str, Any]:
    return {"part": p, "answer": answer, "source": source, "quote": quote}


def evidence(enough: bool, *parts: dict[str, Any], web_query: str | None = None) -> dict[str, Any]:
    return {"reason": "scripted", "parts": list(parts), "enough": enough, "web_query": web_query, "confidence": 0.7}


GOOD = [part("谁传授", "须菩提祖师", 1, "须菩提祖师半夜传授悟空长生之道"),
        part("多远", "十万八千里", 1, "一个筋斗能翻十万八千里")]


def run(replies: list[Any], mode: str = "evidence", **kwargs: Any):
    model = ScriptedChatModel(replies=replies)
    request = JudgeRequest(kwargs.pop("question", QUESTION), PASSAGES, kwargs.pop("web", []),
                           context=format_book_context(PASSAGES))
    result = judge(model, request, JudgeConfig(mode=mode, **kwargs))  # type: ignore[arg-type]
    return result, model


def test_verified_evidence_is_enough() -> None:
    result, model = run([evidence(True, *GOOD)])
    ev = result.evaluation
    assert ev.enough and ev.mode == "evidence" and ev.model_enough is True and ev.missing == []
    assert [p.status for p in ev.parts] == ["verified", "verified"]
    assert model.calls[0][0] == "EvidenceJudgement"
    a, b = ev.parts[1].span or (0, 0)
    assert PASSAGES[0].text[a:b] == "一个筋斗能翻十万八千里"


def test_a_claim_of_coverage_without_verified_evidence_is_not_enough() -> None:
    forged = part("多远", "十万九千里", 1, "一个筋斗能翻十万九千里")
    result, _ = run([evidence(True, GOOD[0], forged, web_query="筋斗云 距离")])
    ev = result.evaluation
    assert not ev.enough and ev.model_enough is True
    assert [p.status for p in ev.parts] == ["verified", "unverified"]
    assert ev.missing == ["多远 (unverified)"] and ev.web_query == "筋斗云 距离"
    assert "did not verify" in ev.reason


def test_parts_not_found_are_missing() -> None:
    result, _ = run([evidence(False, GOOD[0], part("电视剧第几集", "not found", None, "not found"))])
    ev = result.evaluation
    assert not ev.enough and ev.missing == ["电视剧第几集 (not found)"]


def test_no_parts_is_never_enough() -> None:
    result, _ = run([evidence(True)])
    assert not result.evaluation.enough


def test_guarded_needs_the_model_and_the_evidence() -> None:
    assert run([evidence(True, *GOOD)], mode="guarded")[0].evaluation.enough
    modest, _ = run([evidence(False, *GOOD)], mode="guarded")
    assert not modest.evaluation.enough and "guarded" in modest.evaluation.reason
    # evidence mode trusts the verified evidence over the model's modesty
    assert run([evidence(False, *GOOD)], mode="evidence")[0].evaluation.enough


def test_verdict_mode_passes_the_model_through() -> None:
    result, model = run([{"reason": "r", "enough": True, "missing": [], "web_query": None, "confidence": 0.9}],
                        mode="verdict")
    assert result.evaluation.enough and result.evaluation.parts == [] and model.calls[0][0] == "Evaluation"


def test_a_quote_found_in_a_web_source_counts_as_web() -> None:
    web_part = part("电视剧第几集演的", "9", 3, "The 1986 series shows it in episode 9")
    result, _ = run([evidence(True, GOOD[0], web_part)], web=WEB, question="谁传授悟空筋斗云？电视剧第几集演的？")
    assert result.evaluation.enough and result.evaluation.parts[1].origin == "web"


def test_invalid_output_is_retried_with_the_error_named_then_not_enough() -> None:
    result, model = run(["not json at all", {"parts": "nonsense"}])
    assert result.invalid and not result.evaluation.enough and len(result.errors) == 2
    retry_messages = model.calls[1][1]
    assert "could not be used" in str(retry_messages[-1].content)
    assert str(model.calls[0][1][-1].content) != str(retry_messages[-1].content)


def test_a_failed_call_is_retried_unchanged() -> None:
    result, model = run([ConnectionError("refused"), evidence(True, *GOOD)])
    assert result.evaluation.enough and model.calls[0][1] == model.calls[1][1]


def test_relevance_check_can_reject_a_verified_part() -> None:
    result, _ = run([evidence(True, *GOOD), "yes", "no"], relevance=True)
    assert [p.status for p in result.evaluation.parts] == ["verified", "unverified"]
    assert not result.evaluation.enough
    detail = result.evaluation.parts[1].detail
    assert isinstance(detail, Msg) and "check.relevance_no" in codes(detail)
    assert str(detail).endswith("; relevance check: the quote does not state the answer")
    assert text("zh", detail).endswith("；相关性检查：引文并没有说出答案")


@pytest.mark.parametrize("mode", ["evidence", "verdict"])
def test_few_shot_examples_are_their_own_turns_and_fully_formatted(mode: str) -> None:
    messages = judge_messages(QUESTION, "[1] x", mode=mode, few_shot=True)  # type: ignore[arg-type]
    assert isinstance(messages[0], SystemMessage) and isinstance(messages[-1], HumanMessage)
    kinds = [type(m) for m in messages[1:-1]]
    assert kinds == [HumanMessage, AIMessage] * (len(kinds) // 2) and len(kinds) >= 4
    for m in messages:
        assert "{{" not in str(m.content) and "}}" not in str(m.content)
    replies = [str(m.content) for m in messages if isinstance(m, AIMessage)]
    assert any('"enough": true' in r for r in replies) and any('"enough": false' in r for r in replies)
    assert "西游" not in "".join(str(m.content) for m in messages[:-1])  # neutral examples
    assert QUESTION in str(messages[-1].content)
    zero = judge_messages(QUESTION, "[1] x", mode=mode, few_shot=False)  # type: ignore[arg-type]
    assert len(zero) == 2


def test_sources_are_numbered_as_the_prompt_numbers_them() -> None:
    sources = sources_of(PASSAGES, WEB, max_chars=10)
    assert [(s.number, s.origin) for s in sources] == [(1, "book"), (2, "book"), (3, "web")]
    assert sources[0].text == PASSAGES[0].text[:10]
    assert "《西游记导读》" in format_book_context(PASSAGES) and "《《" not in format_book_context(PASSAGES)


def test_book_titles_get_their_marks_once() -> None:
    from rag.agent.context import book_clause
    from rag.lang import book_title_marks

    assert [book_title_marks(t) for t in ("西游记", "《西游记》", "《西游记》阅读指南", "")] == \
        ["《西游记》", "《西游记》", "《西游记》阅读指南", ""]
    assert book_clause("《西游记》") == " (《西游记》)" and book_clause(None) == ""


def test_prompts_name_every_field() -> None:
    for name in ("reason", "parts", "enough", "web_query", "confidence", "quote", "source", "answer"):
        assert name in prompts.EVIDENCE_SYSTEM


def test_sentence_ids_are_resolved_to_the_sentences_they_name() -> None:
    model = ScriptedChatModel(replies=[evidence(True, part("谁传授", "须菩提祖师", 1, "1.1"),
                                                part("多远", "十万八千里", None, "1.1, 1.2"))])
    result = judge(model, JudgeRequest(QUESTION, PASSAGES, context="unused"), JudgeConfig(evidence="sentence"))
    ev = result.evaluation
    assert ev.enough and [p.status for p in ev.parts] == ["verified", "verified"]
    assert ev.parts[0].quote == "须菩提祖师半夜传授悟空长生之道。" and ev.parts[1].source == 1
    prompt = str(model.calls[0][1][-1].content)
    assert "<<<SOURCE 1>>>" in prompt and "(1.1) 须菩提祖师半夜传授悟空长生之道。" in prompt and "unused" not in prompt
    assert "id of the sentence" in str(model.calls[0][1][0].content)


def test_a_wrong_sentence_id_or_an_answer_not_in_the_sentence_does_not_verify() -> None:
    model = ScriptedChatModel(replies=[evidence(True, part("谁传授", "须菩提祖师", 1, "1.9"),
                                                part("多远", "十万八千里", 2, "2.1"))])
    ev = judge(model, JudgeRequest(QUESTION, PASSAGES), JudgeConfig(evidence="sentence")).evaluation
    assert not ev.enough and [p.status for p in ev.parts] == ["unverified", "unverified"]
