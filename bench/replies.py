"""Prompts for a capable model to answer, and its replies packed as a fixture (rag/eval/replay.py).

    python bench/replies.py render --cases FILE [--cases FILE ...] [--call CALL ...] --out PROMPTS.jsonl
        # the prompts the project renders for each case: the judge in evidence and verdict mode,
        # the router, and (answerable cases) the answer writer; one {case, call, messages} per line.
        # --call keeps only those calls (judge-evidence, judge-verdict, route, answer).
        # They hold the book's text: keep them out of the repository.
    python bench/replies.py pack --cases FILE [...] --header "how the replies were made" RAW.jsonl [...] --out FIXTURE
        # raw replies {case, call, reply} (written by whoever played the model) as a fixture:
        # novel text stored as span references, a header saying how the replies were made.
    python bench/replies.py pack --retrieval-cases FILE [...] --header "..." RAW.jsonl --out FIXTURE
        # the same for the query rewriter's replies to retrieval cases (bench/retrieval.py --render-rewrites)

    The calls about one piece of an answer (the sentence checker's verify call, the relevance check):
    ``python -m rag eval sentences|checks|judge ... --replay FIXTURE --missed PROMPTS.jsonl`` writes the
    prompts the fixture has no reply for ({case, call, sentence, messages}); pack keeps each reply's
    "sentence": the replay server answers such a call by case and what it is about.

    python bench/replies.py ask PROMPTS.jsonl --url http://127.0.0.1:8023/v1 --call answer --out RAW.jsonl
        # a real model's raw replies to rendered prompts (one call at a time, temperature 0), for ``pack``

The replies are then replayed through the real HTTP path: ``python -m rag eval judge --replay FIXTURE``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rag.agent.context import answer_messages, format_book_context, route_messages  # noqa: E402
from rag.agent.judge import judge_messages  # noqa: E402
from rag.eval.cases import ENOUGH_KINDS, Case, jsonl_records, load_cases  # noqa: E402
from rag.eval.replay import fixture_record, question_cases, write_fixture  # noqa: E402
from rag.lang import detect_lang  # noqa: E402

MAX_CHARS = 1200


def _as_dicts(messages: list[Any]) -> list[dict[str, str]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[m.type], "content": str(m.content)} for m in messages]


CALLS = ("judge-evidence", "judge-verdict", "route", "answer")


def render(cases: list[Case], only: list[str] | None = None) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        context = format_book_context(case.passages(), MAX_CHARS)
        calls: dict[str, list[Any]] = {
            "judge-evidence": judge_messages(case.question, context, mode="evidence"),
            "judge-verdict": judge_messages(case.question, context, mode="verdict"),
            "route": route_messages(case.question),
        }
        if case.kind in ENOUGH_KINDS:
            calls["answer"] = answer_messages(case.question, detect_lang(case.question), context)
        for call, messages in calls.items():
            if only and call not in only:
                continue
            rows.append({"case": case.id, "call": call, "structured": call != "answer",
                         "messages": _as_dicts(messages)})
    return rows


def ask(args: argparse.Namespace) -> int:
    """Each rendered prompt of the chosen calls sent to ``--url`` (temperature 0), its reply text
    appended to ``--out`` as ``{case, call, reply}`` as it comes (a slow model may take an hour)."""
    import httpx

    rows = [json.loads(line) for line in Path(args.prompts).read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if not args.call or r["call"] in args.call]
    out = Path(args.out)
    done = {(r["case"], r["call"]) for _, r in jsonl_records(out)} if out.is_file() else set()
    with httpx.Client(base_url=args.url.rstrip("/"), timeout=900) as client, out.open("a", encoding="utf-8") as fh:
        for row in rows:
            if (row["case"], row["call"]) in done:
                continue
            response = client.post("/chat/completions", json={"model": args.model, "messages": row["messages"],
                                                             "temperature": 0, "max_tokens": args.max_tokens})
            response.raise_for_status()
            reply = response.json()["choices"][0]["message"].get("content") or ""
            fh.write(json.dumps({"case": row["case"], "call": row["call"], "reply": reply}, ensure_ascii=False) + "\n")
            fh.flush()
            print(f"{row['case']} {row['call']}: {len(reply)} chars", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render")
    r.add_argument("--cases", action="append", required=True)
    r.add_argument("--call", action="append", choices=CALLS, help="only these calls (default: all)")
    r.add_argument("--out", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--cases", action="append", default=[])
    p.add_argument("--retrieval-cases", action="append", default=[], help="retrieval dev sets (rewrite replies)")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--out", required=True)
    p.add_argument("raw", nargs="+")
    a = sub.add_parser("ask")
    a.add_argument("prompts")
    a.add_argument("--url", required=True, help="an OpenAI-compatible base URL")
    a.add_argument("--model", default="model")
    a.add_argument("--call", action="append", help="only these calls (default: all)")
    a.add_argument("--max-tokens", type=int, default=1024)
    a.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "ask":
        return ask(args)
    cases = [c for f in args.cases for c in load_cases(f)]
    if args.command == "pack" and args.retrieval_cases:
        from rag.eval.retrieval_cases import load_cases as load_retrieval_cases

        cases += question_cases(c for f in args.retrieval_cases for c in load_retrieval_cases(f)[0])
    if args.command == "render":
        rows = render(cases, args.call)
        Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{len(rows)} prompts for {len(cases)} cases -> {args.out}")
        return 0
    by_id = {c.id: c for c in cases}
    records, seen = [], set()
    for raw in args.raw:
        for _, row in jsonl_records(Path(raw)):
            case = by_id.get(str(row.get("case")))
            sentence = row.get("sentence")
            if case is None or (case.id, row["call"], sentence) in seen:
                continue
            seen.add((case.id, row["call"], sentence))
            reply = row["reply"]
            if isinstance(reply, str) and row["call"] not in ("answer", "query-rewrite", "rewrite", "direct", "relevance"):
                reply = json.loads(reply, strict=False)
            records.append(fixture_record(case, row["call"], reply, sentence=sentence))
    write_fixture(args.out, args.header, records)
    print(f"{len(records)} replies -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
