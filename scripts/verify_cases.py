"""Verify benchmark case files: every corpus reference resolves (and matches its fingerprint),
answer strings are present in "enough" cases and absent in the others, and every kind is covered.

    python scripts/verify_cases.py [FILE ...] [--corpus-dir DIR]

With no FILE, checks every assets/eval/*.jsonl judge case file. Exit 0 when all is well, 1 otherwise.
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


def verify(path: Path, corpus_dir: str | None) -> list[str]:
    try:
        cases = load_cases(path, corpus_dir=corpus_dir)
    except CaseError as exc:
        return [str(exc)]
    problems = [p for case in cases for p in check_answer_strings(case)]
    kinds = Counter(case.kind for case in cases)
    missing = [k for k in KINDS if not kinds.get(k)]
    if missing:
        problems.append(f"{path.name}: no case of kind(s) {', '.join(missing)}")
    refs = sum(1 for case in cases for p in case.context if p.ref is not None)
    print(f"{path.name}: {len(cases)} cases, {refs} corpus references resolved; "
          + ", ".join(f"{k}={kinds.get(k, 0)}" for k in KINDS))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--corpus-dir", help="directory of the corpus files (default: ../shared/corpus)")
    args = parser.parse_args(argv)
    files = args.files or sorted(p for p in (REPO / "assets" / "eval").glob("*.jsonl") if "route" not in p.name)
    if not files:
        print("no case files found", file=sys.stderr)
        return 1
    problems: list[str] = []
    for path in files:
        problems += verify(path, args.corpus_dir)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
