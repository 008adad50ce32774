"""``python -m rag eval ...`` end to end: the real CLI and ChatOpenAI over real HTTP against the
loopback OpenAI-compatible stub, and the scripted fake model for the answer path."""

from __future__ import annotations

import argparse
import io
import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings

from rag.agent.context import format_book_context, route_messages
from rag.agent.judge import judge_messages
from rag.cli import main
from rag.eval.cases import load_cases
from rag.eval.checks import evidence_of
from rag.eval.cli import cmd_answers
from rag.eval.runner import StaticRetriever
from rag.schemas import Passage, PassageSource
from rag.testing.fakes import ScriptedChatModel
from rag.testing.openai_stub import OpenAIStub, request_kind

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "assets" / "eval" / "guide_cases.jsonl"
ROUTES = REPO / "assets" / "eval" / "route_cases.jsonl"
CASES = load_cases(GUIDE)
LABEL_BY_QUESTION = {c.question: c.label_enough for c in CASES}  # identical questions share a label? checked below


def _question(body: dict[str, Any]) -> str:
    """The real question: in the last message that has one (a retry appends a message after it)."""
    for message in reversed(body["messages"]):
        user = message["content"]
        if "QUESTION: " in user:
            return user.split("QUESTION: ", 1)[1].split("\n", 1)[0]
        if "Question: " in user:
            return user.split("Question: ", 1)[1]
    raise AssertionError("no question in the request")


