"""Evidence you can check, as the page shows it (issue 14, UI part): each evaluation's parts with
their verified / unverified / not-found quote and the model's own verdict next to the code's; the
verified quotes highlighted inside their source; each answer sentence marked supported /
unsupported / uncited with its reason, and one summary line under the answer. All pure
(rag.ui.translate, rag.ui.render), plus one run of the real graph in evidence mode."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

from conftest import ev, make_settings, responder
from fixtures_ui.turn import CHECKS, PASSAGES, QUESTION, WEB, scripted_turn

from rag.agent.deps import Deps
from rag.agent.events import NodeFinished, NodeStarted, run_turn
from rag.agent.graph import build_graph
from rag.agent.judge import sources_of
from rag.checks import PartCheck, SentenceCheck
from rag.i18n import Msg, join
from rag.schemas import Evaluation, SearchResult
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.ui.render import (
    answer_summary,
    chat_messages,
    checks_html,
    evaluation_html,
    highlight,
    link_citations,
    render_sources,
    render_trace,
    sentence_tip,
    usable_checks,
    verified_spans,
)
from rag.ui.translate import Turn, UiState, apply_event, apply_events, start_turn, turn_result

ANSWER = "第二十七回[1]。第一百回[1]。书里还说他去了花果山。- 另见：\n结论如下："


def sentence(answer: str, text: str, status: str, reason: str = "r", origin: str | None = None) -> SentenceCheck:
    start = answer.index(text)
    cites = [int(n) for n in re.findall(r"\[(\d+)\]", text)]
    return SentenceCheck(text=text, start=start, end=start + len(text), citations=tuple(cites), status=status,  # type: ignore[arg-type]
                         reason=reason, origin=origin)  # type: ignore[arg-type]


def checked_part(part: str, status: str, **found: Any) -> PartCheck:
    """A checked part with only what a test needs (no answer, source or quote)."""
    return PartCheck(part=part, answer="", source=None, quote="", status=status, detail="", **found)  # type: ignore[arg-type]


def checks_for(answer: str = ANSWER) -> list[SentenceCheck]:
    return [
        sentence(answer, "第二十七回[1]。", "supported", "its facts are in the cited sources", "book"),
        sentence(answer, "第一百回[1]。", "unsupported", "not in the cited sources: 100", "book"),
        sentence(answer, "书里还说他去了花果山。", "uncited", "states facts without citing a source"),
        sentence(answer, "结论如下：", "no_claim", "no factual claim"),
    ]


# --------------------------------------------------------------------------- translation


def test_verify_answer_update_gives_the_turn_its_sentence_checks():
    state = apply_events(start_turn(UiState(), QUESTION), scripted_turn())
    turn = state.current
    assert turn.answer_checks == tuple(CHECKS)
    verify = [e for e in turn.entries if e.node == "verify_answer"]
    assert len(verify) == 1 and verify[0].answer_checks == tuple(CHECKS)
    assert all(e.answer_checks is None for e in turn.entries if e.node != "verify_answer")
    result = turn_result(turn)
    assert result["sentence_checks"][0]["status"] == "supported" and result["mode"] == "full"
    assert [p["n"] for p in result["passages"]] == [1, 2] and [w["n"] for w in result["web_sources"]] == [3, 4]


def test_a_new_answer_drops_checks_of_the_old_text():
    state = apply_events(start_turn(UiState(), QUESTION), scripted_turn())
    state = apply_event(state, NodeStarted("generate", 2.0))
    # the turn is done: a late event opens a new (unnamed) turn; within one turn a rewritten answer clears them
    running = apply_events(start_turn(UiState(), "q"), [
        NodeFinished("verify_answer", 0.1, {"answer_checks": CHECKS}),
        NodeFinished("generate", 0.2, {"answer": "another text", "answer_mode": "full"}),
    ])
    assert running.current.answer_checks == ()
    assert state.turns[0].answer_checks == tuple(CHECKS)


# --------------------------------------------------------------------------- the answer's sentences


def test_each_checked_sentence_is_marked_with_its_reason():
    md = link_citations(ANSWER, 0, PASSAGES, WEB, checks_for(), "en")
    spans = re.findall(r'<span class="sent sent-([a-z_]+)[^"]*" tabindex="0" title="([^"]*)">', md)
    assert [s for s, _ in spans] == ["supported", "unsupported", "uncited"]  # no_claim is not marked
    titles = [html.unescape(t) for _, t in spans]
    assert titles[0] == "supported (the book): its facts are in the cited sources"
    assert titles[1] == "not supported by its sources: not in the cited sources: 100"
    assert titles[2] == "no source cited: states facts without citing a source"
    assert "origin-book" in md


def test_an_unsupported_sentence_never_looks_sourced():
    md = link_citations(ANSWER, 0, PASSAGES, WEB, checks_for(), "en")
    supported, unsupported = md.split('sent-unsupported', 1)
    assert 'class="cite cite-book" href="#src-0-1"' in supported  # a supported sentence's citation: plain link
    first_cite = re.search(r'<a class="([^"]*)"[^>]*>\[1\]</a>', unsupported)
    assert first_cite and "cite-unsupported" in first_cite.group(1)
    assert 'title="[1] does not support this sentence"' in unsupported


def test_sentence_marks_keep_markdown_structure_and_need_matching_text():
    answer = "- 第二十七回[1]。\n## 小结"
    checks = [sentence(answer, "- 第二十七回[1]。", "supported", "ok", "book")]
    md = link_citations(answer, 0, PASSAGES, [], checks, "en")
    assert md.startswith('- <span class="sent sent-supported')  # the list marker stays outside
    stale = [SentenceCheck(text="other", start=0, end=5, citations=(), status="supported", reason="")]
    assert usable_checks(answer, stale) == [] and "sent-" not in link_citations(answer, 0, PASSAGES, [], stale)


def test_summary_line_counts_sentences_that_claim_something():
    six = [SentenceCheck(text="x", start=i, end=i + 1, citations=(), status="supported", reason="") for i in range(5)]
    six.append(SentenceCheck(text="y", start=5, end=6, citations=(), status="unsupported", reason=""))
    six.append(SentenceCheck(text="z", start=6, end=7, citations=(), status="no_claim", reason=""))
    text, kind = answer_summary(six, "en")
    assert text.startswith("5 of 6 sentences supported by their sources") and kind == "some"
    assert answer_summary(six, "zh")[0].startswith("6 句中 5 句有来源支持")
    assert answer_summary(six[:5], "en") == ("5 of 5 sentences supported by their sources", "all")
    assert answer_summary([six[-1]], "en") is None


def test_chat_answer_carries_the_marks_and_the_summary_in_the_session_language():
    state = apply_events(start_turn(UiState(), QUESTION), scripted_turn())
    zh = chat_messages(state, "zh")[-1]["content"]
    assert 'class="answer-summary summary-all"' in zh and "1 句中 1 句有来源支持" in zh
    assert 'title="有来源支持（书中和网络）：其中的事实见于所引来源"' in zh
    running = apply_events(start_turn(UiState(), "q"), scripted_turn()[:-1])  # verify done, turn not yet
    assert "answer-summary" not in chat_messages(running, "en")[-1]["content"]


def test_sentence_tip_in_chinese_translates_code_reasons():
    check = SentenceCheck(text="x", start=0, end=1, citations=(), status="unsupported", reason=Msg.of("check.sentence_few_words", share=0.3))
    assert sentence_tip(check, "zh") == "来源不支持：只有 30% 的词语出现在所引来源中"


# --------------------------------------------------------------------------- the trace's evaluations


def evidence_eval() -> Evaluation:
    return Evaluation(
        reason="r", enough=False, missing=["b (unverified)", "c (not found)"], mode="evidence", model_enough=True,
        parts=[
            PartCheck(part="which chapter", answer="第二十七回", source=2, quote="白骨夫人三次变化", status="verified",
                      detail=join([Msg.of("check.quote_verbatim"), Msg.of("check.found_elsewhere", cited="2", found=1,
                                                                           detail=Msg.of("check.answer_in_quote"))]),
                      matched_source=1, span=(0, 8), origin="book"),
            PartCheck(part="which episode", answer="11", source=3, quote="第十二集", status="unverified",
                      detail=Msg.of("check.quote_not_found")),
            PartCheck(part="who directed", answer="not found", source=None, quote="not found", status="not_found",
                      detail=Msg.of("check.no_evidence")),
        ])


def test_evaluation_shows_each_part_and_both_verdicts():
    out = evaluation_html(evidence_eval(), 1, "en")
    assert re.findall(r'<li class="part part-([a-z_]+)">', out) == ["verified", "unverified", "not_found"]
    assert '<span class="model-verdict">The model says: <span class="verdict enough">enough</span>' in out
    assert 'The code decides (evidence mode): <span class="verdict not-enough">not enough</span>' in out
    assert "found in [1] (the book)" in out and "cited as [2]" in out
    assert "第二十七回" in out and "白骨夫人三次变化" in out and "quote not found in any source" in out
    zh = evaluation_html(evidence_eval(), 1, "zh")
    assert "见于 [1]（书中）" in zh and "已核实" in zh and "未核实" in zh and "未找到" in zh
    assert "任何来源中都找不到这段引文" in zh and "quote not found" not in zh
    assert "（模型标注 [2]，实际见于 [1]）" in zh


def test_verdict_mode_evaluation_has_no_parts():
    out = evaluation_html(Evaluation(reason="r", enough=True, mode="verdict"), 2, "en")
    assert "part-" not in out and "model-verdict" not in out and 'data-round="2"' in out


def test_verify_entry_lists_the_sentences_that_fail():
    out = checks_html(checks_for(), "en")
    assert "1 of 3 sentences supported by their sources" in out
    assert re.findall(r'<li class="check check-([a-z]+)">', out) == ["unsupported", "uncited"]


# --------------------------------------------------------------------------- highlighted quotes


def test_verified_quote_is_highlighted_in_its_book_passage_and_web_source():
    web = [SearchResult(title="T<script>", url="https://e.org/a", snippet="alpha <img>beta</img> gamma")]
    sources = sources_of(PASSAGES, web)
    web_text = sources[2].text  # "T<script>\nalpha <img>beta</img> gamma"
    start = web_text.index("<img>beta")
    evaluation = Evaluation(reason="r", enough=True, mode="evidence", parts=[
        checked_part("p1", "verified", matched_source=1, span=(0, 6), origin="book"),
        checked_part("p2", "verified", matched_source=3, span=(start, start + 15), origin="web"),
        checked_part("p3", "unverified", matched_source=None, span=None),
    ])
    turn = Turn(question="q", passages=tuple(PASSAGES), web_results=tuple(web), evaluations=(evaluation,))
    assert verified_spans(turn) == {1: [(0, 6, "p1")], 3: [(start, start + 15, "p2")]}
    out = render_sources(UiState(turns=(turn,)), "en")
    book = re.search(r'id="src-0-1".*?<div class="src-text">(.*?)</div>', out, re.S).group(1)
    assert book.startswith(f'<mark class="quote-hl" title="verified quote: p1">{PASSAGES[0].text[:6]}</mark>')
    card = re.search(r'id="src-0-3".*?<div class="web-snippet">(.*?)</div>', out, re.S).group(1)
    assert card == 'alpha <mark class="quote-hl" title="verified quote: p2">&lt;img&gt;beta&lt;/img&gt;</mark> gamma'
    assert "<img" not in out and "<script" not in out


def test_highlight_escapes_and_clips():
    assert highlight("<a>bc", [(1, 99, "x"), (0, 2, "overlap")], "en") == (
        '<mark class="quote-hl" title="verified quote: overlap">&lt;a</mark>'
        '<mark class="quote-hl" title="verified quote: x">&gt;bc</mark>')


def test_real_graph_in_evidence_mode_marks_quotes_parts_and_sentences():
    answer = "原著第二十七回[1]；电视剧第11集[3]。"
    model = ScriptedChatModel(responder=responder(
        evaluations=[ev(False, ["TV episode"], web_query="86版西游记 第几集"), ev(True, confidence=0.9)], answer=answer))
    deps = Deps(settings=make_settings(search_provider="fake", max_web_rounds=1, judge_mode="evidence"), llm=model,
                retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    state = start_turn(UiState(), QUESTION)
    for event in run_turn(build_graph(deps), QUESTION, thread_id=str(uuid.uuid4())):
        state = apply_event(state, event)
    turn = state.current
    assert turn.status == "done", turn.error
    assert [e.mode for e in turn.evaluations] == ["evidence", "evidence"]
    assert [p.status for p in turn.evaluations[0].parts] == ["not_found"]
    assert [p.status for p in turn.evaluations[1].parts] == ["verified"]
    trace = render_trace(turn, "en")
    assert trace.count('class="part part-not_found"') == 1 and trace.count('class="part part-verified"') == 1
    assert trace.count('class="model-verdict"') == 2
    sources = render_sources(state, "en")
    marked = re.findall(r'<mark class="quote-hl"[^>]*>(.*?)</mark>', sources)
    assert marked and html.unescape(marked[0]) == turn.evaluations[1].parts[0].quote.strip()[:len(html.unescape(marked[0]))]
    assert turn.answer_checks and all(c.start < c.end for c in turn.answer_checks)
    assert "sent sent-" in chat_messages(state, "en")[-1]["content"]
