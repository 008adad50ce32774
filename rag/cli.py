"""Command line: ``python -m rag ask|ingest|books|search|eval ...``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rag.agent.events import NodeFinished, NodeUpdate, Token, TurnFailed, TurnFinished, run_turn
from rag.agent.names import (
    ANSWER_NODES,
    DIRECT_ANSWER,
    EVALUATE,
    GENERATE,
    RETRIEVAL_ONLY,
    RETRIEVE,
    ROUTE,
    VERIFY,
    WEB_SEARCH,
)
from rag.config import Settings, load_settings
from rag.errors import ConfigError, RagError, check_question, filesystem_problem
from rag.i18n import Msg, t, text
from rag.index.cli import terminal_safe
from rag.index.resolve import BOOK_HELP
from rag.scope import Scope, chapter_arg, chapter_range_arg

logger = logging.getLogger(__name__)


def describe_update(node: str, update: NodeUpdate | Mapping[str, Any]) -> str:
    """One readable line for a finished node (the CLI's trace), from what the node added."""
    if not isinstance(update, NodeUpdate):
        update = NodeUpdate.of(update)
    if node == ROUTE:
        route = update.route
        text = f"{route.strategy}: {route.reason}" if route else "?"
        standalone, question = update.standalone_question, update.asked
        if standalone and question and standalone != question:
            text += f" | rewritten: {standalone}"
        return text
    if node in (RETRIEVE, RETRIEVAL_ONLY):
        passages = update.passages or ()
        hits = ", ".join(f"{p.label()} ({p.score:.3f})" for p in passages[:4])
        return f"{len(passages)} passages" + (f": {hits}" if hits else "")
    if node == EVALUATE:
        if not update.evaluations:
            return "?"
        last = update.evaluations[-1]
        data = last.model_dump(exclude={"parts"})
        lines = [json.dumps(data, ensure_ascii=False)]
        lines += [f"    {PART_MARKS[p.status]} {p.part} -> {p.answer or '-'}"
                  + (f" [{p.matched_source}] \"{p.quote}\"" if p.status == "verified" else f" ({p.detail})")
                  for p in last.parts]
        return "\n".join(lines)
    if node == VERIFY:
        return describe_checks(update.answer_checks or ())
    if node == WEB_SEARCH:
        if not update.web_rounds:
            return "?"
        last_round = update.web_rounds[-1]
        if last_round["error"]:
            return f"query {last_round['query']!r} failed: {last_round['error']}"
        notes = f" [{'; '.join(str(n) for n in last_round['notes'])}]" if last_round["notes"] else ""
        return f"{last_round['provider']}: {len(last_round['results'])} results for {last_round['query']!r}{notes}"
    if node in ANSWER_NODES:
        return f"mode={update.answer_mode or '?'}"
    return ""


PART_MARKS = {"verified": "[verified]  ", "undecided": "[undecided] ", "unverified": "[unverified]",
              "not_found": "[not found] "}
SENTENCE_MARKS = {"supported": "ok", "unsupported": "UNSUPPORTED", "uncited": "UNCITED", "no_claim": "-",
                  "not_checked": "NOT CHECKED"}


def describe_checks(checks: Sequence[Any]) -> str:
    """The answer's sentence checks: a summary, then each sentence that states something, marked."""
    claims = [c for c in checks if c.status != "no_claim"]
    supported = sum(1 for c in claims if c.status == "supported")
    lines = [f"{supported} of {len(claims)} sentences supported by their sources"]
    for c in claims:
        where = f" ({c.origin})" if c.origin else ""
        lines.append(f"    {SENTENCE_MARKS[c.status]:<11}{where} {c.text[:80]}"
                     + ("" if c.status == "supported" else f"  <- {c.reason}"))
    return "\n".join(lines)


#: ``ask``'s exit code when the turn finished without a complete answer: the model failed, returned
#: nothing, or was cut short (TURN_TIMEOUT, STREAM_IDLE_TIMEOUT); the sources were printed instead.
#: (1: the turn itself failed; 2: bad configuration or an unusable DATA_DIR.)
EXIT_NO_ANSWER = 3


def answer_complete(values: dict[str, Any]) -> bool:
    """Whether the node that wrote the answer reported no error (an empty or cut-short answer, or a
    failed model call, is an error notice of generate or direct_answer)."""
    return not any(n["level"] == "error" and n["node"] in (GENERATE, DIRECT_ANSWER)
                   for n in values.get("notices") or [])


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "no_web", False):
        overrides["search_provider"] = "none"
    if getattr(args, "web_rounds", None) is not None:
        overrides["max_web_rounds"] = args.web_rounds
    return load_settings(**overrides)


def _ask_book(args: argparse.Namespace, index: Any, err: TextIO) -> str | None:
    """The book id ``--book`` (or the deprecated ``--book-id``) names (``rag.index.resolve``): a file
    not yet indexed is made keyword-searchable and answers at once while its vectors follow in the
    background. Raises ``RagError`` when nothing matches."""
    if args.book_id:
        print(f"note: {t('en', 'cli.book_id_deprecated')}", file=err)
    spec = args.book or args.book_id
    if not spec:
        return None
    from rag.index.resolve import BookNotFound, resolve_book

    if index is None:
        raise BookNotFound(Msg.of("cli.book_not_found", level="error", book=spec))
    book = resolve_book(index, spec)
    if book.notice is not None:
        print(f"note: {terminal_safe(text('en', book.notice))}", file=err)
    return book.id


