"""Summary of the evaluation log that ``rag.agent.evallog.JsonlEvalLog`` writes (one line per evaluation).

A question's turn starts with its round-1 record. The graph always evaluates again after a web
search (web_search -> evaluate), so every record of round 2 or later judged exactly one web search:
that is how searches are counted (the same for logs written before records named the search they
judged). Lines that are not JSON objects are counted and skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import RagError
from rag.eval.metrics import fmt, latency_summary, ratio

logger = logging.getLogger(__name__)


@dataclass
class LogSummary:
    path: str
    records: int = 0
    bad_lines: int = 0
    turns: int = 0  # questions asked (round-1 records)
    distinct_questions: int = 0
    not_enough: int = 0
    invalid_json: int = 0
    web_searches: int = 0
    models: dict[str, int] = field(default_factory=dict)
    rounds: dict[str, int] = field(default_factory=dict)
    latency: dict[str, float | None] = field(default_factory=dict)
    first_time: str | None = None
    last_time: str | None = None

    @property
    def not_enough_rate(self) -> float | None:
        return ratio(self.not_enough, self.records)

    @property
    def invalid_json_rate(self) -> float | None:
        return ratio(self.invalid_json, self.records)

    @property
    def web_searches_per_question(self) -> float | None:
        return ratio(self.web_searches, self.turns)

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "records": self.records, "bad_lines": self.bad_lines, "turns": self.turns,
                "distinct_questions": self.distinct_questions, "not_enough": self.not_enough,
                "not_enough_rate": self.not_enough_rate, "invalid_json": self.invalid_json,
                "invalid_json_rate": self.invalid_json_rate, "web_searches": self.web_searches,
                "web_searches_per_question": self.web_searches_per_question,
                "models": self.models, "rounds": self.rounds, "latency_s": self.latency,
                "first_time": self.first_time, "last_time": self.last_time}


def summarize_log(path: str | Path) -> LogSummary:
    """Read the log at ``path``. Raises RagError when it does not exist or cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise RagError(f"no evaluation log at {path} (it is written while EVAL_LOG_ENABLED is true, "
                       "once questions have been asked)")
    summary = LogSummary(path=str(path))
    hashes: set[str] = set()
    latencies: list[float] = []
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise RagError(f"cannot read the evaluation log {path}: {exc}") from exc
    with handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                summary.bad_lines += 1
                continue
            if not isinstance(record, dict):
                summary.bad_lines += 1
                continue
            summary.records += 1
            stored = record.get("evaluation")
            evaluation: dict[str, Any] = stored if isinstance(stored, dict) else {}
            if evaluation.get("enough") is not True:
                summary.not_enough += 1
            if record.get("invalid_json") is True:
                summary.invalid_json += 1
            round_no = record.get("round")
            summary.rounds[str(round_no)] = summary.rounds.get(str(round_no), 0) + 1
            if round_no == 1:
                summary.turns += 1
            elif isinstance(round_no, int) and round_no > 1:
                summary.web_searches += 1  # the search this evaluation judged
            model = str(record.get("model") or "?")
            summary.models[model] = summary.models.get(model, 0) + 1
            if record.get("question_hash"):
                hashes.add(str(record["question_hash"]))
            if isinstance(record.get("latency_s"), (int, float)):
                latencies.append(float(record["latency_s"]))
            when = record.get("time")
            if isinstance(when, str):
                summary.first_time = when if summary.first_time is None else min(summary.first_time, when)
                summary.last_time = when if summary.last_time is None else max(summary.last_time, when)
    summary.distinct_questions = len(hashes)
    summary.latency = latency_summary(latencies)
    if summary.bad_lines:
        logger.warning("%d unreadable line(s) in %s were skipped", summary.bad_lines, path)
    return summary


def _round_key(item: tuple[str, int]) -> tuple[int, str]:
    return (int(item[0]), "") if item[0].isdigit() else (1 << 30, item[0])


def format_summary(summary: LogSummary) -> str:
    lines = [
        f"evaluation log: {summary.path}",
        f"  evaluations:               {summary.records}" + (f"  ({summary.bad_lines} unreadable lines skipped)"
                                                              if summary.bad_lines else ""),
        f"  questions (turns):         {summary.turns}  ({summary.distinct_questions} distinct)",
        f"  not enough:                {summary.not_enough}  (rate {fmt(summary.not_enough_rate)})",
        f"  web searches:              {summary.web_searches}  (per question {fmt(summary.web_searches_per_question, 2)})",
        f"  invalid JSON:              {summary.invalid_json}  (rate {fmt(summary.invalid_json_rate)})",
        f"  mean judge latency:        {fmt(summary.latency.get('mean'), 2)} s",
        "  evaluations per round:     " + (", ".join(f"{k}={v}" for k, v in sorted(summary.rounds.items(), key=_round_key))
                                             or "-"),
        "  models:                    " + (", ".join(f"{k}={v}" for k, v in sorted(summary.models.items())) or "-"),
    ]
    if summary.first_time:
        lines.append(f"  period:                    {summary.first_time} .. {summary.last_time}")
    return "\n".join(lines)
