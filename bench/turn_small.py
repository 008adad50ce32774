"""Seconds per node of one turn on a small local model, full vs compact turn profile (issue 23, item 4).

Serves a GGUF model on loopback with ``xllamacpp`` (a child process: 2 threads, OMP_WAIT_POLICY=PASSIVE,
nice 5), indexes the sample guide into a temporary DATA_DIR, and runs ``python -m rag ask`` for each
question under each ``TURN_PROFILE``, parsing the CLI's trace lines (``[node  12.34s] ...``).
Results are written after every run, merged into ``--out`` by (profile, question).

    python bench/turn_small.py --model /work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        --profiles full,compact [--questions 3] [--out bench/results/turn_small.json]

``serve`` (used by the script itself) runs the server in the foreground; ``table`` prints ``--out`` as Markdown.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "assets" / "xiyouji-guide.epub"
QUESTIONS = [
    "孙悟空的金箍棒有多重？",
    "孙悟空三打白骨精发生在原著第几回？",
    "猪八戒原来是天上的什么神？",
]
MODEL_ALIAS = "qwen2.5-coder-1.5b"
NODE_LINE = re.compile(r"^\[(\w+)\s+([\d.]+)s\]")
TOTAL_LINE = re.compile(r"^\[total ([\d.]+)s\]")
NOTICE_LINE = re.compile(r"^\[(info|warning|error)\] (\w+): (.*)$")

logger = logging.getLogger("turn_small")


def serve(model: str, port: int, threads: int, ctx: int) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.model_alias = {MODEL_ALIAS}
    params.n_predict = 2048
    server = xllamacpp.Server(params)
    logger.info("serving %s on %s", Path(model).name, server.listening_address)
    while True:  # the server runs in its own threads; this process only keeps it alive
        time.sleep(3600)


def wait_ready(port: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise SystemExit(f"the model server on port {port} did not come up in {timeout:.0f} s")


def parse_trace(stderr: str) -> dict[str, Any]:
    """Seconds per node (summed when a node runs twice), the total and the notices, from ``ask``'s stderr."""
    nodes: dict[str, float] = {}
    order: list[str] = []
    total = None
    notices: list[str] = []
    for line in stderr.splitlines():
        if m := TOTAL_LINE.match(line):
            total = float(m.group(1))
        elif m := NODE_LINE.match(line):
            nodes[m.group(1)] = round(nodes.get(m.group(1), 0.0) + float(m.group(2)), 2)
            order.append(m.group(1))
        elif m := NOTICE_LINE.match(line):
            notices.append(f"{m.group(1)} {m.group(2)}: {m.group(3)[:200]}")
    return {"nodes": nodes, "order": order, "total_s": total, "notices": notices}


