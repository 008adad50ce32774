"""The model-free evidence checks on the project's own guide cases: tampering always flips the
verdict, seeded answer errors are flagged, faithful answers are not."""

from __future__ import annotations

from pathlib import Path

from rag.checks import check_answer
from rag.eval.cases import load_cases
from rag.eval.checks import evidence_of, faithful_answer, seeded_report, tamper_report

CASES = Path(__file__).resolve().parents[2] / "assets" / "eval" / "guide_cases.jsonl"


def test_every_answerable_guide_case_verifies_and_every_tampering_flips_it() -> None:
    report = tamper_report(load_cases(CASES))
    assert report["answerable"] >= 10 and report["verified"] == report["with_evidence"] == report["answerable"]
    for name, row in report["tampers"].items():
        assert row["tried"] > 0, name
        assert row["flipped"] == row["tried"], (name, report["not_flipped"])


def test_seeded_answer_errors_are_flagged_and_faithful_answers_are_not() -> None:
    report = seeded_report(load_cases(CASES))
    assert report["flagged_rate"] >= 0.9, report["missed"]
    assert report["false_flag_rate"] <= 0.1
    assert all(row["tried"] > 0 for row in report["seeded"].values())


def test_a_faithful_answer_is_supported_sentence_by_sentence() -> None:
    case = next(c for c in load_cases(CASES) if c.label_enough)
    e = evidence_of(case)
    assert e is not None
    checks = check_answer(faithful_answer(e), e.sources).sentences
    assert checks and all(s.status == "supported" and s.origin == "book" for s in checks)
