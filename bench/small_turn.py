"""The small-model turn, end to end on real books: per question, whether the right fact is in the
answer or its quote, wrong statements shown as supported, an honest "not confirmed", seconds per node
and prompt tokens read; idle, or with a second CPU-bound process (``--load``).

The model is served separately (``bench/serve_llm.py``; the 1.5B stand-in, bench/README.md) and its
log file given as ``--server-log`` for the prompt tokens. The books are ingested once into
``--data-dir`` (``python -m rag ingest``); the questions are judge cases (``assets/eval/dev/*.jsonl``:
question, label_enough, answer_strings), each run through the real graph (``run_turn``) on the
book the case names, web search off.

    python bench/small_turn.py --data-dir /work/cache/books --base-url http://127.0.0.1:8023/v1 \
        --server-log /tmp/serve.log --cases assets/eval/dev/nahan.heldout.jsonl \
        --profile small [--load] [--limit 10] --out bench/results/small_turn.json

``table FILE`` prints a result file as Markdown.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import re
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

logger = logging.getLogger("small_turn")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
LATIN_RUN = re.compile(r"[A-Za-z][A-Za-z_ ]{3,}")


def burn(stop: Any) -> None:
    """A CPU-bound process (the second load of the ``--load`` runs)."""
    x = 0
    while not stop.is_set():
        for i in range(200_000):
            x = (x * 31 + i) % 1_000_003


def prompt_tokens(log: Path | None, offset: int) -> tuple[list[int], int]:
    """Prompt tokens read per model call since ``offset`` of the server's log, and the new offset."""
    if log is None or not log.exists():
        return [], offset
    with log.open("rb") as fh:
        fh.seek(offset)
        text = fh.read().decode("utf-8", "replace")
        end = fh.tell()
    return [int(m.group(2)) for m in PROMPT_EVAL.finditer(text)], end


def english_outside_text(values: dict[str, Any]) -> list[str]:
    """Latin words in what the Chinese page shows of the answer outside quotes and source text: the
    answer's own lines (not its quotes) after removing book and web text."""
    answer = values.get("answer") or ""
    raw_from = values.get("unprocessed_from")
    own = answer if raw_from is None else answer[:raw_from]
    own = re.sub(r"“[^”]*”|\"[^\"]*\"|\[\d+\]", "", own)
    return LATIN_RUN.findall(own)


def looped(answer: str) -> bool:
    """A clause of 6+ characters written three times in a row."""
    return bool(re.search(r"(.{6,}?)\1\1", answer))


