"""Measure the judge: labelled cases, a benchmark runner, metrics, and the evaluation-log summary.

Nothing here runs at import time; ``rag.eval.cli.add_commands`` wires the ``eval`` command.
"""

from rag.eval.cases import KINDS, Case, CaseError, ContextPassage, Corpus, Ref, load_cases, load_route_cases
from rag.eval.metrics import BinaryMetrics, binary_metrics

__all__ = [
    "KINDS",
    "BinaryMetrics",
    "Case",
    "CaseError",
    "ContextPassage",
    "Corpus",
    "Ref",
    "binary_metrics",
    "load_cases",
    "load_route_cases",
]
