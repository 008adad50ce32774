"""Recorded model replies: fixtures without the book's text, served over real HTTP keyed by case and
call (not by prompt), recorded through a loopback proxy, and replayed through ``rag eval``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rag.cli import main
from rag.eval.cases import load_cases
from rag.eval.replay import (
    RecordingServer,
    ReplayServer,
    call_of,
    decode_spans,
    encode_spans,
    fixture_record,
    load_fixture,
    write_fixture,
)
from rag.testing.openai_stub import OpenAIStub, request_kind

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "assets" / "eval" / "guide_cases.jsonl"
FIXTURES = REPO / "bench" / "fixtures" / "replies"


def _cases():
    return load_cases(GUIDE, limit=3)  # g01, g02, g03 (full)


def _chat(base: str, body: dict) -> dict:
    return httpx.post(f"{base}/chat/completions", json=body, timeout=10).json()


def test_copied_text_is_stored_as_spans_and_restored() -> None:
    context = "须菩提祖师半夜传授悟空长生之道。祖师便传他筋斗云：一个筋斗能翻十万八千里。"
    reply = "答案是十万八千里，见“一个筋斗能翻十万八千里”。"
    encoded = encode_spans(reply, context)
    assert "一个筋斗能翻" not in encoded and "⟦" in encoded
    assert decode_spans(encoded, context) == reply
    assert encode_spans("完全无关的话", context) == "完全无关的话"


def test_calls_are_told_apart_by_schema_or_prompt() -> None:
    assert call_of({"tools": [{"function": {"name": "EvidenceJudgement"}}], "messages": []}) == "judge-evidence"
    assert call_of({"response_format": {"type": "json_schema", "json_schema": {"name": "Evaluation"}},
                    "messages": []}) == "judge-verdict"
    from rag.agent import prompts

    system = prompts.GENERATE_SYSTEM.format(language="Chinese", cannot_confirm="x")
    assert call_of({"messages": [{"role": "system", "content": system}]}) == "answer"
    assert call_of({"messages": [{"role": "system", "content": "something else"}]}) == "unknown"


def test_replay_answers_by_case_and_call_whatever_the_prompt(tmp_path) -> None:
    cases = _cases()
    g01 = cases[0]
    reply = {"reason": "r", "parts": [{"part": "能翻多远", "answer": "十万八千里", "source": 1,
                                       "quote": "一个筋斗能翻十万八千里"}], "enough": True, "confidence": 0.9}
    fixture = tmp_path / "f.jsonl"
    write_fixture(fixture, ["made by the test"], [fixture_record(g01, "judge-evidence", reply)])
    assert "一个筋斗能翻十万八千里" not in fixture.read_text(encoding="utf-8")  # no book text in the fixture
    assert load_fixture(fixture, cases)[("g01", "judge-evidence", 1)] == reply
    # an edited prompt: other wording, the question and the passage still in it
    user = f"Q: {g01.question}\n\n{g01.context[0].text}\n\nedited instructions"
    body = {"tools": [{"type": "function", "function": {"name": "EvidenceJudgement", "parameters": {}}}],
            "messages": [{"role": "system", "content": "any system prompt"}, {"role": "user", "content": user}]}
    with ReplayServer(fixture, cases) as server:
        got = _chat(server.base_url, body)
        args = json.loads(got["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        assert args == reply
        # another case's prompt has no recorded reply: HTTP 404, counted
        other = dict(body, messages=[body["messages"][0], {"role": "user", "content": cases[1].question
                                                             + cases[1].context[0].text}])
        assert httpx.post(f"{server.base_url}/chat/completions", json=other, timeout=10).status_code == 404
        assert len(server.misses) == 1 and "g02" in server.misses[0]


def test_recording_proxy_writes_a_fixture_and_the_prompts_apart(tmp_path) -> None:
    cases = _cases()

    def upstream(body):
        return {"reason": "route", "strategy": "complex"} if request_kind(body) == "RouteDecision" else "text"

    out = tmp_path / "rec.jsonl"
    with OpenAIStub(upstream) as real, RecordingServer(out, cases, upstream=real.base_url, header=["test"]) as rec:
        body = {"model": "m", "tools": [{"type": "function", "function": {"name": "RouteDecision", "parameters": {}}}],
                "messages": [{"role": "user", "content": f"Question: {cases[1].question}"}]}
        got = _chat(rec.base_url, body)
        assert json.loads(got["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])["strategy"] == "complex"
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# test" and json.loads(lines[1])["case"] == "g02" and json.loads(lines[1])["call"] == "route"
    assert (tmp_path / "rec.jsonl.prompts.jsonl").is_file()


def test_rag_eval_judge_replays_the_committed_capable_fixture(tmp_path, capsys) -> None:
    """The whole path: the recorded replies over loopback HTTP through ``rag eval judge``, decided by code."""
    code = main(["eval", "judge", "--cases", str(GUIDE), "--kinds", "full", "--mode", "evidence", "--quiet",
                 "--replay", str(FIXTURES / "capable.jsonl"), "--report", str(tmp_path / "r.json")])
    assert code == 0
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["model"] == "replay:capable" and report["summary"]["n"] == 7
    assert report["summary"]["call_errors"] == 0 and report["summary"]["answerable_enough"] >= 6
    assert "no recorded reply" not in capsys.readouterr().err


def test_a_missing_fixture_is_one_clear_error(tmp_path, capsys) -> None:
    code = main(["eval", "judge", "--cases", str(GUIDE), "--replay", str(tmp_path / "none.jsonl")])
    assert code == 1 and "reply fixture not found" in capsys.readouterr().err


# --------------------------------------------------------------------------- the figures, as targets
def _judge(fixture: str, cases_file: Path, tmp_path: Path, mode: str = "evidence") -> dict:
    report = tmp_path / f"{fixture}-{cases_file.stem}-{mode}.json"
    assert main(["eval", "judge", "--cases", str(cases_file), "--mode", mode, "--quiet",
                 "--replay", str(FIXTURES / f"{fixture}.jsonl"), "--report", str(report)]) == 0
    return json.loads(report.read_text(encoding="utf-8"))["summary"]


SETS = [REPO / "assets" / "eval" / f for f in ("guide_cases.jsonl", "xiyouji_refs.jsonl", "sanguo_refs.jsonl")]


@pytest.mark.corpus
def test_recorded_replies_meet_the_evidence_targets(tmp_path) -> None:
    """The issue's targets on all three dev sets, replayed: a capable model's correct work accepted
    (answerable -> enough >= 95%, no false "enough", every "enough" code-verified) and the 1.5B
    model's claims refused (false "enough" <= 4% of the not-enough cases)."""
    capable = [_judge("capable", f, tmp_path) for f in SETS]
    answerable = sum(s["answerable_enough"] for s in capable) / sum(
        s["per_kind"].get("full", {}).get("n", 0) + s["per_kind"].get("multihop_both", {}).get("n", 0) for s in capable)
    assert answerable >= 0.95
    assert sum(s["false_enough"] for s in capable) == 0
    # an "enough" not verified part by part rests on parts code could not decide and the model's word
    # (2 of 52: a pronoun, an English question on a Chinese quote); none on a part shown wrong
    assert sum(s["enough_with_verified_evidence"] for s in capable) >= 0.95 * sum(s["enough_verdicts"] for s in capable)
    small = [_judge("qwen1.5b", f, tmp_path) for f in SETS]
    # the not-enough cases the small model gave a reply for (a case it was not recorded on proves nothing)
    replied = sum(row["n"] - row["invalid"] for s in small for kind, row in s["per_kind"].items()
                  if kind not in ("full", "multihop_both"))
    assert replied >= 60
    assert sum(s["false_enough"] for s in small) <= 0.04 * replied