def _evaluation(enough: bool) -> dict[str, Any]:
    return {"reason": "stub", "enough": enough, "missing": [] if enough else ["x"],
            "web_query": None if enough else "q", "confidence": 0.7}


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch):
    def use(stub: OpenAIStub) -> None:
        monkeypatch.setenv("LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("LLM_MODEL", "stub-model")
        monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    return use


def _label_counts() -> Counter:
    return Counter("enough" if c.label_enough else "not_enough" for c in CASES)


def test_judge_always_enough_model_gets_the_numbers_the_labels_dictate(tmp_path: Path, llm_env,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIStub(lambda body: _evaluation(True)) as stub:
        llm_env(stub)
        report_path = tmp_path / "r.json"
        assert main(["eval", "judge", "--cases", str(GUIDE), "--report", str(report_path), "--quiet",
                     "--mode", "verdict"]) == 0
    out = capsys.readouterr().out
    report = json.loads(report_path.read_text(encoding="utf-8"))
    counts = _label_counts()
    s = report["summary"]
    assert s["n"] == len(CASES) == len(stub.requests)
    assert s["confusion"]["not_enough"] == {"enough": counts["not_enough"], "not_enough": 0}
    assert s["confusion"]["enough"] == {"enough": counts["enough"], "not_enough": 0}
    assert s["metrics"]["accuracy"] == pytest.approx(counts["enough"] / len(CASES))
    assert s["metrics"]["recall"] == 0.0 and s["metrics"]["precision"] is None
    assert s["per_kind"]["half"]["accuracy"] == 0.0 and s["per_kind"]["full"]["accuracy"] == 1.0
    assert s["invalid_json_rate"] == 0.0 and s["calls"] == len(CASES)
    assert report["model"] == "stub-model" and report["few_shot"] is True
    assert "accuracy" in out and "precision(not_enough) n/a" in out and str(report_path) in out


def test_judge_uses_the_graphs_prompt_and_few_shot_switch(tmp_path: Path, llm_env) -> None:
    def oracle(body: dict[str, Any]) -> Any:
        assert request_kind(body) == "Evaluation"
        return _evaluation(LABEL_BY_QUESTION[_question(body)])

    for flag, few_shot in (([], True), (["--no-few-shot"], False)):
        with OpenAIStub(oracle) as stub:
            llm_env(stub)
            report_path = tmp_path / f"r{few_shot}.json"
            assert main(["eval", "judge", "--cases", str(GUIDE), "--report", str(report_path), "--limit", "5",
                         "--quiet", "--mode", "verdict", *flag]) == 0
        report = json.loads(report_path.read_text(encoding="utf-8"))
        assert report["summary"]["n"] == 5 and report["summary"]["metrics"]["accuracy"] == 1.0
        assert report["few_shot"] is few_shot
        first = CASES[0]
        expected = judge_messages(first.question, format_book_context(first.passages(), 1200), mode="verdict",
                                  few_shot=few_shot)
        sent = stub.requests[0]["messages"]
        assert [m["content"] for m in sent] == [m.content for m in expected]  # the graph's own prompt, not a copy
        assert (len(sent) > 2) is few_shot  # the examples are turns of their own
        assert stub.requests[0]["temperature"] == 0.0  # the judge copy of the model


def test_judge_counts_invalid_json_and_retries(tmp_path: Path, llm_env) -> None:
    calls: Counter = Counter()

    def flaky(body: dict[str, Any]) -> Any:
        q = _question(body)
        calls[q] += 1
        if q == CASES[1].question:
            return "I think it is enough."  # never valid
        if q == CASES[2].question and calls[q] == 1:
            return "{broken"  # valid on the retry
        return _evaluation(LABEL_BY_QUESTION[q])

    with OpenAIStub(flaky) as stub:
        llm_env(stub)
        report_path = tmp_path / "r.json"
        assert main(["eval", "judge", "--cases", str(GUIDE), "--limit", "4", "--report", str(report_path),
                     "--quiet", "--mode", "verdict"]) == 0
    s = json.loads(report_path.read_text(encoding="utf-8"))["summary"]
    assert s["calls"] == 4 + 1 + 1  # case 2 twice (both invalid), case 3 twice
    assert s["invalid_json_replies"] == 3
    assert s["invalid_json_rate"] == pytest.approx(3 / 6)
    assert s["cases_without_valid_reply"] == 1
    # the never-valid case counts as "not enough", as the graph treats it; it is a full case -> one error
    assert CASES[1].label_enough is True
    assert s["metrics"]["accuracy"] == pytest.approx(3 / 4)


def test_judge_kinds_filter_and_default_report_location(tmp_path: Path, llm_env) -> None:
    with OpenAIStub(lambda body: _evaluation(False)) as stub:
        llm_env(stub)
        assert main(["eval", "judge", "--cases", str(GUIDE), "--kinds", "half,unrelated", "--per-kind", "2",
                     "--quiet", "--mode", "verdict"]) == 0
    reports = list((tmp_path / "data" / "eval").glob("judge-stub-model-verdict-fewshot-*.json"))  # cwd is tmp_path
    assert len(reports) == 1
    s = json.loads(reports[0].read_text(encoding="utf-8"))["summary"]
    assert set(s["per_kind"]) == {"half", "unrelated"}
    assert s["n"] == 4 and s["per_kind"]["half"]["n"] == 2
    assert s["metrics"]["accuracy"] == 1.0


def _claims_everything(body: dict[str, Any]) -> dict[str, Any]:
    """A judge that claims every part is covered: true evidence where the case has it, a made-up
    quote where it does not (what the small models measured in the issue do)."""
    case = next(c for c in CASES if c.question == _question(body))
    e = evidence_of(case)
    parts = ([{"part": p, "answer": a, "source": n, "quote": q} for p, a, n, q in e.parts] if e else
             [{"part": case.question, "answer": "三十六", "source": 1, "quote": "书中说答案是三十六"}])
    return {"reason": "stub", "parts": parts, "enough": True, "web_query": None, "confidence": 0.9}


def test_every_mode_on_a_judge_that_claims_everything(tmp_path: Path, llm_env,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIStub(_claims_everything) as stub:
        llm_env(stub)
        assert main(["eval", "judge", "--cases", str(GUIDE), "--mode", "all", "--quiet",
                     "--report", str(tmp_path / "r.json")]) == 0
    kinds = [request_kind(b) for b in stub.requests]
    # guarded mode reuses evidence mode's replies (same prompt, temperature 0): one call per case each
    assert kinds.count("EvidenceJudgement") == len(CASES) and kinds.count("Evaluation") == len(CASES)
    reports = {m: json.loads((tmp_path / f"r-{m}.json").read_text(encoding="utf-8"))["summary"]
               for m in ("evidence", "guarded", "verdict")}
    counts = _label_counts()
    for mode in ("evidence", "guarded"):
        s = reports[mode]
        assert s["false_enough"] == 0 and s["answerable_enough"] == counts["enough"]
        assert s["enough_with_verified_evidence"] == s["enough_verdicts"] == counts["enough"]
        assert s["model_code_agreement"] == pytest.approx(counts["enough"] / len(CASES))
    # the stub answers the verdict schema with evidence fields only: invalid twice -> not enough
    assert "false-enough" in capsys.readouterr().out


def test_judge_without_a_model_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "judge", "--cases", str(GUIDE)]) == 2
    assert "no language model is configured" in capsys.readouterr().err


def test_judge_with_an_unreachable_model_exits_2(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("LLM_TIMEOUT", "3")
    assert main(["eval", "judge", "--cases", str(GUIDE), "--quiet"]) == 2
    assert "the model did not answer" in capsys.readouterr().err


def test_judge_with_a_bad_case_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tiny.txt").write_text("《小书》\n《》目录 第一回　开头\n    甲乙丙丁戊己庚辛。\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q", "kind": "full", "label_enough": true, "corpus": "tiny.txt", '
                   '"refs": [{"chapter": 101, "start": 0, "end": 5}]}\n', encoding="utf-8")
    assert main(["eval", "judge", "--cases", str(bad), "--corpus-dir", str(corpus)]) == 1
    assert "chapter 101 does not exist" in capsys.readouterr().err


def test_route_benchmark(tmp_path: Path, llm_env) -> None:
    labels = {json.loads(line)["question"]: json.loads(line)["label_strategy"]
              for line in ROUTES.read_text(encoding="utf-8").splitlines() if line.startswith("{")}

    def always_complex(body: dict[str, Any]) -> Any:
        assert request_kind(body) == "RouteDecision"
        assert body["messages"][0]["content"] == route_messages("x")[0].content
        return {"reason": "stub", "strategy": "complex"}

    with OpenAIStub(always_complex) as stub:
        llm_env(stub)
        report_path = tmp_path / "route.json"
        assert main(["eval", "route", "--cases", str(ROUTES), "--report", str(report_path), "--quiet"]) == 0
    s = json.loads(report_path.read_text(encoding="utf-8"))["summary"]
    simple = sum(1 for v in labels.values() if v == "simple")
    assert s["n"] == len(labels) == len(stub.requests)
    assert s["confusion"]["simple"] == {"simple": 0, "complex": simple}
    assert s["metrics"]["recall"] == 0.0
    assert s["metrics"]["accuracy"] == pytest.approx((len(labels) - simple) / len(labels))
    assert s["per_kind"]["general"]["accuracy"] == 0.0 and s["per_kind"]["book"]["accuracy"] == 1.0


def test_route_with_the_book_sends_book_questions_to_the_book(tmp_path: Path, llm_env,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A router that calls everything simple: with --book, the questions that name what the sample
    guide itself talks about go to the book anyway, and the general ones stay simple."""
    def always_simple(body: dict[str, Any]) -> Any:
        system = body["messages"][0]["content"]
        assert "(《西游记》阅读指南)" in system and "《《" not in system  # the router is told the book's title
        return {"reason": "stub", "strategy": "simple"}

    with OpenAIStub(always_simple) as stub:
        llm_env(stub)
        report_path = tmp_path / "route.json"
        assert main(["eval", "route", "--cases", str(ROUTES), "--report", str(report_path), "--quiet",
                     "--book", str(REPO / "assets" / "xiyouji-guide.epub")]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    by_id = {r["id"]: r for r in report["results"]}
    general = [r for r in report["results"] if r["kind"] == "general"]
    assert all(r["predicted"] == "simple" and not r["book_terms"] for r in general)
    assert by_id["r18"]["predicted"] == "complex" and "红孩儿" in by_id["r18"]["book_terms"]  # 红孩儿的父母是谁？
    assert by_id["r18"]["router"] == "simple"
    s = report["summary"]
    assert s["overridden"] >= 8 and s["metrics"]["accuracy"] > s["router_only"]["accuracy"]
    assert "the book check sent" in capsys.readouterr().out


def test_checks_command_needs_no_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "checks", "--cases", str(GUIDE), "--report", str(tmp_path / "c.json")]) == 0
    report = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert all(r["flipped"] == r["tried"] > 0 for r in report["tamper"]["tampers"].values())
    assert "flipped to not enough" in capsys.readouterr().out


def test_answers_measure_hallucination_risk_on_half_cases(tmp_path: Path) -> None:
    half = [c for c in CASES if c.kind == "half"]
    honest, liar = half[0], half[1]

    def reply(messages: list[Any], *, schema: str | None) -> Any:
        question = str(messages[-1].content)
        if schema == "RouteDecision":
            return {"reason": "book", "strategy": "complex"}
        if schema == "Evaluation":
            return _evaluation(False)
        if liar.question in question:
            return f"答案见[1]。另外，{liar.answer_strings[0]}。"  # states the missing fact from memory
        if honest.question in question:
            return "第一部分见[1]。\n\n尚缺的信息：第二部分无法从资料中确认。"
        if half[2].question in question:
            return "见[1]。尚缺的信息：无法确认；不过大概是1986年拍的第7集。"  # says so, yet invents numbers
        return "只回答了一部分[1]。"  # says nothing about what is missing

    llm = ScriptedChatModel(responder=reply)
    args = argparse.Namespace(cases=str(GUIDE), corpus_dir=None, kinds=None, per_kind=None, limit=None, model=None,
                              method=None, no_few_shot=False, report=str(tmp_path / "answers.json"), quiet=True)
    out = io.StringIO()
    assert cmd_answers(args, make_settings(judge_mode="verdict"), llm=llm, out=out, err=io.StringIO()) == 0
    report = json.loads((tmp_path / "answers.json").read_text(encoding="utf-8"))
    s = report["summary"]
    assert s["n"] == len(half)
    assert s["answer_modes"] == {"partial": len(half)}
    assert s["judged_enough_rate"] == 0.0
    by_id = {r["id"]: r for r in report["results"]}
    assert by_id[honest.id]["states_missing"] is True and by_id[honest.id]["at_risk"] is False
    assert by_id[liar.id]["asserted_missing_facts"] == [liar.answer_strings[0]] and by_id[liar.id]["at_risk"] is True
    inventor = by_id[half[2].id]
    assert inventor["states_missing"] is True and inventor["at_risk"] is True
    assert "7" in inventor["unsupported_numbers"] and "1986" not in inventor["unsupported_numbers"]  # 1986 is in the question
    assert by_id[honest.id]["unsupported_numbers"] == []  # the citation mark [1] is not a claim
    assert s["states_missing_rate"] == pytest.approx(2 / len(half))
    assert s["asserts_missing_fact_rate"] == pytest.approx(1 / len(half))
    assert s["unsupported_numbers_rate"] == pytest.approx(1 / len(half))
    assert s["at_risk_rate"] == pytest.approx((len(half) - 1) / len(half))
    assert "at risk" in out.getvalue()
    # the graph's retriever served exactly the case's passages
    evaluate_calls = [m for schema, m in llm.calls if schema == "Evaluation"]
    assert honest.context[0].text[:30] in str(evaluate_calls[0][-1].content)


def test_bench_table_compares_reports(tmp_path: Path, llm_env, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_judge", REPO / "bench" / "judge.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with OpenAIStub(lambda body: _evaluation(False)) as stub:
        llm_env(stub)
        assert bench.main(["--run", "--cases", str(GUIDE), "--limit", "6", "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| guide_cases.jsonl")]
    assert len(rows) == 6  # three modes, with and without few-shot
    assert all("| on |" in r for r in rows[:3]) and all("| off |" in r for r in rows[3:])
    assert [r.split(" | ")[2] for r in rows[:3]] == ["evidence", "guarded", "verdict"]
    assert len(list(tmp_path.glob("judge-guide_cases-*.json"))) == 6


def test_static_retriever_serves_the_case_context_whatever_the_query() -> None:
    case = next(c for c in CASES if len(c.context) >= 2)
    passages = case.passages()
    other = Passage(id="o1", text="另一本书。", book_id="other-book")
    retriever = StaticRetriever([*passages, other])
    assert isinstance(retriever, PassageSource)
    assert retriever.retrieve("任何问题") == [*passages, other]
    assert retriever.retrieve("别的问题", k=1) == passages[:1]
    assert retriever.retrieve("q", book_id="other-book") == [p for p in passages if p.book_id == ""] + [other]
    assert other not in retriever.retrieve("q", book_id=passages[0].book_id or "some-book")
