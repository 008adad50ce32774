"""Recorded replies go to the case they were asked for, also when cases share a question or a passage."""

from __future__ import annotations

from rag.agent.context import format_book_context
from rag.agent.judge import judge_messages
from rag.eval.cases import Case, ContextPassage
from rag.eval.replay import CaseMatcher

CHAPTER = ("须菩提祖师半夜传授悟空长生之道。祖师又传他筋斗云。悟空即运神炼法，会了筋斗云。"
           "一个筋斗能翻十万八千里。大众听说，一个个嘻嘻笑道：悟空造化。")
Q = "孙悟空学会的筋斗云，一个跟头能翻多远？"
FULL = Case("full", Q, (ContextPassage(CHAPTER[10:]),), True, "full")
# the same question on a passage that begins earlier and stops before the answer: FULL's passage
# begins inside it
RELATED = Case("related", Q, (ContextPassage(CHAPTER[:40]),), False, "related_not_containing")
# a question that holds FULL's whole question, on the same passage
HALF = Case("half", Q + "扮演孙悟空的演员是谁？", (ContextPassage(CHAPTER[10:]),), False, "half")


def _prompt(case: Case) -> str:
    passages = case.passages()
    return str(judge_messages(case.question, format_book_context(passages))[-1].content)


def test_each_request_is_matched_to_its_own_case_first() -> None:
    matcher = CaseMatcher([FULL, RELATED, HALF])
    for case in (FULL, RELATED, HALF):
        assert matcher.match(_prompt(case), with_passages=True)[0] is case, case.id
    # the router's prompt carries only the question: the longest question found wins
    assert matcher.match(HALF.question, with_passages=False)[0] is HALF


def test_the_small_turns_extraction_is_matched_by_the_sentences_it_shows() -> None:
    from rag.agent.extract import extract_messages, question_parts
    from rag.agent.judge import sources_of
    from rag.checks.select import bearing_sentences
    from rag.eval.replay import call_of

    matcher = CaseMatcher([FULL, RELATED, HALF])
    for case in (FULL, RELATED):
        chosen = bearing_sentences(case.question, sources_of(case.passages()))
        messages = extract_messages(case.question, question_parts(case.question), chosen)
        body = {"messages": [{"role": "system", "content": str(messages[0].content)},
                             {"role": "user", "content": str(messages[1].content)}]}
        assert call_of(body) == "extract"
        # FULL and RELATED share the question; only the sentences shown tell them apart
        assert matcher.match(str(messages[1].content), with_passages=False, sentences=True)[0] is case, case.id
