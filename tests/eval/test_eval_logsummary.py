"""The evaluation-log summary, on records written by the real graph through JsonlEvalLog."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from conftest import ev, make_settings, responder

from rag.agent.deps import Deps
from rag.agent.evallog import JsonlEvalLog
from rag.agent.graph import build_graph
from rag.cli import main
from rag.errors import RagError
from rag.eval.logsummary import format_summary, summarize_log
from rag.schemas import Passage, SearchResult
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel


def _record(round_no: int, enough: bool, qhash: str, invalid: bool = False, latency: float = 1.0,
            model: str = "m1", time: str = "2025-01-01T00:00:00") -> dict:
    """A record as the evaluate node writes it: what that evaluation knew, and the web search it
    judged (rounds after the first)."""
    searched = None if round_no == 1 else {"query": "w", "provider": "fake", "results": 3, "error": None}
    return {"time": time, "model": model, "question_hash": qhash, "question": "q", "round": round_no,
            "evaluation": {"reason": "r", "enough": enough, "missing": [], "web_query": None, "confidence": 0.5},
            "latency_s": latency, "searched": searched, "invalid_json": invalid}


def test_summary_hand_checked(tmp_path: Path) -> None:
    path = tmp_path / "eval_log.jsonl"
    log = JsonlEvalLog(path)
    # question A: not enough -> web -> not enough -> web -> enough (2 searches)
    log(_record(1, False, "a", time="2025-01-01T00:00:01"))
    log(_record(2, False, "a"))
    log(_record(3, True, "a"))
    # question B: enough at once
    log(_record(1, True, "b", latency=3.0, model="m2"))
    # question A asked again: invalid JSON, no web -> partial answer
    log(_record(1, False, "a", invalid=True, latency=5.0, time="2025-01-02T00:00:00"))
    with path.open("a", encoding="utf-8") as fh:
        fh.write("{truncated\n[1, 2]\n\n")
    s = summarize_log(path)
    assert s.records == 5 and s.bad_lines == 2
    assert s.turns == 3 and s.distinct_questions == 2
    assert s.not_enough == 3 and s.not_enough_rate == pytest.approx(3 / 5)
    assert s.web_searches == 2 and s.web_searches_per_question == pytest.approx(2 / 3)
    assert s.invalid_json == 1 and s.invalid_json_rate == pytest.approx(1 / 5)
    assert s.rounds == {"1": 3, "2": 1, "3": 1}
    assert s.models == {"m1": 4, "m2": 1}
    assert s.latency["mean"] == pytest.approx((1 + 1 + 1 + 3 + 5) / 5)
    assert (s.first_time, s.last_time) == ("2025-01-01T00:00:00", "2025-01-02T00:00:00")
    assert "evaluations per round:     1=3, 2=1, 3=1" in format_summary(s)


def test_logs_written_before_records_named_their_search_still_count_searches(tmp_path: Path) -> None:
    """Older records carried a predicted "branch" and "web_query" and no "searched"; the rounds
    still say how many searches ran."""
    path = tmp_path / "eval_log.jsonl"
    old = [{"round": 1, "evaluation": {"enough": False}, "branch": "web_search", "web_query": "w", "question_hash": "a"},
           {"round": 2, "evaluation": {"enough": True}, "branch": "generate", "web_query": None, "question_hash": "a"},
           {"round": 1, "evaluation": {"enough": True}, "branch": "generate", "web_query": None, "question_hash": "b"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in old), encoding="utf-8")
    s = summarize_log(path)
    assert (s.records, s.turns, s.web_searches, s.not_enough) == (3, 2, 1, 1)


def test_missing_log_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RagError, match="no evaluation log at"):
        summarize_log(tmp_path / "none.jsonl")
    assert main(["eval", "log"]) == 1  # default path DATA_DIR/eval_log.jsonl under the empty cwd
    assert "EVAL_LOG_ENABLED" in capsys.readouterr().err


def test_log_written_by_the_graph_is_summarised_by_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    settings = make_settings(data_dir=tmp_path / "data", max_web_rounds=1)
    passages = [Passage(id="p1", text="悟空拜须菩提祖师为师。", chapter_title="第一回")]
    web = [SearchResult(title="t", url="https://example.org/x", snippet="s")]
    llm = ScriptedChatModel(responder=responder(
        route=["complex", "complex"],
        evaluations=[ev(False, ["missing"], "query one"), ev(True), ev(True)]))
    deps = Deps(settings=settings, llm=llm, retriever=FakeRetriever(passages), web_search=FakeWebSearch(web),
                eval_log=JsonlEvalLog(settings.eval_log_path))
    graph = build_graph(deps)
    for question in ("谁是悟空的师父？", "悟空学了什么？"):
        graph.invoke({"question": question}, {"configurable": {"thread_id": str(uuid.uuid4())}})
    lines = settings.eval_log_path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    assert all("key" not in json.loads(line) for line in lines)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    assert main(["eval", "log", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 3 and summary["turns"] == 2 and summary["distinct_questions"] == 2
    assert summary["web_searches"] == 1 and summary["web_searches_per_question"] == pytest.approx(0.5)
    assert summary["not_enough"] == 1 and summary["not_enough_rate"] == pytest.approx(1 / 3)
    assert summary["invalid_json"] == 0
    assert main(["eval", "log", "--path", str(settings.eval_log_path)]) == 0
    text = capsys.readouterr().out
    assert "evaluations:               3" in text and "per question 0.50" in text
