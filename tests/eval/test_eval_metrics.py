"""Metrics on synthetic predictions, checked by hand."""

from __future__ import annotations

import pytest

from rag.eval.cases import Case, ContextPassage
from rag.eval.metrics import binary_metrics, confusion, latency_summary, per_group
from rag.eval.runner import CallStats, JudgeOutcome, summarize_judge
from rag.schemas import Evaluation


def test_binary_metrics_hand_checked() -> None:
    # positives = "not enough"; 4 positives, 6 negatives
    labels = [True, True, True, True, False, False, False, False, False, False]
    preds = [True, True, True, False, True, False, False, False, False, False]
    m = binary_metrics(labels, preds)
    assert (m.tp, m.fp, m.fn, m.tn) == (3, 1, 1, 5)
    assert m.accuracy == pytest.approx(0.8)
    assert m.precision == pytest.approx(0.75)
    assert m.recall == pytest.approx(0.75)
    assert m.f1 == pytest.approx(0.75)


def test_binary_metrics_uneven_precision_recall() -> None:
    m = binary_metrics([True, True, False, False], [True, True, True, True])
    assert (m.tp, m.fp, m.fn, m.tn) == (2, 2, 0, 0)
    assert m.precision == pytest.approx(0.5)
    assert m.recall == pytest.approx(1.0)
    assert m.f1 == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert m.accuracy == pytest.approx(0.5)


def test_undefined_ratios_are_none_not_zero() -> None:
    m = binary_metrics([False, False], [False, False])
    assert m.accuracy == 1.0
    assert m.precision is None and m.recall is None and m.f1 is None
    both_wrong = binary_metrics([True, False], [False, True])
    assert both_wrong.precision == 0.0 and both_wrong.recall == 0.0 and both_wrong.f1 == 0.0
    assert binary_metrics([], []).accuracy is None


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError):
        binary_metrics([True], [True, False])


def test_confusion_and_groups() -> None:
    table = confusion(["a", "a", "b", "b", "b"], ["a", "b", "b", "b", "a"], ["a", "b"])
    assert table == {"a": {"a": 1, "b": 1}, "b": {"a": 1, "b": 2}}
    groups = per_group(["x", "x", "y"], [1, 2, 3], [1, 0, 3])
    assert groups["x"] == {"n": 2, "correct": 1, "accuracy": 0.5}
    assert groups["y"]["accuracy"] == 1.0
    lat = latency_summary([3.0, 1.0, 2.0])
    assert lat == {"mean": 2.0, "median": 2.0, "max": 3.0, "total": 6.0}


def _case(cid: str, kind: str, enough: bool) -> Case:
    return Case(id=cid, question="q", context=(ContextPassage("t", "c"),), label_enough=enough, kind=kind,
                answer_strings=("x",))


def _ev(enough: bool) -> Evaluation:
    return Evaluation(reason="r", enough=enough, missing=[], web_query=None, confidence=0.9)


def test_summarize_judge_hand_checked() -> None:
    outcomes = [
        # full, correct
        JudgeOutcome(_case("a", "full", True), True, _ev(True), CallStats(1, 0, 0, 1.0)),
        # half judged enough: the dangerous error
        JudgeOutcome(_case("b", "half", False), True, _ev(True), CallStats(1, 0, 0, 1.0)),
        # invalid twice -> counted as not enough (what the graph does)
        JudgeOutcome(_case("c", "unrelated", False), False, None, CallStats(2, 2, 0, 4.0, ["invalid", "invalid"])),
        # valid after one invalid reply
        JudgeOutcome(_case("d", "related_not_containing", False), False, _ev(False), CallStats(2, 1, 0, 2.0, ["invalid"])),
    ]
    s = summarize_judge(outcomes)
    m = s["metrics"]
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (2, 0, 1, 1)
    assert m["accuracy"] == pytest.approx(0.75)
    assert m["precision"] == pytest.approx(1.0)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(0.8)
    assert s["confusion"] == {"enough": {"enough": 1, "not_enough": 0}, "not_enough": {"enough": 1, "not_enough": 2}}
    assert s["calls"] == 6
    assert s["invalid_json_replies"] == 3
    assert s["invalid_json_rate"] == pytest.approx(0.5)
    assert s["cases_without_valid_reply"] == 1
    assert s["mean_latency_per_call_s"] == pytest.approx(8.0 / 6)
    assert s["per_kind"]["half"] == {"n": 1, "correct": 0, "accuracy": 0.0, "label_enough": False,
                                     "predicted_enough": 1, "invalid": 0}
    assert s["per_kind"]["unrelated"]["invalid"] == 1
    assert s["valid_only"]["n"] == 3
    assert s["valid_only"]["accuracy"] == pytest.approx(2 / 3)


def test_risk_coverage_orders_by_confidence_and_integrates_risk() -> None:
    from rag.eval.metrics import risk_coverage

    informative = risk_coverage([0.9, 0.8, 0.3, 0.2], [True, True, False, False])
    assert [r["coverage"] for r in informative["rows"]] == [0.25, 0.5, 0.75, 1.0]
    assert [r["accuracy"] for r in informative["rows"]] == [1.0, 1.0, 2 / 3, 0.5]
    useless = risk_coverage([0.7, 0.7, 0.7, 0.7], [True, True, False, False])
    assert useless["aurc"] == pytest.approx(0.5) and len(useless["rows"]) == 1
    inverted = risk_coverage([0.2, 0.3, 0.8, 0.9], [True, True, False, False])
    assert informative["aurc"] < useless["aurc"] < inverted["aurc"]
    assert risk_coverage([], [])["aurc"] is None