@pytest.mark.corpus
@pytest.mark.parametrize("fixture", ["capable", "capable-answers2", "capable-answers3"])
def test_recorded_answers_meet_the_sentence_targets(tmp_path, capsys, fixture: str) -> None:
    """Faithful answers of the capable model, in each of its three recorded sets, marked by code alone:
    <= 20% of the claim sentences refused (the checks compare each claim with the sentences that state
    it, and the dev sets' paraphrases differ from their classical sources more than that allows; see
    docs/benchmarks.md; a paraphrase whose words are there is "not checked", for a model's label to
    confirm), <= 5% uncited; seeded errors (now also invented details,
    negations, other people and actions, question echoes, claims in the other language) >= 80% flagged,
    question echoes and claims in the other language all of them; every tampered verified case flips
    (the first set holds the judge's replies)."""
    totals = {"sentences": 0, "unsupported": 0, "uncited": 0}
    tried = flagged = 0
    never: dict[str, list[int]] = {"question_echo": [0, 0], "cross_language": [0, 0]}
    for cases_file in SETS:
        report = tmp_path / f"checks-{cases_file.stem}.json"
        code = main(["eval", "checks", "--cases", str(cases_file), "--replay", str(FIXTURES / f"{fixture}.jsonl"),
                     "--report", str(report)])
        data = json.loads(report.read_text(encoding="utf-8"))
        assert code == 0, data["tamper"]["not_flipped"]  # exit 3 when a tampered case stays enough
        for key in totals:
            totals[key] += data["seeded"]["faithful"][key]
        tried += sum(r["tried"] for r in data["seeded"]["seeded"].values())
        flagged += sum(r["flagged"] for r in data["seeded"]["seeded"].values())
        for kind, row in never.items():
            row[0] += data["seeded"]["seeded"][kind]["flagged"]
            row[1] += data["seeded"]["seeded"][kind]["tried"]
    assert totals["unsupported"] <= 0.2 * totals["sentences"]
    assert totals["uncited"] <= 0.05 * totals["sentences"]
    assert flagged >= 0.8 * tried
    assert all(row[1] > 0 and row[0] == row[1] for row in never.values()), never


