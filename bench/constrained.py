"""Constrained quotes (issue 23): the judge's and the router's figures per structured method with the
1.5B model, and the judge with free vs constrained quotes, from the reports of ``rag eval judge`` /
``rag eval route`` (``bench/results/judge/qwen1.5b-constrained*.json``).

    python bench/constrained.py              # scrub the reports' book text, write the summary, print the table
    python bench/constrained.py --replay     # first decide the recorded replies again (today's checks)

How the reports were made: bench/README.md, "Constrained quotes (issue 23)". ``--replay`` runs
``rag eval judge --replay`` on each fixture ``bench/fixtures/replies/qwen1.5b-constrained*.jsonl``
(needs the corpus, ../shared/corpus or EVAL_CORPUS_DIR) and keeps each report's recorded latencies.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rag.cli import main as rag_main  # noqa: E402
from rag.eval.metrics import fmt, latency_summary  # noqa: E402

RESULTS = REPO / "bench" / "results" / "judge"
FIXTURES = REPO / "bench" / "fixtures" / "replies"
CASES = REPO / "bench" / "cases" / "constrained_dev.jsonl"
LIMIT = 10  # the first 10 cases (西游记); the free and the final constrained runs have all 20
#: (report stem, fixture stem, method, quotes)
JUDGE_RUNS = [
    ("qwen1.5b-constrained-before-function_calling", "qwen1.5b-constrained-before-function_calling",
     "function_calling", "free"),
    ("qwen1.5b-constrained-before-json_mode", "qwen1.5b-constrained-before-json_mode", "json_mode", "free"),
    ("qwen1.5b-constrained-before-json_schema", "qwen1.5b-constrained-before-json_schema", "json_schema", "free"),
    ("qwen1.5b-constrained-sentences", "qwen1.5b-constrained-sentences", "json_schema", "sentences"),
    ("qwen1.5b-constrained-runs3", "qwen1.5b-constrained-runs3", "json_schema", "runs of 1-3 clauses"),
    ("qwen1.5b-constrained-anyrun", "qwen1.5b-constrained-anyrun", "json_schema", "any run of clauses"),
    ("qwen1.5b-constrained", "qwen1.5b-constrained", "json_schema", "any run, also without its quotation marks"),
]
ROUTE_METHODS = ("function_calling", "json_mode", "json_schema")
_TEXT_FIELDS = ("reason", "answer", "quote", "detail")


def _omit(value: Any) -> Any:
    if isinstance(value, str) and value:
        return f"<{len(value)} characters omitted>"
    if isinstance(value, list):
        return [_omit(v) for v in value]
    return value


def scrub(report: dict[str, Any]) -> dict[str, Any]:
    """The report without the book's text (quotes, answers, reasons, details, missing)."""
    for result in report.get("results", []):
        ev = result.get("evaluation")
        if not isinstance(ev, dict):
            continue
        ev["reason"] = _omit(ev.get("reason"))
        ev["missing"] = _omit(ev.get("missing"))
        for part in ev.get("parts", []):
            for key in _TEXT_FIELDS:
                part[key] = _omit(part.get(key))
    return report


def _cases_in(fixture: str) -> int:
    ids = {json.loads(line)["case"] for line in (FIXTURES / f"{fixture}.jsonl").read_text(encoding="utf-8").splitlines()
           if line.startswith("{")}
    return len(ids)


