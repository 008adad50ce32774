"""Retrieval benchmark on the dev questions: recall@1/5/10 of the gold chapter and of a chunk that
contains an evidence string, per mode (keyword, vector, hybrid with each fusion method), and query
latency p50/p95. Also checks the demo question against the sample guide.

    python bench/ingest.py --data-dir data/bench      # index + embed 西游记 once (long)
    python bench/retrieval.py --data-dir data/bench   # then measure (seconds)
    python bench/retrieval.py --data-dir data/bench --keyword-only

Writes a Markdown table to stdout and JSON to bench/results/retrieval.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"
RESULTS = ROOT / "bench" / "results"
GUIDE = ROOT / "assets" / "xiyouji-guide.epub"
DEMO_QUESTION = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"
KS = (1, 5, 10)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def evaluate(index: Any, book_id: str, questions: list[dict[str, Any]], mode: str, fusion_method: str | None,
             repeat: int) -> dict[str, Any]:
    if fusion_method:
        index.fusion_method = fusion_method
    k_max = max(KS)
    hits_chapter = dict.fromkeys(KS, 0)
    hits_chunk = dict.fromkeys(KS, 0)
    latencies: list[float] = []
    per_question = []
    index.retrieve("预热", k=k_max, book_id=book_id, mode=mode)  # warm-up (model load, caches)
    for q in questions:
        passages = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            passages = index.retrieve(q["question"], k=k_max, book_id=book_id, mode=mode)
            latencies.append(time.perf_counter() - t0)
        gold = set(q["gold_chapters"])
        chapter_ranks = [i for i, p in enumerate(passages) if p.chapter_num in gold]
        chunk_ranks = [i for i, p in enumerate(passages) if any(e in p.text for e in q["evidence"])]
        for k in KS:
            hits_chapter[k] += bool(chapter_ranks and chapter_ranks[0] < k)
            hits_chunk[k] += bool(chunk_ranks and chunk_ranks[0] < k)
        per_question.append({"id": q["id"], "chapters": [p.chapter_num for p in passages],
                             "first_gold_chapter_rank": chapter_ranks[0] + 1 if chapter_ranks else None,
                             "first_evidence_rank": chunk_ranks[0] + 1 if chunk_ranks else None})
    n = len(questions)
    return {
        "mode": mode if not fusion_method else f"{mode}/{fusion_method}",
        **{f"chapter@{k}": round(hits_chapter[k] / n, 3) for k in KS},
        **{f"chunk@{k}": round(hits_chunk[k] / n, 3) for k in KS},
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "questions": per_question,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bench")
    parser.add_argument("--book", type=Path, default=CORPUS / "xiyouji.txt")
    parser.add_argument("--questions", type=Path, default=CORPUS / "xiyouji.questions.jsonl")
    parser.add_argument("--keyword-only", action="store_true", help="measure keyword search only (no vectors)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per question")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    from rag.config import Settings
    from rag.index import open_index

    settings = Settings(_env_file=None, data_dir=args.data_dir.resolve())
    index = open_index(settings)
    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    started = time.perf_counter()
    info = index.ingest(args.book, background=args.keyword_only, embed=not args.keyword_only)
    print(f"book {info.id} ready ({time.perf_counter() - started:.1f}s)", file=sys.stderr)

    runs: list[tuple[str, str | None]] = [("keyword", None)]
    if not args.keyword_only:
        runs += [("vector", None), ("hybrid", "rrf"), ("hybrid", "union"), ("hybrid", "weighted")]
    rows = [evaluate(index, info.id, questions, mode, method, args.repeat) for mode, method in runs]

    demo: dict[str, Any] = {}
    if not args.keyword_only and GUIDE.exists():
        guide = index.ingest(GUIDE, background=False)
        for mode, method in runs:
            if method:
                index.fusion_method = method
            passages = index.retrieve(DEMO_QUESTION, k=6, book_id=guide.id, mode=mode)
            ranks = [i + 1 for i, p in enumerate(passages) if "尸魔三戏唐三藏" in p.text]
            demo[f"{mode}/{method}" if method else mode] = ranks[0] if ranks else None
    index.close()

    header = ["mode", *[f"chapter@{k}" for k in KS], *[f"chunk@{k}" for k in KS], "p50_ms", "p95_ms"]
    print(f"{len(questions)} questions, k up to {max(KS)}, {info.chunks} chunks")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")
    if demo:
        print("\nDemo question on the sample guide: rank of the chunk with 第二十七回's title (k=6): "
              + ", ".join(f"{m}: {r}" for m, r in demo.items()))
    out = args.out or RESULTS / ("retrieval_keyword.json" if args.keyword_only else "retrieval.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "demo_rank": demo, "chunks": info.chunks,
                               "when": time.strftime("%Y-%m-%d %H:%M")}, ensure_ascii=False, indent=1),
                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