def local_model_for_cli(settings: Settings, err: TextIO = sys.stderr) -> Any | None:
    """The embedded model when the settings use it (``rag.llm.provider_of`` "local"), made ready
    with a progress bar on ``err`` (the download, once); None otherwise or when it cannot be (one
    line says why; the answer is retrieval-only then)."""
    from rag.llm import provider_of

    if provider_of(settings) != "local":
        return None
    from rag.local import LocalModelError, shared_model

    model = shared_model(settings)
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            from tqdm import tqdm

            print(t("en", "local.cli_downloading", model=model.state().model, total=total // (1 << 20)), file=err)
            bar = tqdm(total=total or None, initial=done, unit="B", unit_scale=True, unit_divisor=1024, file=err,
                       leave=False)
        bar.update(done - bar.n)

    def phase(now: str) -> None:  # said when it happens: after a download, not before it
        nonlocal bar
        if now == "loading":
            if bar is not None:
                bar.close()
                bar = None
            print(t("en", "local.cli_loading", model=model.state().model), file=err)

    try:
        return model.ensure(progress=progress, on_phase=phase)
    except LocalModelError as exc:
        print(terminal_safe(t("en", "local.cli_failed", reason=exc.msg)), file=err)
        return None
    finally:
        if bar is not None:
            bar.close()


def cmd_ask(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from rag.agent.graph import build_graph
    from rag.agent.wiring import make_deps

    check_question(args.question, settings.max_question_chars)  # before the index is even opened
    index = None
    try:
        from rag.index import open_index

        index = open_index(settings)
    except ImportError:  # the book index is an optional part while it is being built
        logger.warning("book index unavailable")
    try:
        book_id = _ask_book(args, index, err)
    except RagError as exc:  # an unknown book is an error, never an answer from the web alone
        print(f"error: {exc}", file=err)
        if index is not None:
            index.close()
        return 1
    local = local_model_for_cli(settings, err)
    deps = make_deps(settings, index=index, llm=local)
    if deps.llm is None:
        print("note: no language model configured - retrieval-only mode (set LLM_BASE_URL / LLM_API_KEY / LLM_MODEL)",
              file=err)
    graph = build_graph(deps)
    streamed: list[str] = []  # answer tokens printed so far
    mid_line = False  # the last thing printed on stdout was a token, not a newline
    status = 0
    if args.read_up_to is not None:
        web = "allowed, results marked as possible spoilers" if args.allow_web_spoilers else "off"
        print(f"note: spoiler limit: chapters up to {args.read_up_to} only; web search {web}", file=err)
    scope = Scope(chapters=args.chapter, read_up_to=args.read_up_to, allow_web_spoilers=args.allow_web_spoilers)
    for event in run_turn(graph, args.question, thread_id=str(uuid.uuid4()), book_id=book_id, scope=scope):
        if isinstance(event, NodeFinished):
            if mid_line:
                print(file=out)
                mid_line = False
            print(f"[{event.node:<14} {event.duration_s:6.2f}s] {describe_update(event.node, event.update)}", file=err)
        elif isinstance(event, Token):
            print(event.text, end="", file=out, flush=True)
            streamed.append(event.text)
            mid_line = True
        elif isinstance(event, TurnFinished):
            shown = "".join(streamed)
            if mid_line:
                print(file=out)
            at = event.answer.find(shown) if shown else 0
            if at >= 0:
                # the app's lines around what streamed: before it (what is not covered) and after it
                before, rest = event.answer[:at].strip("\n"), event.answer[at + len(shown):].strip("\n")
                for part in (before, rest):
                    if part:
                        print(part, file=out)
            else:  # the node replaced what it streamed (e.g. generation failed midway)
                print(event.answer, file=out)
            for notice in event.values.get("notices") or []:
                print(f"[{notice['level']}] {notice['node']}: {notice['msg']}", file=err)
            print(f"[total {event.total_s:.2f}s]", file=err)
            if not answer_complete(event.values):
                status = EXIT_NO_ANSWER
        elif isinstance(event, TurnFailed):
            print(f"error: {event.message}", file=err)
            status = 1
    if index is not None and hasattr(index, "close"):
        index.close()
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag", description="Enough RAG: ask a book, know when it is not enough.")
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="ask a question (prints the trace to stderr, the answer to stdout)")
    ask.add_argument("question")
    ask.add_argument("--book", help=BOOK_HELP)
    ask.add_argument("--book-id", help="deprecated: the same as --book")
    ask.add_argument("--no-web", action="store_true", help="disable web search")
    ask.add_argument("--web-rounds", type=int, help="maximum web search rounds (default from MAX_WEB_ROUNDS)")
    ask.add_argument("--chapter", type=chapter_range_arg, metavar="A-B",
                     help="search only these chapters (a number or a range, e.g. 27 or 3-7)")
    ask.add_argument("--read-up-to", type=chapter_arg, metavar="N",
                     help="spoiler limit: I have read up to chapter N (nothing later is retrieved; web search off)")
    ask.add_argument("--allow-web-spoilers", action="store_true",
                     help="with --read-up-to: search the web anyway (results are marked as possible spoilers)")
    ask.set_defaults(func=cmd_ask)
    for module in ("rag.index.cli", "rag.eval.cli"):
        try:
            __import__(module, fromlist=["add_commands"]).add_commands(sub)
        except ImportError as exc:
            logger.debug("%s not available: %s", module, exc)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    settings: Settings | None = None
    try:
        settings = _settings(args)
        from rag.logs import setup_logging

        setup_logging(settings)
        return int(args.func(args, settings) or 0)
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except RagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # DATA_DIR not writable / not a directory, disk full: one line, no traceback
        print(f"error: {filesystem_problem(exc, settings.data_dir if settings else None)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