def replay(stem: str, fixture: str, method: str, quotes: str, latency_from: tuple[Path, ...] = ()) -> None:
    """Decide the recorded replies again into the report (every case the fixture holds), keeping the
    per-case latencies recorded live (in the report itself, or in the live reports ``latency_from`` of
    this same run, e.g. its two halves)."""
    path = RESULTS / f"{stem}.json"
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    latencies = {r["id"]: r.get("latency_s") for r in old.get("results", [])}
    for extra in latency_from:
        latencies.update({r["id"]: r.get("latency_s") for r in json.loads(extra.read_text(encoding="utf-8"))["results"]})
    argv = ["eval", "judge", "--cases", str(CASES), "--limit", str(_cases_in(fixture)), "--mode", "evidence",
            "--method", method, "--quiet", "--replay", str(FIXTURES / f"{fixture}.jsonl"), "--report", str(path)]
    if quotes == "free":
        argv.append("--free-quotes")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rag_main(argv)
    new = json.loads(path.read_text(encoding="utf-8"))
    if latencies:
        for r in new["results"]:
            r["latency_s"] = latencies.get(r["id"], r.get("latency_s"))
        live = [float(r["latency_s"]) for r in new["results"] if r.get("latency_s") is not None]
        new["summary"]["latency_per_case_s"] = latency_summary(live)
        new["summary"]["mean_latency_per_call_s"] = sum(live) / new["summary"]["calls"] if live else None
    new["model"] = "qwen2.5-coder-1.5b" if new["model"].startswith("replay:") else new["model"]
    new["replayed_from"] = f"bench/fixtures/replies/{fixture}.jsonl"
    if old.get("note"):
        new["note"] = old["note"]
    path.write_text(json.dumps(new, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def judge_row(stem: str, method: str, quotes: str) -> dict[str, Any] | None:
    path = RESULTS / f"{stem}.json"
    if not path.is_file():
        return None
    report = scrub(json.loads(path.read_text(encoding="utf-8")))
    path.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    s = report["summary"]
    answerable = sum(s["per_kind"].get(k, {}).get("n", 0) for k in ("full", "multihop_both"))
    return {"call": "judge", "method": method, "quotes": quotes, "n": s["n"], "calls": s["calls"],
            "invalid_replies": s["invalid_json_replies"], "invalid_rate": s["invalid_json_rate"],
            "cases_without_valid_reply": s["cases_without_valid_reply"], "answerable": answerable,
            "answerable_enough": s["answerable_enough"], "unanswerable": s["n"] - answerable,
            "false_enough": s["false_enough"], "quotes_total": s["quotes"],
            "quote_verification_rate": s["quote_verification_rate"],
            "mean_latency_per_call_s": s["mean_latency_per_call_s"], "report": path.name}


def route_row(method: str) -> dict[str, Any] | None:
    path = RESULTS / f"qwen1.5b-constrained-route-{method}.json"
    if not path.is_file():
        return None
    s = json.loads(path.read_text(encoding="utf-8"))["summary"]
    return {"call": "route", "method": method, "quotes": "-", "n": s["n"], "calls": s["calls"],
            "invalid_replies": s["invalid_json_replies"], "invalid_rate": s["invalid_json_rate"],
            "cases_without_valid_reply": s["cases_without_valid_reply"], "accuracy": s["metrics"]["accuracy"],
            "mean_latency_per_call_s": s["mean_latency_per_call_s"], "report": path.name}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| call | method | quotes | cases | invalid replies / calls | no valid reply | answerable -> enough | "
             "false-enough | quotes verified | s / call |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        judged = r["call"] == "judge"
        lines.append(
            f"| {r['call']} | {r['method']} | {r['quotes']} | {r['n']} | {r['invalid_replies']}/{r['calls']} | "
            f"{r['cases_without_valid_reply']} | "
            + (f"{r['answerable_enough']}/{r['answerable']} | {r['false_enough']}/{r['unanswerable']} | "
               f"{fmt(r['quote_verification_rate'], 2)} of {r['quotes_total']} | " if judged else "- | - | - | ")
            + f"{fmt(r['mean_latency_per_call_s'], 0)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replay", action="store_true", help="decide the recorded replies again first")
    args = parser.parse_args(argv)
    if args.replay:
        for stem, fixture, method, quotes in JUDGE_RUNS:
            if (FIXTURES / f"{fixture}.jsonl").is_file():
                replay(stem, fixture, method, quotes)
    rows = [r for r in (judge_row(stem, m, q) for stem, _, m, q in JUDGE_RUNS) if r]
    rows += [r for r in (route_row(m) for m in ROUTE_METHODS) if r]
    (RESULTS / "qwen1.5b-constrained-summary.json").write_text(
        json.dumps({"cases": str(CASES.relative_to(REPO)), "rows": rows}, ensure_ascii=False,
                   indent=1) + "\n", encoding="utf-8")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
