"""The graph's own overhead per question, with an instant scripted model and fakes.

Runs each path many times and reports per-question wall time (p50/p95/mean) through
``run_turn`` (graph + checkpointer + event translation), i.e. everything but the model,
the index and the web. Target: <= 20 ms per question on the project's 2-core machine.

    python bench/graph_overhead.py [--n 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.agent.deps import Deps  # noqa: E402
from rag.agent.events import TurnFinished, run_turn  # noqa: E402
from rag.agent.graph import build_graph  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.schemas import Passage, SearchResult  # noqa: E402
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel  # noqa: E402

PASSAGES = [Passage(id=f"p{i}", text="白骨精三戏唐三藏。" * 40, book_title="导读", chapter_num=27,
                    chapter_title="第二十七回", score=1 - i / 10) for i in range(6)]
WEB = [SearchResult(title=f"r{i}", url=f"https://example.org/{i}", snippet="第7集" * 50, provider="fake")
       for i in range(8)]

PATHS = {
    "simple": ("simple", []),
    "book_enough": ("complex", [True]),
    "web_then_enough": ("complex", [False, True]),
    "partial_after_web": ("complex", [False, False]),
}


def responder(strategy: str, verdicts: list[bool]):
    state = {"i": 0}

    def reply(messages, *, schema):
        if schema == "RouteDecision":
            state["i"] = 0
            return {"reason": "bench", "strategy": strategy}
        if schema in ("Evaluation", "EvidenceJudgement"):
            verdict = verdicts[state["i"]]
            state["i"] += 1
            if schema == "EvidenceJudgement":  # evidence mode: a verbatim quote of passage [1], or not found
                part = ({"part": "白骨精三戏唐三藏", "answer": "白骨精", "source": 1, "quote": "白骨精三戏唐三藏"}
                        if verdict else {"part": "第几集", "answer": "not found", "source": None, "quote": "not found"})
                return {"reason": "bench", "parts": [part], "enough": verdict, "web_query": None, "confidence": 0.9}
            return {"reason": "bench", "enough": verdict, "missing": [] if verdict else ["x"],
                    "web_query": None if verdict else "q", "confidence": 0.9}
        return "答案 [1]，第7集 [7]。" * 20

    return reply


def book_for(path: str, passages: list[Passage]) -> FakeRetriever:
    """The book of a path. On the simple path the book must not use the question's words: a
    question that names what the book talks about is sent to the book whatever the router says."""
    return FakeRetriever([] if path == "simple" else passages)


def show_paths(settings: Settings) -> None:
    """The node events of one question on each path (for the docs and the issue note)."""
    from rag.agent.events import NodeFinished, NodeStarted, Token
    from rag.cli import describe_update
    from rag.errors import SearchError

    cases = [(name, ScriptedChatModel(responder=responder(strategy, verdicts), chunk_chars=8),
              book_for(name, PASSAGES[:2]), FakeWebSearch(WEB[:2])) for name, (strategy, verdicts) in PATHS.items()]
    cases.append(("fallback (nothing in the book, search down)",
                  ScriptedChatModel(responder=responder("complex", []), chunk_chars=8),
                  FakeRetriever([]), FakeWebSearch(error=SearchError("bocha", "HTTP 503"))))
    cases.append(("retrieval_only (no model)", None, FakeRetriever(PASSAGES[:2]), None))
    for name, model, retriever, search in cases:
        graph = build_graph(Deps(settings=settings, llm=model, retriever=retriever, web_search=search))
        print(f"== {name}")
        tokens = 0
        for event in run_turn(graph, "三打白骨精是第几回？", thread_id=str(uuid.uuid4())):
            if isinstance(event, NodeStarted):
                print(f"  start  {event.node}")
            elif isinstance(event, Token):
                tokens += 1
            elif isinstance(event, NodeFinished):
                if tokens:
                    print(f"  tokens x{tokens}")
                    tokens = 0
                print(f"  finish {event.node:<15} {describe_update(event.node, event.update)[:110]}")
            else:
                print(f"  {type(event).__name__}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--show", action="store_true", help="print each path's node events once and exit")
    args = parser.parse_args()
    settings = Settings(_env_file=None, search_provider="fake")
    if args.show:
        show_paths(settings)
        return
    print(f"{'path':<20} {'conversation':<13} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}  (n={args.n})")
    for name, (strategy, verdicts) in PATHS.items():
        for conversation in ("new thread", "follow-ups"):
            model = ScriptedChatModel(responder=responder(strategy, verdicts), chunk_chars=8)
            graph = build_graph(Deps(settings=settings, llm=model, retriever=book_for(name, PASSAGES),
                                     web_search=FakeWebSearch(WEB)))
            thread = str(uuid.uuid4())
            for _ in range(5):  # warm-up
                list(run_turn(graph, "三打白骨精是第几回？", thread_id=str(uuid.uuid4())))
            times = []
            for _ in range(args.n):
                # "follow-ups": one long conversation, so every question is rewritten with the history
                thread_id = str(uuid.uuid4()) if conversation == "new thread" else thread
                t0 = time.perf_counter()
                events = list(run_turn(graph, "三打白骨精是第几回？", thread_id=thread_id))
                times.append((time.perf_counter() - t0) * 1000)
                assert isinstance(events[-1], TurnFinished)
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            print(f"{name:<20} {conversation:<13} {statistics.median(times):8.2f} {p95:8.2f} "
                  f"{statistics.fmean(times):8.2f}")


if __name__ == "__main__":
    main()
