"""The embedded llama.cpp runtime (``rag.local``): load time, how long the load stops Python's
other threads, memory, speed, and one structured (JSON-schema) call through the project's client.

    python bench/local_runtime.py                       # the tiny generated test model
    python bench/local_runtime.py --model /work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python bench/local_runtime.py --model ... --repack  # let llama.cpp repack the weights

Prints one JSON object. Figures depend on the machine's load: say what it was (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import httpx  # noqa: E402
from pydantic import BaseModel, Field, SecretStr  # noqa: E402

from rag.config import Settings  # noqa: E402
from rag.llm import judge_model, make_chat_model, structured_invoke  # noqa: E402
from rag.local.runtime import LocalRuntime  # noqa: E402

logger = logging.getLogger("bench.local_runtime")

PASSAGE = ("悟空道：“老孙的金箍棒，乃是天河定底神珍，重一万三千五百斤。”那龙王也说："
           "这块铁是大禹治水时定江海浅深的一个定子。")


class Judgement(BaseModel):
    reason: str = Field(max_length=120, description="one short sentence")
    enough: bool
    missing: Literal["nothing", "some", "everything"]


def _rss_mb() -> float | None:
    try:
        for line in Path(f"/proc/{os.getpid()}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _timed_start(rt: LocalRuntime) -> tuple[float, float]:
    """(seconds to a listening server, longest stretch another Python thread could not run)."""
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    started = time.perf_counter()
    rt.start(timeout=600)
    loaded = time.perf_counter() - started
    done.set()
    ticker.join()
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)] or [loaded]
    return loaded, max(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the tiny generated test model)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--repack", action="store_true", help="let llama.cpp repack weights (slower load)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from rag.testing.tiny_gguf import write_tiny_gguf

            t0 = time.perf_counter()
            model = write_tiny_gguf(Path(tmp) / "tiny.gguf")
            written = time.perf_counter() - t0
        else:
            written = None
        rss_before = _rss_mb()
        rt = LocalRuntime(model, threads=args.threads, ctx=args.ctx, repack=args.repack)
        load_s, longest_freeze_s = _timed_start(rt)
        result: dict[str, Any] = {
            "model": model.name, "size_mb": round(model.stat().st_size / 2**20, 1), "threads": args.threads,
            "ctx": args.ctx, "repack": args.repack, "write_s": None if written is None else round(written, 3),
            "load_s": round(load_s, 2), "longest_python_freeze_s": round(longest_freeze_s, 2),
            "rss_mb": _rss_mb(), "rss_before_mb": rss_before, "loadavg": os.getloadavg()[0],
        }
        try:
            body = {"model": rt.alias, "max_tokens": 48, "temperature": 0,
                    "messages": [{"role": "user", "content": "用一句话介绍西游记。"}]}
            reply = httpx.post(f"{rt.base_url}/chat/completions", json=body, timeout=600,
                               headers={"Authorization": f"Bearer {rt.api_key}"}).json()
            timings = reply.get("timings", {})
            result["prompt_tok_s"] = round(float(timings.get("prompt_per_second", 0)), 1)
            result["gen_tok_s"] = round(float(timings.get("predicted_per_second", 0)), 1)

            settings = Settings(_env_file=None, llm_base_url=rt.base_url,  # type: ignore[call-arg]
                                llm_api_key=SecretStr(rt.api_key), llm_model=rt.alias, llm_max_tokens=200,
                                llm_timeout=600, llm_max_retries=0)
            judge = judge_model(make_chat_model(settings))
            messages = [("system", "Decide whether the passage answers the question. Reply in JSON."),
                        ("user", f"Passage: {PASSAGE}\nQuestion: 孙悟空的金箍棒有多重？")]
            t0 = time.perf_counter()
            try:
                verdict = structured_invoke(judge, Judgement, messages, "json_schema")
                result["structured"] = verdict.model_dump()
            except Exception as exc:  # noqa: BLE001 - reported as a figure
                result["structured_error"] = str(exc)[:200]
            result["structured_s"] = round(time.perf_counter() - t0, 2)
        finally:
            t0 = time.perf_counter()
            rt.stop()
            result["stop_s"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
