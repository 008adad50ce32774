"""Verify benchmark case files: every corpus reference resolves (and matches its fingerprint),
answer strings are present in "enough" cases and absent in the others, and every kind is covered.

    python scripts/verify_cases.py [FILE ...] [--corpus-dir DIR]

With no FILE, checks every assets/eval/*.jsonl and assets/eval/dev/*.jsonl judge case file (the dev
sets' references point into ../shared/corpus/dev: novels cut by numbered headings or by story titles,
and the QA datasets' paragraphs named by question id); passages of guide_*.jsonl must be cut verbatim
from the sample book's Markdown sources (assets/xiyouji-guide/). A "not enough" case whose label is a
dataset's human "unanswerable" (label_source dataset) needs no answer strings. Exit 0 when all is
well, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rag.eval.cases import KINDS, CaseError, check_answer_strings, load_cases  # noqa: E402

GUIDE_DIR = REPO / "assets" / "xiyouji-guide"


def _squash(text: str) -> str:
    return "".join(text.split())


def verify(path: Path, corpus_dir: str | None, sources: Path | None) -> list[str]:
    try:
        cases = load_cases(path, corpus_dir=corpus_dir)
    except CaseError as exc:
        return [str(exc)]
    problems = [p for case in cases for p in check_answer_strings(case)]
    if sources is not None:
        files = sorted(sources.glob("*.md"))
        if not files:
            problems.append(f"{path.name}: no Markdown sources in {sources}")
        book = _squash("\n".join(f.read_text(encoding="utf-8") for f in files))
        problems += [f"{case.source}: passage {i} is not verbatim in {sources.name}/*.md: {p.text[:40]!r}..."
                     for case in cases for i, p in enumerate(case.context, start=1)
                     if p.ref is None and _squash(p.text) not in book]
    kinds = Counter(case.kind for case in cases)
    missing = [k for k in KINDS if not kinds.get(k)]
    if missing:
        problems.append(f"{path.name}: no case of kind(s) {', '.join(missing)}")
    refs = sum(1 for case in cases for p in case.context if p.ref is not None)
    enough = sum(case.label_enough for case in cases)
    dataset = sum(case.label_source == "dataset" for case in cases)
    print(f"{path.name}: {len(cases)} cases ({enough} enough, {len(cases) - enough} not"
          + (f", {dataset} labelled by the dataset" if dataset else "") + f"), {refs} corpus references resolved; "
          + ", ".join(f"{k}={kinds.get(k, 0)}" for k in KINDS))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--corpus-dir", help="directory of the corpus files (default: ../shared/corpus)")
    parser.add_argument("--sources", type=Path, help="Markdown sources that inline passages must be cut from "
                                                     "(default: assets/xiyouji-guide for guide_*.jsonl)")
    args = parser.parse_args(argv)
    eval_dir = REPO / "assets" / "eval"
    files = args.files or sorted(p for p in [*eval_dir.glob("*.jsonl"), *eval_dir.glob("dev/*.jsonl")]
                                 if "route" not in p.name)
    if not files:
        print("no case files found", file=sys.stderr)
        return 1
    problems: list[str] = []
    for path in files:
        sources = args.sources or (GUIDE_DIR if path.name.startswith("guide") else None)
        problems += verify(path, args.corpus_dir, sources)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
