"""Ingest memory benchmark (issue 24, item 4): peak RSS of ingesting a large TXT, by stage.

    python bench/ingest_memory.py                      # 50 MB Chinese-like and English-like TXT, keyword stage
    python bench/ingest_memory.py --mb 10 --lang en    # a smaller English-like one
    python bench/ingest_memory.py --embed-seconds 60   # then 60 s of embedding (a cheap hash embedder, real Chroma)
    python bench/ingest_memory.py --label before --out bench/results/ingest_memory.json

The books are generated (deterministic): Zipf-distributed CJK characters or pseudo-words in
sentences and paragraphs, a contents list, front matter and ~2,000 chapter headings ("第N回 ...",
"Chapter N"). Each ingest runs in a fresh process (``MAX_BOOK_MB=100``, ``embed=False`` for the
keyword stage: reading, chunking, chunks.jsonl, BM25), which reports ``ru_maxrss`` after each
progress stage, so the stage that raised the peak shows. With ``--embed-seconds`` it then embeds
with a hash embedder (no model) into an on-disk Chroma for that long and reports the peak again.
Results are merged into the JSON file under ``--label``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

CN_DIGITS = "零一二三四五六七八九"


def cn_number(n: int) -> str:
    """1..9999 in Chinese numerals (一百零八)."""
    units = ["", "十", "百", "千"]
    digits = [int(d) for d in str(n)]
    out, zero = "", False
    for i, d in enumerate(digits):
        place = len(digits) - 1 - i
        if d == 0:
            zero = True
            continue
        if zero and out:
            out += "零"
        zero = False
        out += ("" if d == 1 and place == 1 and not out else CN_DIGITS[d]) + units[place]
    return out


def _zipf_indices(rng: np.random.Generator, vocab: int, n: int) -> np.ndarray:
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    return rng.choice(vocab, size=n, p=p)


def make_book(path: Path, mb: float, lang: str, chapters: int = 2000, seed: int = 7) -> Path:
    """A generated book of about ``mb`` MB (UTF-8) with a contents list, front matter and chapters."""
    rng = np.random.default_rng(seed)
    target = int(mb * 1024 * 1024)
    if lang == "zh":
        alphabet = np.array([chr(c) for c in range(0x4E00, 0x4E00 + 3500)])
        titles = [f"第{cn_number(n)}回 {''.join(rng.choice(alphabet, 7))}" for n in range(1, chapters + 1)]
        per_chapter = target // 3 // chapters  # characters (3 bytes each)
        head = "《生成之书》\n作者：测试\n\n目录\n" + "\n".join(titles) + "\n\n"
        head += "这是一本为测量内存而生成的书，正文之前有一段没有标题的引言。" * 4 + "\n\n"
    else:
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        alphabet = np.array(["".join(rng.choice(letters, int(k))) for k in rng.integers(2, 10, 20000)])
        titles = [f"Chapter {n}" for n in range(1, chapters + 1)]
        per_chapter = target // chapters
        head = "Title: A Generated Book\nAuthor: Bench Writer\n\n" + "Contents\n" + "\n".join(titles) + "\n\n"
        head += "This book was generated to measure memory; an untitled preamble comes first. " * 4 + "\n\n"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(head)
        for title in titles:
            fh.write(f"\n{title}\n\n")
            written = 0
            while written < per_chapter:
                if lang == "zh":
                    n = int(rng.integers(60, 300))
                    chars = alphabet[_zipf_indices(rng, len(alphabet), n)]
                    cuts = np.sort(rng.choice(np.arange(6, n - 1), size=max(1, n // 18), replace=False))
                    parts = np.split(chars, cuts)
                    para = "".join("".join(p) + rng.choice(["，", "。", "。", "！", "？"]) for p in parts)
                else:
                    n = int(rng.integers(20, 80))
                    words = alphabet[_zipf_indices(rng, len(alphabet), n)]
                    cuts = np.sort(rng.choice(np.arange(4, n - 1), size=max(1, n // 12), replace=False))
                    para = " ".join(" ".join(p).capitalize() + rng.choice([".", ".", ",", "!", "?"])
                                    for p in np.split(words, cuts))
                fh.write(para + "\n")
                written += len(para)
    return path


CHILD = r"""
import json, os, resource, sys, threading, time
import numpy as np

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def rss():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

