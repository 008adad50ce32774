"""Compare judge reports side by side (e.g. with and without the few-shot counter-examples).

    python bench/judge.py REPORT.json [REPORT.json ...]        # a Markdown table of the reports
    python bench/judge.py --run --cases FILE [--limit N] ...    # run `rag eval judge` with and without
                                                                # few-shot, then print the table
    python bench/judge.py --recheck --cases FILE REPORT.json    # decide an evidence report's stored
                                                                # replies again with today's checks

Reports come from ``python -m rag eval judge --report PATH``. The model is whatever the settings
(LLM_BASE_URL, LLM_MODEL, LLM_STRUCTURED_METHOD) point at.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rag.eval.cases import KINDS  # noqa: E402
from rag.eval.metrics import fmt  # noqa: E402


def table(reports: list[dict[str, Any]]) -> str:
    head = ["cases", "model", "mode", "few-shot", "n", "accuracy", "F1(not enough)", "false-enough",
            "answerable enough", "enough w/ verified evidence", "quotes verified", "AURC", "invalid JSON", "s/call",
            *KINDS]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        s = r["summary"]
        m = s["metrics"]
        kinds = [f"{s['per_kind'][k]['correct']}/{s['per_kind'][k]['n']}" if k in s["per_kind"] else "-" for k in KINDS]
        rows.append("| " + " | ".join([
            Path(r["cases_file"]).name, r["model"], r.get("mode", "verdict"), "on" if r.get("few_shot") else "off",
            str(s["n"]), fmt(m["accuracy"], 2), fmt(m["f1"], 2),
            f"{s.get('false_enough', '-')} ({fmt(s.get('false_enough_rate'), 2)})",
            f"{s.get('answerable_enough', '-')} ({fmt(s.get('answerable_enough_rate'), 2)})",
            f"{s.get('enough_with_verified_evidence', '-')}/{s.get('enough_verdicts', '-')}",
            fmt(s.get("quote_verification_rate"), 2), fmt((s.get("risk_coverage") or {}).get("aurc"), 3),
            fmt(s["invalid_json_rate"], 2), fmt(s["mean_latency_per_call_s"], 1), *kinds]) + " |")
    return "\n".join(rows)


def recheck(report: dict[str, Any], cases_file: str, corpus_dir: str | None = None) -> dict[str, Any]:
    """The report with every stored part verified again by today's code and the verdicts, summary
    and mode figures recomputed: the same model replies, today's checks."""
    from rag.agent.judge import check_parts, decide, sources_of
    from rag.eval.cases import load_cases
    from rag.eval.runner import CallStats, JudgeOutcome, summarize_judge
    from rag.schemas import ClaimedPart, Evaluation, EvidenceJudgement

    cases = {c.id: c for c in load_cases(cases_file, corpus_dir=corpus_dir)}
    outcomes = []
    for row in report["results"]:
        case, stored = cases[row["id"]], row["evaluation"]
        stats = CallStats(attempts=row["attempts"], invalid_replies=row["invalid_replies"],
                          call_errors=row["call_errors"], latency_s=row["latency_s"])
        evaluation = None
        if stored is not None:
            claimed = [ClaimedPart(part=p["part"], answer=p["answer"], source=p["source"], quote=p["quote"])
                       for p in stored["parts"]]
            if claimed:
                reply = EvidenceJudgement(reason=stored["reason"].split(" [code:")[0], parts=claimed,
                                          enough=bool(stored["model_enough"]), confidence=stored["confidence"])
                parts = check_parts(claimed, sources_of(case.passages(), (), 1200), case.question)
                evaluation = decide(reply, parts, stored["mode"], case.question)
            else:
                evaluation = Evaluation.model_validate(stored)
        outcomes.append(JudgeOutcome(case=case, predicted_enough=bool(evaluation and evaluation.enough),
                                     evaluation=evaluation, stats=stats, tokens=row.get("tokens", 0)))
    return {**report, "mode": f"{report.get('mode')} (rechecked)", "summary": summarize_judge(outcomes)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path)
    parser.add_argument("--run", action="store_true", help="run the benchmark with and without few-shot first")
    parser.add_argument("--cases", help="case file for --run")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--kinds")
    parser.add_argument("--per-kind")
    parser.add_argument("--corpus-dir")
    parser.add_argument("--recheck", action="store_true",
                        help="re-verify the parts stored in evidence/guarded REPORTs with the current code (no model)")
    parser.add_argument("--mode", default="all", help="judge mode for --run (evidence, guarded, verdict or all)")
    parser.add_argument("--out-dir", type=Path, default=Path("data") / "eval")
    args = parser.parse_args(argv)
    paths = list(args.reports)
    if args.recheck:
        if not args.cases:
            parser.error("--recheck needs --cases")
        reports = [recheck(json.loads(p.read_text(encoding="utf-8")), args.cases, args.corpus_dir) for p in paths]
        print(table(reports))
        return 0
    if args.run:
        if not args.cases:
            parser.error("--run needs --cases")
        from rag.cli import main as rag_main

        stamp = time.strftime("%Y%m%d-%H%M%S")
        for few_shot in (True, False):
            path = args.out_dir / f"judge-{Path(args.cases).stem}-{'fewshot' if few_shot else 'zeroshot'}-{stamp}.json"
            cmd = ["eval", "judge", "--cases", args.cases, "--report", str(path), "--mode", args.mode]
            cmd += [] if few_shot else ["--no-few-shot"]
            cmd += ["--limit", str(args.limit)] if args.limit else []
            cmd += ["--kinds", args.kinds] if args.kinds else []
            cmd += ["--per-kind", args.per_kind] if args.per_kind else []
            cmd += ["--corpus-dir", args.corpus_dir] if args.corpus_dir else []
            status = rag_main(cmd)
            if status:
                return status
            modes = ("evidence", "guarded", "verdict") if args.mode == "all" else ()
            paths += [path.with_name(f"{path.stem}-{m}{path.suffix}") for m in modes] or [path]
    if not paths:
        parser.error("give report files or --run")
    print(table([json.loads(p.read_text(encoding="utf-8")) for p in paths]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
