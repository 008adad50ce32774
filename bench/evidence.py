"""The evidence figures on recorded model replies (bench/fixtures/replies/), replayed over loopback HTTP.

    python bench/evidence.py [--out bench/results/evidence] [--fixture capable --fixture qwen1.5b ...]
    python bench/evidence.py --dev --out bench/results/evidence/dev   # the new books' tune and held-out halves

For each reply set and dev set: the judge in each mode (accuracy, answerable -> enough, false-enough,
"enough" verdicts code-verified), and, for replies with recorded answers, the sentence marks of the
faithful answers, seeded errors flagged and tampering flips (``rag eval checks --replay``). Writes
``summary.json`` (figures only) to ``--out`` and the per-run reports, which quote the book, to
``--runs`` (a temporary directory by default); prints a Markdown table. Needs the corpus (../shared/corpus).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rag.cli import main as rag_main  # noqa: E402
from rag.eval.metrics import fmt  # noqa: E402

SETS = ("guide_cases", "xiyouji_refs", "sanguo_refs")
FIXTURES = REPO / "bench" / "fixtures" / "replies"
DEV_CASES = REPO / "assets" / "eval" / "dev"
# New books and documents (assets/eval/dev): each in a tune half and a half kept aside; replies
# capable-<set>-<half>.jsonl written by a helper agent playing the model on the prompts alone;
DEV_SETS = ("cail", "squad", "hongloumeng", "pride", "nahan")
# qwen1.5b-<set>-heldout: the small model's judge replies (json_schema) on the halves kept aside
DEV_FIXTURES = (*(f"capable-{name}-{half}" for half in ("tune", "heldout") for name in DEV_SETS),
                *(f"qwen1.5b-{name}-heldout" for name in DEV_SETS))
# capable: judge and answers; capable-answers2/3: more answers (3 held out from the sentence checks'
# calibration); qwen1.5b: the small model's judge replies; qwen1.5b-answers: its answers
DEFAULT_FIXTURES = ("capable", "capable-answers2", "capable-answers3", "qwen1.5b", "qwen1.5b-answers")


def _run(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return rag_main(argv)


def case_sets(fixture: str) -> list[tuple[str, Path]]:
    """The case files a reply set answers: a dev set's own half (capable-cail-heldout ->
    assets/eval/dev/cail.heldout.jsonl), else the three sets of the two novels and the guide."""
    for name in DEV_SETS:
        for half in ("tune", "heldout"):
            if fixture.endswith(f"-{name}-{half}"):
                return [(f"{name}.{half}", DEV_CASES / f"{name}.{half}.jsonl")]
    return [(cases, REPO / "assets" / "eval" / f"{cases}.jsonl") for cases in SETS]


def judge_rows(fixture: str, out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if '"call": "judge-' not in (FIXTURES / f"{fixture}.jsonl").read_text(encoding="utf-8"):
        return rows  # a set of answers only (capable-answers2)
    for cases, path in case_sets(fixture):
        for mode in ("evidence", "guarded", "verdict"):
            report = out / f"judge-{fixture}-{cases}-{mode}.json"
            code = _run(["eval", "judge", "--cases", str(path), "--mode", mode,
                         "--quiet", "--replay", str(FIXTURES / f"{fixture}.jsonl"), "--report", str(report)])
            if code != 0 or not report.is_file():
                continue
            s = json.loads(report.read_text(encoding="utf-8"))["summary"]
            answerable = sum(s["per_kind"].get(k, {}).get("n", 0) for k in ("full", "multihop_both"))
            rows.append({"fixture": fixture, "cases": cases, "mode": mode, "n": s["n"],
                         "accuracy": s["metrics"]["accuracy"], "answerable": answerable,
                         "answerable_enough": s["answerable_enough"], "not_enough_cases": s["n"] - answerable,
                         "false_enough": s["false_enough"], "enough_verdicts": s["enough_verdicts"],
                         "enough_code_verified": s["enough_with_verified_evidence"],
                         "no_reply": s["cases_without_valid_reply"] + s["call_errors"]})
    return rows


def check_rows(fixture: str, out: Path) -> list[dict[str, Any]]:
    rows = []
    for cases, path in case_sets(fixture):
        report = out / f"checks-{fixture}-{cases}.json"
        _run(["eval", "checks", "--cases", str(path),
              "--replay", str(FIXTURES / f"{fixture}.jsonl"), "--report", str(report)])
        if not report.is_file():
            continue
        data = json.loads(report.read_text(encoding="utf-8"))
        seeded, tamper = data["seeded"], data["tamper"]
        rows.append({"fixture": fixture, "cases": cases, "answers": seeded["answers"], **seeded["faithful"],
                     "seeded_tried": sum(r["tried"] for r in seeded["seeded"].values()),
                     "seeded_flagged": sum(r["flagged"] for r in seeded["seeded"].values()),
                     "seeded": {k: f"{r['flagged']}/{r['tried']}" for k, r in seeded["seeded"].items()},
                     "tampered": sum(r["tried"] for r in tamper["tampers"].values()),
                     "flipped": sum(r["flipped"] for r in tamper["tampers"].values())})
    return rows


def table(judges: list[dict[str, Any]], checks: list[dict[str, Any]]) -> str:
    lines = ["| replies | cases | mode | accuracy | answerable -> enough | false-enough | enough code-verified |",
             "|---|---|---|---|---|---|---|"]
    for r in judges:
        lines.append(f"| {r['fixture']} | {r['cases']} | {r['mode']} | {fmt(r['accuracy'], 2)} | "
                     f"{r['answerable_enough']}/{r['answerable']} | {r['false_enough']}/{r['not_enough_cases']} | "
                     f"{r['enough_code_verified']}/{r['enough_verdicts']} |")
    lines += ["", "| replies | cases | answers | claim sentences | supported | unsupported | uncited | "
                  "seeded errors flagged | tampered cases flipped |", "|---|---|---|---|---|---|---|---|---|"]
    for r in checks:
        if not r["answers"]:
            continue
        lines.append(f"| {r['fixture']} | {r['cases']} | {r['answers']} | {r['sentences']} | {r['supported']} | "
                     f"{r['unsupported']} | {r['uncited']} | {r['seeded_flagged']}/{r['seeded_tried']} | "
                     f"{r['flipped']}/{r['tampered']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "evidence"))
    parser.add_argument("--runs", help="where the per-run reports go (they quote the book: not for the repository)")
    parser.add_argument("--fixture", action="append", help="reply sets (default: DEFAULT_FIXTURES)")
    parser.add_argument("--dev", action="store_true", help="the reply sets of the new books' halves (DEV_FIXTURES)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = Path(args.runs) if args.runs else Path(tempfile.mkdtemp(prefix="evidence-runs-"))
    runs.mkdir(parents=True, exist_ok=True)
    judges, checks = [], []
    fixtures = args.fixture or list(DEV_FIXTURES if args.dev else DEFAULT_FIXTURES)
    for fixture in fixtures:
        judges += judge_rows(fixture, runs)
        checks += check_rows(fixture, runs)
    (out / "summary.json").write_text(json.dumps({"judge": judges, "checks": checks}, ensure_ascii=False, indent=1)
                                      + "\n", encoding="utf-8")
    print(table(judges, checks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