def test_recorded_rewrites_reach_the_real_rewriter_over_http(tmp_path) -> None:
    """The retrieval benchmark's rewrite replies (bench/retrieval.py --replay-rewrites): keyed by the
    question alone, served over HTTP to the real QueryRewriter, which still refuses a stated answer."""
    from types import SimpleNamespace

    from rag.agent.rewrite import QueryRewriter
    from rag.config import Settings
    from rag.eval.replay import question_cases
    from rag.llm import judge_model, make_chat_model

    asked = [SimpleNamespace(id="en01", question="How heavy is the golden-hooped rod?"),
             SimpleNamespace(id="pl01", question="如意金箍棒有多重？")]
    cases = question_cases(asked)
    fixture = tmp_path / "rewrites.jsonl"
    write_fixture(fixture, ["made by the test"], [
        fixture_record(cases[0], "query-rewrite", "如意金箍棒有多重？\n金箍棒 如意金箍棒 斤 重"),
        fixture_record(cases[1], "query-rewrite", "金箍棒重一万三千五百斤。"),  # an answer, not a query
    ])
    with ReplayServer(fixture, cases) as server:
        settings = Settings(_env_file=None, llm_base_url=server.base_url, llm_model="replay", llm_api_key="none")
        rewriter = QueryRewriter(judge_model(make_chat_model(settings)))
        english = rewriter.rewrite(asked[0].question, book_title="西游记", book_lang="zh")
        chinese = rewriter.rewrite(asked[1].question, book_title="西游记", book_lang="zh")
        assert server.served == 2 and not server.misses
    assert english.queries == ["如意金箍棒有多重？", "金箍棒 如意金箍棒 斤 重"]
    assert chinese.queries == [] and chinese.refused == ["金箍棒重一万三千五百斤。"]


def test_the_committed_rewrite_fixture_covers_every_retrieval_case_and_holds_no_answers() -> None:
    records = [json.loads(line) for line in (FIXTURES / "rewrite_capable.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    from rag.agent.rewrite import split_queries
    from rag.eval.cases import jsonl_records

    ids = {str(r["id"]) for name in ("xiyouji", "sanguo_aliases", "sanguo_heldout")
           for _, r in jsonl_records(REPO / "assets" / "eval" / "retrieval" / f"{name}.jsonl")}
    assert {r["case"] for r in records} == ids and all(r["call"] == "query-rewrite" for r in records)
    assert all(split_queries(r["reply"], r["question"])[0] for r in records)  # each gives queries, none refused