PROMPT_EVAL = re.compile(r"task (\d+) \| prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
GEN_EVAL = re.compile(r"task (\d+) \|\s+eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def server_calls(log: str) -> list[dict[str, Any]]:
    """The model calls in a piece of the server's log: prompt tokens read (those not taken from the
    prefix cache) and tokens generated, with their seconds."""
    calls: dict[str, dict[str, Any]] = {}
    for m in PROMPT_EVAL.finditer(log):
        calls[m.group(1)] = {"prompt_tokens": int(m.group(3)), "prompt_s": round(float(m.group(2)) / 1000, 1)}
    for m in GEN_EVAL.finditer(log):
        calls.setdefault(m.group(1), {}).update(gen_tokens=int(m.group(3)), gen_s=round(float(m.group(2)) / 1000, 1))
    return list(calls.values())


def ask(question: str, profile: str, env: dict[str, str], timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-m", "rag", "ask", question, "--no-web"], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**env, "TURN_PROFILE": profile})
    trace = parse_trace(proc.stderr)
    return {"profile": profile, "question": question, "exit_code": proc.returncode,
            "wall_s": round(time.monotonic() - started, 1), **trace,
            "answer": proc.stdout.strip()[:600], "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2)}


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def save(out: Path, runs: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    old: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    kept = {(r["profile"], r["question"]): r for r in old.get("runs", [])}
    kept.update({(r["profile"], r["question"]): r for r in runs})
    data = {**old, **meta, "runs": sorted(kept.values(), key=lambda r: (r["question"], r["profile"]))}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


NODE_COLUMNS = ["route_question", "retrieve_local", "evaluate", "generate", "verify_answer", "direct_answer"]


def table(data: dict[str, Any]) -> str:
    """The runs as a Markdown table: seconds per node, the total, model calls and prompt tokens read."""
    used = [n for n in NODE_COLUMNS if any(n in r["nodes"] for r in data["runs"])]
    head = ["question", "profile", *used, "total s", "model calls (cancelled)", "prompt tokens read", "load", "answer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in data["runs"]:
        calls = r.get("model_calls")
        read = "+".join(str(c.get("prompt_tokens", "?")) for c in calls) if calls else "-"
        done = "complete" if r["exit_code"] == 0 else f"none (exit {r['exit_code']})"
        cells = [r["question"], r["profile"], *(f"{r['nodes'][n]:.1f}" if n in r["nodes"] else "-" for n in used),
                 f"{r['total_s']:.0f}" if r["total_s"] is not None else "-",
                 f"{len(calls or [])} ({r.get('cancelled_calls', 0)})", read,
                 f"{r['load_before']:.0f}–{r['load_after']:.0f}", done]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="run", choices=["run", "serve", "table"])
    parser.add_argument("--model", default="/work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--profiles", default="full,compact")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--data-dir", help="a DATA_DIR that already holds the sample guide (default: a new one)")
    parser.add_argument("--turn-timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "turn_small.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.command == "serve":
        serve(args.model, args.port, args.threads, args.ctx)
        return 0
    if args.command == "table":
        print(table(json.loads(args.out.read_text(encoding="utf-8"))))
        return 0

    base = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="turn_small_"))
    env = {**base, "DATA_DIR": str(data_dir), "EVAL_LOG_ENABLED": "false", "SEARCH_PROVIDER": "none",
           "OLLAMA_AUTODETECT": "false", "EMBED_THREADS": "1"}
    if not args.data_dir:
        logger.info("indexing the sample guide into %s", data_dir)
        subprocess.run([sys.executable, "-m", "rag", "ingest", str(GUIDE)], cwd=ROOT, env=env, check=True)
    server_log = data_dir / "server.log"
    log_file = server_log.open("w", encoding="utf-8")
    server = subprocess.Popen(["nice", "-n", "5", sys.executable, __file__, "serve", "--model", args.model,
                               "--port", str(args.port), "--threads", str(args.threads), "--ctx", str(args.ctx)],
                              env=base, stdout=log_file, stderr=subprocess.STDOUT)
    runs: list[dict[str, Any]] = []
    meta = {"model": Path(args.model).name, "threads": args.threads, "n_ctx": args.ctx, "commit": commit(),
            "settings": "LLM_STRUCTURED_METHOD=json_schema LLM_TIMEOUT=300 TURN_TIMEOUT=600, --no-web",
            "cpus": os.cpu_count()}
    try:
        started = time.monotonic()
        wait_ready(args.port)
        meta["server_ready_s"] = round(time.monotonic() - started, 1)
        env.update(LLM_BASE_URL=f"http://127.0.0.1:{args.port}/v1", LLM_MODEL=MODEL_ALIAS, LLM_API_KEY="local",
                   LLM_STRUCTURED_METHOD="json_schema", LLM_TIMEOUT="300", TURN_TIMEOUT=f"{args.turn_timeout:g}",
                   STREAM_IDLE_TIMEOUT="120")
        for question in QUESTIONS[:args.questions]:
            for profile in args.profiles.split(","):
                logger.info("%s | %s", profile, question)
                offset = server_log.stat().st_size
                run = ask(question, profile, env, timeout=args.turn_timeout + 120)
                time.sleep(1)  # the server logs a call's timings as it ends
                with server_log.open(encoding="utf-8", errors="replace") as log:
                    log.seek(offset)
                    run["model_calls"] = server_calls(log.read())
                logger.info("  %s total %s s, exit %s", run["nodes"], run["total_s"], run["exit_code"])
                runs.append(run)
                save(args.out, runs, meta)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
