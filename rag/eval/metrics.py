"""Binary classification metrics for the judge ("not enough" is the positive class) and the router.

Pure functions over (label, prediction) pairs; undefined ratios are ``None``, never a silent 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


def ratio(num: int | float, den: int | float) -> float | None:
    return None if den == 0 else num / den


@dataclass(frozen=True)
class BinaryMetrics:
    """Counts and rates for one positive class. ``tp``: labelled positive, predicted positive."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def accuracy(self) -> float | None:
        return ratio(self.tp + self.tn, self.n)

    @property
    def precision(self) -> float | None:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None or p + r == 0:
            return None if (p is None or r is None) else 0.0
        return 2 * p * r / (p + r)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "n": self.n, "accuracy": self.accuracy, "precision": self.precision,
                "recall": self.recall, "f1": self.f1}


def binary_metrics(labels: Sequence[bool], predictions: Sequence[bool]) -> BinaryMetrics:
    """``labels[i]`` / ``predictions[i]`` say whether case i is / was judged positive."""
    if len(labels) != len(predictions):
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    tp = sum(1 for y, p in zip(labels, predictions, strict=True) if y and p)
    fp = sum(1 for y, p in zip(labels, predictions, strict=True) if not y and p)
    fn = sum(1 for y, p in zip(labels, predictions, strict=True) if y and not p)
    tn = sum(1 for y, p in zip(labels, predictions, strict=True) if not y and not p)
    return BinaryMetrics(tp=tp, fp=fp, fn=fn, tn=tn)


def confusion(labels: Sequence[str], predictions: Sequence[str], classes: Sequence[str]) -> dict[str, dict[str, int]]:
    """``{label: {prediction: count}}`` over ``classes`` (rows: truth, columns: prediction)."""
    table = {y: dict.fromkeys(classes, 0) for y in classes}
    for y, p in zip(labels, predictions, strict=True):
        table.setdefault(y, dict.fromkeys(classes, 0))
        table[y][p] = table[y].get(p, 0) + 1
    return table


def per_group(groups: Sequence[str], labels: Sequence[Any], predictions: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Per group (case kind): n, correct, accuracy."""
    out: dict[str, dict[str, Any]] = {}
    for g, y, p in zip(groups, labels, predictions, strict=True):
        row = out.setdefault(g, {"n": 0, "correct": 0})
        row["n"] += 1
        row["correct"] += int(y == p)
    for row in out.values():
        row["accuracy"] = ratio(row["correct"], row["n"])
    return out


def latency_summary(values: Iterable[float]) -> dict[str, float | None]:
    data = sorted(v for v in values if v is not None)
    if not data:
        return {"mean": None, "median": None, "max": None, "total": 0.0}
    return {"mean": statistics.fmean(data), "median": statistics.median(data), "max": data[-1], "total": sum(data)}


def fmt(value: float | None, digits: int = 3) -> str:
    """A ratio for a table: 'n/a' when undefined."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def risk_coverage(confidences: Sequence[float], correct: Sequence[bool]) -> dict[str, Any]:
    """Selective accuracy when only the most confident verdicts are kept: rows of (coverage,
    accuracy, risk) at each distinct confidence, most confident first, and the area under the
    risk-coverage curve (AURC, lower is better; a confidence that means nothing gives about the
    overall error rate). Ties are taken together."""
    if len(confidences) != len(correct):
        raise ValueError(f"{len(confidences)} confidences but {len(correct)} outcomes")
    n = len(confidences)
    if n == 0:
        return {"rows": [], "aurc": None}
    pairs = sorted(zip(confidences, correct, strict=True), key=lambda p: -p[0])
    rows, kept, right, area, i = [], 0, 0, 0.0, 0
    while i < n:
        j = i
        while j < n and pairs[j][0] == pairs[i][0]:
            right += int(pairs[j][1])
            j += 1
        step = j - kept
        kept = j
        risk = 1 - right / kept
        area += risk * step / n
        rows.append({"confidence": pairs[i][0], "coverage": kept / n, "accuracy": right / kept, "risk": risk})
        i = j
    return {"rows": rows, "aurc": area}