def judge_case(case: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    from rag.lang import detect_lang

    answer = values.get("answer") or ""
    checks = values.get("answer_checks") or []
    evaluation = (values.get("evaluations") or [None])[-1]
    strings = [s for s in case.get("answer_strings") or [] if s]
    raw_from = values.get("unprocessed_from")
    right = any(s in answer for s in strings)
    supported = [c for c in checks if c.status == "supported"]
    # a sentence marked supported is wrong when the case has no answer in the book, or it gives none
    # of the case's answer strings and is not a verbatim quote line of the answer
    quote_marks = ("原文：", "The book:")
    def gives_answer(text: str) -> bool:
        core = re.sub(r"\[\d+\]|[。.，,：:“”\"\s]", "", text)
        return bool(core) and any(s in core or core in s for s in strings)

    # a question part of which lies outside the book (kind "half"): its in-book part may be answered
    # (reviewed by hand); wrong is an answer to all of it
    if case.get("kind") == "half":
        wrong = [c.text for c in supported] if evaluation is not None and evaluation.enough else []
    else:
        wrong = [c.text for c in supported if not (gives_answer(c.text) or c.text.startswith(quote_marks))]
    parts = [{"answer": p.answer, "quote": p.quote, "status": p.status, "detail": str(p.detail)}
             for p in (evaluation.parts if evaluation else [])]
    return {
        "parts": parts,
        "right_fact": right if case["label_enough"] else None,
        "enough": bool(evaluation and evaluation.enough),
        "false_enough": bool(evaluation and evaluation.enough and not case["label_enough"]),
        "supported": [c.text for c in supported],
        "wrong_supported": wrong,
        "not_confirmed_said": (values.get("answer_mode") == "partial"),
        "raw_dump": raw_from is not None and len(answer) - raw_from > 1200,
        "loop": looped(answer),
        # the answer follows the question's language: an English question is answered in English
        "english_on_zh_page": english_outside_text(values) if detect_lang(case["question"]) == "zh" else [],
    }


def run_case(graph_for: Any, case: dict[str, Any], book_id: str, log: Path | None, offset: int) -> tuple[dict[str, Any], int]:
    from rag.agent.events import NodeFinished, TurnFailed, TurnFinished, run_turn

    nodes: dict[str, float] = {}
    started = time.monotonic()
    values: dict[str, Any] = {}
    failed = None
    for event in run_turn(graph_for(), case["question"], thread_id=str(uuid.uuid4()), book_id=book_id):
        if isinstance(event, NodeFinished):
            nodes[event.node] = round(nodes.get(event.node, 0.0) + event.duration_s, 2)
        elif isinstance(event, TurnFinished):
            values = event.values
        elif isinstance(event, TurnFailed):
            failed = str(event.message)
    total = round(time.monotonic() - started, 2)
    tokens, offset = prompt_tokens(log, offset)
    row = {"id": case["id"], "question": case["question"], "label_enough": case["label_enough"],
           "answer_strings": case.get("answer_strings") or [], "seconds": total, "nodes": nodes,
           "prompt_tokens": tokens, "answer": values.get("answer"), "failed": failed,
           "load1": round(os.getloadavg()[0], 1)}
    row.update(judge_case(case, values) if values else {"right_fact": False if case["label_enough"] else None})
    return row, offset


def read_cases(paths: list[str]) -> list[dict[str, Any]]:
    """Judge cases as whole-book questions: a judge case's label says whether its own passages answer
    it, but here the whole book is searched, so a question is answerable unless part of it lies
    outside the book (kind "half": a TV series, a first edition's year)."""
    cases = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                case = json.loads(line)
                case["label_enough"] = case.get("kind") != "half"
                cases.append(case)
    return cases


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["label_enough"]]
    unanswerable = [r for r in rows if not r["label_enough"]]
    seconds = [r["seconds"] for r in rows]
    return {
        "questions": len(rows),
        "p50_s": round(statistics.median(seconds), 1) if seconds else None,
        "max_s": max(seconds) if seconds else None,
        "over_120_s": sum(s > 120 for s in seconds),
        "right_fact": f"{sum(bool(r.get('right_fact')) for r in answerable)}/{len(answerable)}",
        "wrong_supported": sum(len(r.get("wrong_supported") or []) for r in rows),
        "false_enough": f"{sum(bool(r.get('false_enough')) for r in unanswerable)}/{len(unanswerable)}",
        "not_confirmed_said_when_not_enough": f"{sum(bool(r.get('not_confirmed_said')) for r in rows if not r.get('enough'))}"
                                              f"/{sum(not r.get('enough') for r in rows)}",
        "loops": sum(bool(r.get("loop")) for r in rows),
        "raw_dumps": sum(bool(r.get("raw_dump")) for r in rows),
        "english_on_zh_page": sum(bool(r.get("english_on_zh_page")) for r in rows),
        # tokens the server read per call, not counting what its prompt cache already held
        "prompt_tokens_read_p50": statistics.median([t for r in rows for t in r["prompt_tokens"]] or [0]),
        "failed": sum(bool(r.get("failed")) for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    table = sub.add_parser("table")
    table.add_argument("file")
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--base-url", default="http://127.0.0.1:8023/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--server-log", type=Path)
    parser.add_argument("--cases", nargs="+", default=[])
    parser.add_argument("--profile", default="small", choices=["small", "compact", "full"])
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--load", action="store_true", help="run a CPU-bound process beside the turns")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "small_turn.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.cmd == "table":
        print_table(json.loads(Path(args.file).read_text(encoding="utf-8")))
        return 0
    os.environ.update(DATA_DIR=str(args.data_dir), LLM_BASE_URL=args.base_url, LLM_API_KEY="sk-local",
                      LLM_MODEL=args.model, LLM_STRUCTURED_METHOD="json_schema", LLM_TIMEOUT="300",
                      TURN_TIMEOUT="300", TURN_PROFILE=args.profile, SEARCH_PROVIDER="none")
    from rag.agent.graph import build_graph
    from rag.agent.wiring import make_deps
    from rag.config import load_settings
    from rag.index.store import open_index

    settings = load_settings()
    index = open_index(settings)
    titles = {b.title: b.id for b in index.books()}
    deps = make_deps(settings, index=index)

    def graph_for() -> Any:
        return build_graph(deps)

    cases = read_cases(args.cases)
    if args.limit:
        cases = cases[:args.limit]
    stop = multiprocessing.Event()
    burner = multiprocessing.Process(target=burn, args=(stop,), daemon=True) if args.load else None
    if burner is not None:
        burner.start()
    offset = args.server_log.stat().st_size if args.server_log and args.server_log.exists() else 0
    rows = []
    try:
        for case in cases:
            book_id = titles.get(case.get("book", ""))
            if book_id is None:
                logger.warning("%s: book %s not ingested, skipped", case["id"], case.get("book"))
                continue
            row, offset = run_case(graph_for, case, book_id, args.server_log, offset)
            row.update(profile=args.profile, load=args.load)
            rows.append(row)
            logger.info("%s %.1fs right=%s enough=%s wrong=%s", row["id"], row["seconds"], row.get("right_fact"),
                        row.get("enough"), row.get("wrong_supported"))
            result = {"profile": args.profile, "load": args.load, "summary": summary(rows), "rows": rows}
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    finally:
        stop.set()
        if burner is not None:
            burner.join(5)
    print(json.dumps(summary(rows), ensure_ascii=False, indent=1))
    return 0


def print_table(result: dict[str, Any]) -> None:
    print("| id | s | nodes | prompt tokens | enough | right fact | wrong ✓ | answer |")
    print("|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        nodes = ", ".join(f"{k} {v:g}" for k, v in r["nodes"].items() if v >= 0.5)
        answer = (r.get("answer") or "").replace("\n", " ⏎ ").replace("|", "/")[:80]
        print(f"| {r['id']} | {r['seconds']:.0f} | {nodes} | {'+'.join(map(str, r['prompt_tokens']))} | "
              f"{r.get('enough')} | {r.get('right_fact')} | {len(r.get('wrong_supported') or [])} | {answer} |")


if __name__ == "__main__":
    raise SystemExit(main())
