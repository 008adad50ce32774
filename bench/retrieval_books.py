"""Retrieval on several books at once, each mode (hybrid / keyword / vector), with the English questions
apart: chunk recall@5/@10 (a passage in the top k holds the evidence), the English questions' and their
Chinese twins', and the query p50. For before/after figures the same script runs under the old code
(``--label before`` with that checkout first on PYTHONPATH) on the same ingested books.

    python bench/retrieval_books.py resolve CASES.jsonl... --out /tmp/resolved     # evidence text: not in the repo
    python bench/retrieval_books.py run --resolved /tmp/resolved --books BOOKS.json --label after \\
        --sets hongloumeng_tune,nahan_tune --out bench/results/retrieval_books_after_tune.json

BOOKS.json maps a case set to the data directory its book was ingested into with ``python -m rag ingest``
(``{"hongloumeng_tune": "/data/hlm", ...}``); each directory holds that one book.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # a --label before run puts the old checkout first
    sys.path.append(str(ROOT))

MODES = ("hybrid", "keyword", "vector")
_SPACE = re.compile(r"\s+")


def resolve(paths: list[Path], out: Path) -> int:
    from rag.eval.retrieval_cases import load_cases

    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        cases, _ = load_cases(path)
        rows = [{"id": c.id, "group": c.group, "question": c.question, "evidence": list(c.evidence),
                 "need": c.need, "twin": c.twin} for c in cases]
        (out / f"{path.stem}.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return 0


def found(case: dict[str, Any], texts: list[str]) -> bool:
    squashed = [_SPACE.sub("", t) for t in texts]
    hits = [any(e in t for t in squashed) for e in case["evidence"]]
    return all(hits) if case["need"] == "all" else any(hits)


def recall(ranks: list[int | None], k: int) -> float | None:
    return round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 3) if ranks else None


def measure(data_dir: str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from rag.config import Settings
    from rag.index import open_index

    index = open_index(Settings(_env_file=None, data_dir=data_dir))
    try:
        (book,) = index.books()
        rows = []
        for mode in MODES:
            index.retrieve("预热 warm-up", k=10, book_id=book.id, mode=mode)
            ranks: dict[str, int | None] = {}
            latencies = []
            for case in cases:
                t0 = time.perf_counter()
                texts = [p.text for p in index.search(case["question"], k=10, book_id=book.id, mode=mode).passages]
                latencies.append(time.perf_counter() - t0)
                ranks[case["id"]] = next((i + 1 for i in range(len(texts)) if found(case, texts[: i + 1])), None)
            english = [c for c in cases if c["group"] == "english"]
            twins = {c["twin"] for c in english}
            latencies.sort()
            rows.append({
                "mode": mode, "questions": len(cases), "chunk@5": recall(list(ranks.values()), 5),
                "chunk@10": recall(list(ranks.values()), 10),
                "not_english@5": recall([ranks[c["id"]] for c in cases if c["group"] != "english"], 5),
                "not_english@10": recall([ranks[c["id"]] for c in cases if c["group"] != "english"], 10),
                "english": len(english), "english@5": recall([ranks[c["id"]] for c in english], 5),
                "english@10": recall([ranks[c["id"]] for c in english], 10),
                "twins@5": recall([ranks[c["id"]] for c in cases if c["id"] in twins], 5),
                "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1), "ranks": ranks})
        return rows
    finally:
        index.close()


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    res = sub.add_parser("resolve")
    res.add_argument("cases", type=Path, nargs="+")
    res.add_argument("--out", type=Path, required=True)
    run = sub.add_parser("run")
    run.add_argument("--resolved", type=Path, required=True)
    run.add_argument("--books", type=Path, required=True)
    run.add_argument("--sets", required=True, help="comma-separated case sets (file stems)")
    run.add_argument("--label", required=True, help="before / after")
    run.add_argument("--tuned", action="store_true", help="the sets were tuned on (recorded with the figures)")
    run.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.command == "resolve":
        return resolve(args.cases, args.out)
    books = json.loads(args.books.read_text(encoding="utf-8"))
    result: dict[str, Any] = {"label": args.label, "tuned_on": args.tuned, "load": os.getloadavg()[0],
                              "when": time.strftime("%Y-%m-%d %H:%M"), "sets": {}}
    for name in args.sets.split(","):
        cases = json.loads((args.resolved / f"{name}.json").read_text(encoding="utf-8"))
        rows = measure(books[name], cases)
        result["sets"][name] = rows
        for row in rows:
            print(f"{args.label} {name} {row['mode']}: @5 {row['chunk@5']} @10 {row['chunk@10']} "
                  f"en@5 {row['english@5']} twins@5 {row['twins@5']} p50 {row['p50_ms']} ms", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