book, data_dir, embed_seconds, embedder_name = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
base = peak()
from rag.config import Settings
from rag.index import open_index

class HashEmbedder:
    key = "bench_hash"
    def _one(self, text):
        v = np.zeros(384, dtype=np.float32)
        for i in range(0, len(text) - 1, 3):
            v[hash(text[i:i + 2]) % 384] += 1.0
        n = float(np.linalg.norm(v)) or 1.0
        return v / n
    def embed_passages(self, texts):
        return np.stack([self._one(t) for t in texts])
    def embed_query(self, text):
        return self._one(text)

settings = Settings(_env_file=None, data_dir=data_dir, max_book_mb=100)
# "hash": no model (what the keyword stage and Chroma cost); "e5": the app's own embedder (the model's memory too)
index = open_index(settings, embedder=HashEmbedder() if embedder_name == "hash" else None)
stages, started = [], time.perf_counter()
last = {"stage": None}
def progress(stage, done, total, message):
    if stage != last["stage"] or done >= total:
        stages.append({"stage": stage, "done": done, "total": total, "at_s": round(time.perf_counter() - started, 2),
                       "rss_mb": round(rss(), 1), "peak_mb": round(peak(), 1)})
        last["stage"] = stage
imported = peak()
info = index.ingest(book, progress=progress, background=True, embed=embed_seconds > 0)
keyword_s = time.perf_counter() - started
keyword_peak = peak()
out = {"chars": info.chars, "chapters": info.chapters, "chunks": info.chunks, "peak_after_import_mb": round(imported, 1),
       "keyword_seconds": round(keyword_s, 1), "peak_keyword_mb": round(keyword_peak, 1), "stages": stages}
t0 = time.perf_counter()
hits = index.retrieve(info.title[:2] or "the", k=5, book_id=info.id, mode="keyword")
out["first_keyword_query_s"] = round(time.perf_counter() - t0, 2)
out["peak_after_first_query_mb"] = round(peak(), 1)
if embed_seconds > 0:
    index.wait_until_embedded(info.id, timeout=embed_seconds)
    out["embedded_chunks"] = index.book(info.id).embedded
    out["peak_embedding_mb"] = round(peak(), 1)
index.close()
out["peak_mb"] = round(peak(), 1)
print(json.dumps(out))
"""


def run_one(book: Path, embed_seconds: float, embedder: str = "hash") -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-mem-") as data_dir:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, str(book), data_dir, str(embed_seconds), embedder],
                              capture_output=True, text=True, cwd=ROOT, env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--lang", choices=["zh", "en", "both"], default="both")
    ap.add_argument("--embed-seconds", type=float, default=0.0)
    ap.add_argument("--embedder", choices=["hash", "e5"], default="hash",
                    help="what embeds during --embed-seconds: a hash (no model) or the app's e5")
    ap.add_argument("--label", default="run")
    ap.add_argument("--out", type=Path, default=RESULTS / "ingest_memory.json")
    ap.add_argument("--books", type=Path, default=None, help="folder to keep the generated books in (reused)")
    args = ap.parse_args()
    folder = args.books or Path(tempfile.mkdtemp(prefix="bench-books-"))
    folder.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Any] = {}
    for lang in (["zh", "en"] if args.lang == "both" else [args.lang]):
        book = folder / f"generated-{lang}-{args.mb:g}mb.txt"
        if not book.exists():
            make_book(book, args.mb, lang)
        result = run_one(book, args.embed_seconds, args.embedder)
        result["file_mb"] = round(book.stat().st_size / 1024 / 1024, 1)
        runs[lang] = result
        print(f"{args.label} {lang}: {result['file_mb']} MB, {result['chunks']} chunks, peak keyword stage "
              f"{result['peak_keyword_mb']} MB, peak {result['peak_mb']} MB, {result['keyword_seconds']} s")
        for s in result["stages"]:
            print(f"    {s['stage']:<9} {s['done']:>10}/{s['total']:<10} at {s['at_s']:>7} s  rss {s['rss_mb']:>7} MB  "
                  f"peak {s['peak_mb']:>7} MB")
    try:
        existing = json.loads(args.out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        existing = {}
    existing[args.label] = {"mb": args.mb, "embed_seconds": args.embed_seconds, "embedder": args.embedder, "when": time.strftime("%Y-%m-%d %H:%M"),
                            "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(existing, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
