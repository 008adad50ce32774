"""``python -m rag eval judge|route|answers|log``: the judge benchmark and the evaluation-log summary.

``add_commands(subparsers)`` registers ``eval``; every handler is ``func(args, settings) -> int``.
Exit codes: 0 done, 1 bad input (case file, log), 2 no usable model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from rag.agent.judge import JUDGE_MODES, JudgeConfig
from rag.agent.profile import small_model
from rag.config import Settings
from rag.errors import LLMError, RagError
from rag.eval.cases import KINDS, load_cases, load_route_cases
from rag.eval.common import (
    METHODS,
    model_arguments,
    prepare,
    report_misses,
    report_path,
    write_report,
)
from rag.eval.logsummary import format_summary, summarize_log
from rag.eval.metrics import fmt
from rag.eval.runner import (
    WEB_RULES,
    AnswerOutcome,
    JudgeOutcome,
    RouteOutcome,
    as_guarded,
    make_graph_factory,
    model_label,
    run_answers,
    run_judge,
    run_route,
    summarize_answers,
    summarize_judge,
    summarize_route,
)
from rag.index.resolve import BOOK_HELP
from rag.llm import MethodCache


# --------------------------------------------------------------------------- helpers
def _kinds(args: argparse.Namespace) -> list[str] | None:
    raw = getattr(args, "kinds", None)
    return [k.strip() for k in raw.split(",") if k.strip()] if raw else None


def _header(report: dict[str, Any]) -> str:
    return (f"model={report['model']} method={report['method']}"
            + (f" few_shot={'on' if report['few_shot'] else 'off'}" if "few_shot" in report else "")
            + f" cases={report['summary']['n']} file={report['cases_file']}")


def format_binary_table(summary: dict[str, Any], positive: str, negative: str) -> str:
    m = summary["metrics"]
    c = summary["confusion"]
    width = max(len(positive), len(negative)) + 2
    lines = [
        f"accuracy {fmt(m['accuracy'])}   precision({positive}) {fmt(m['precision'])}   "
        f"recall({positive}) {fmt(m['recall'])}   F1 {fmt(m['f1'])}",
        "confusion (rows: label, columns: prediction)",
        f"  {'':<{width}}{negative:>{width}}{positive:>{width}}",
        f"  {negative:<{width}}{c[negative][negative]:>{width}}{c[negative][positive]:>{width}}",
        f"  {positive:<{width}}{c[positive][negative]:>{width}}{c[positive][positive]:>{width}}",
        "per kind:",
    ]
    for kind, row in summary["per_kind"].items():
        extra = f"  predicted enough {row['predicted_enough']}/{row['n']}" if "predicted_enough" in row else ""
        lines.append(f"  {kind:<24} n={row['n']:<3} correct={row['correct']:<3} accuracy {fmt(row['accuracy'])}{extra}")
    if "valid_only" in summary and summary["cases_without_valid_reply"]:
        v = summary["valid_only"]
        lines.append(f"valid replies only (n={v['n']}): accuracy {fmt(v['accuracy'])}   "
                     f"precision({positive}) {fmt(v['precision'])}   recall({positive}) {fmt(v['recall'])}")
    lines.append(f"calls {summary['calls']}   mean latency per call {fmt(summary['mean_latency_per_call_s'], 2)} s   "
                 f"invalid JSON {summary['invalid_json_replies']} (rate {fmt(summary['invalid_json_rate'])})   "
                 f"cases without a valid reply {summary['cases_without_valid_reply']}   "
                 f"call errors {summary['call_errors']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- commands
def _with_replies(command: Callable[..., int], args: argparse.Namespace, settings: Settings, llm: Any | None,
                  out: TextIO | None, err: TextIO | None) -> int:
    """Run a model-measuring command with its replay or recording server (if any) up around it."""
    with ExitStack() as stack:
        code = command(args, settings, llm=llm, out=out or sys.stdout, err=err or sys.stderr, stack=stack)
        report_misses(args, err or sys.stderr)
        return code


def cmd_judge(args: argparse.Namespace, settings: Settings, *, llm: Any | None = None,
              out: TextIO | None = None, err: TextIO | None = None) -> int:
    return _with_replies(_cmd_judge, args, settings, llm, out, err)


def _cmd_judge(args: argparse.Namespace, settings: Settings, *, llm: Any | None, out: TextIO, err: TextIO,
               stack: ExitStack) -> int:
    prepared = prepare(args, settings, llm, err, lambda: load_cases(
        args.cases, corpus_dir=args.corpus_dir, limit=args.limit, kinds=_kinds(args), per_kind=args.per_kind), stack)
    if isinstance(prepared, int):
        return prepared
    cases, settings, llm = prepared
    few_shot = settings.judge_few_shot and not args.no_few_shot
    method = settings.llm_structured_method
    modes = list(JUDGE_MODES) if args.mode == "all" else [args.mode or settings.judge_mode]
    relevance = settings.judge_relevance_check is True or args.relevance  # auto: measured with --relevance
    evidence = args.evidence or settings.judge_evidence

    def progress(i: int, o: JudgeOutcome) -> None:
        verdict = "invalid" if not o.stats.valid else ("enough" if o.predicted_enough else "not enough")
        mark = "ok" if o.predicted_enough == o.case.label_enough else "WRONG"
        print(f"[{i + 1}/{len(cases)}] {o.case.id:<10} {o.case.kind:<24} {verdict:<11} {mark:<5} "
              f"{o.stats.latency_s:6.2f}s", file=err, flush=True)

    model = model_label(llm)
    methods = MethodCache()  # what "auto" learns of the endpoint, kept across the modes
    rows = []
    by_mode: dict[str, list[JudgeOutcome]] = {}
    for mode in modes:
        try:
            if mode == "guarded" and "evidence" in by_mode:
                # the same prompt and reply as evidence mode (temperature 0): only the decision differs
                outcomes = [as_guarded(o) for o in by_mode["evidence"]]
            else:
                config = JudgeConfig(mode=mode, method=method, few_shot=few_shot, evidence=evidence,
                                     relevance=relevance, constrain=not getattr(args, "free_quotes", False),
                                     max_passage_chars=settings.max_passage_chars, strict=small_model(llm))
                outcomes = run_judge(cases, llm, config, web_rule=args.web_rule,
                                     on_result=None if args.quiet else progress, methods=methods,
                                     small=getattr(args, "small", False))
        except LLMError as exc:
            print(f"error: {exc}", file=err)
            return 2
        by_mode[mode] = outcomes
        report = {"command": "judge", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cases_file": str(args.cases),
                  "model": model, "method": _method_used(method, llm, methods), "mode": mode, "relevance_check": relevance,
                  "evidence": "small turn" if getattr(args, "small", False) else evidence,
                  "strict_parts": small_model(llm), "constrained_quotes": not getattr(args, "free_quotes", False)
                  and _method_used(method, llm, methods) == "json_schema" and mode != "verdict",
                  "few_shot": few_shot, "web_rule": args.web_rule,
                  "limit": args.limit, "per_kind": args.per_kind, "kinds": _kinds(args),
                  "summary": summarize_judge(outcomes),
                  "results": [o.as_dict() for o in outcomes]}
        print(f"{_header(report)} mode={mode}", file=out)
        print(format_binary_table(report["summary"], "not_enough", "enough"), file=out)
        print(format_evidence_line(report["summary"]), file=out)
        tag = f"{mode}-{evidence + '-' if mode != 'verdict' else ''}{'fewshot' if few_shot else 'zeroshot'}"
        path = report_path(args, settings, "judge", model, tag)
        if len(modes) > 1 and args.report:
            path = path.with_name(f"{path.stem}-{mode}{path.suffix}")
        write_report(path, report, out)
        rows.append((mode, report["summary"]))
    if len(rows) > 1:
        print(format_mode_table(rows), file=out)
    return 0


def _method_used(method: str, llm: Any, methods: Any) -> str:
    """The method the calls went by ("auto" resolved for this endpoint, as ``methods`` learnt it)."""
    return str(methods.resolve(llm, method))


def format_evidence_line(summary: dict[str, Any]) -> str:
    rc = summary["risk_coverage"]
    return (f"false-enough {summary['false_enough']} (rate {fmt(summary['false_enough_rate'])})   "
            f"answerable judged enough {summary['answerable_enough']} (rate {fmt(summary['answerable_enough_rate'])})   "
            f"enough with verified evidence {summary['enough_with_verified_evidence']}/{summary['enough_verdicts']}   "
            f"quotes verified {fmt(summary['quote_verification_rate'])} of {summary['quotes']}   "
            f"model-code agreement {fmt(summary['model_code_agreement'])}   AURC {fmt(rc['aurc'])}   "
            f"tokens/case {fmt(summary['tokens_per_case'], 0)}")


def format_mode_table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """One line per judge mode: the figures that decide which mode to trust."""
    head = (f"{'mode':<9} {'accuracy':>8} {'F1(not)':>8} {'false-enough':>13} {'answerable':>11} "
            f"{'verified-enough':>16} {'quotes ok':>9} {'agree':>6} {'AURC':>6} {'s/case':>7}")
    lines = [head]
    for mode, s in rows:
        m = s["metrics"]
        lines.append(f"{mode:<9} {fmt(m['accuracy']):>8} {fmt(m['f1']):>8} "
                     f"{s['false_enough']:>5} ({fmt(s['false_enough_rate'], 2)}) "
                     f"{s['answerable_enough']:>4} ({fmt(s['answerable_enough_rate'], 2)}) "
                     f"{s['enough_with_verified_evidence']:>8}/{s['enough_verdicts']:<7} "
                     f"{fmt(s['quote_verification_rate'], 2):>9} {fmt(s['model_code_agreement'], 2):>6} "
                     f"{fmt(s['risk_coverage']['aurc'], 3):>6} {fmt(s['latency_per_case_s']['mean'], 1):>7}")
    return "\n".join(lines)


def cmd_route(args: argparse.Namespace, settings: Settings, *, llm: Any | None = None,
              out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    prepared = prepare(args, settings, llm, err, lambda: load_route_cases(args.cases, limit=args.limit))
    if isinstance(prepared, int):
        return prepared
    cases, settings, llm = prepared
    method = settings.llm_structured_method

    def progress(i: int, o: RouteOutcome) -> None:
        mark = "ok" if o.predicted == o.case.label_strategy else "WRONG"
        print(f"[{i + 1}/{len(cases)}] {o.case.id:<10} {o.case.label_strategy:<8} -> {o.predicted:<8} {mark:<5} "
              f"{o.stats.latency_s:6.2f}s", file=err, flush=True)

    try:
        book_terms, title, index = _book_check(args, settings)
    except RagError as exc:  # an unknown --book: one line, not a benchmark without the book
        print(f"error: {exc}", file=err)
        return 1
    try:
        outcomes = run_route(cases, llm, method=method, book_title=title, book_terms=book_terms,
                             on_result=None if args.quiet else progress)
    except LLMError as exc:
        print(f"error: {exc}", file=err)
        return 2
    finally:
        if index is not None:
            index.close()
    model = model_label(llm)
    report = {"command": "route", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cases_file": str(args.cases),
              "model": model, "method": method, "limit": args.limit, "book": args.book,
              "summary": summarize_route(outcomes), "results": [o.as_dict() for o in outcomes]}
    print(_header(report), file=out)
    print(format_binary_table(report["summary"], "simple", "complex"), file=out)
    if args.book:
        r = report["summary"]["router_only"]
        print(f"router alone: accuracy {fmt(r['accuracy'])}; the book check sent "
              f"{report['summary']['overridden']} 'simple' question(s) to the book", file=out)
    write_report(report_path(args, settings, "route", model, "router"), report, out)
    return 0


def _book_check(args: argparse.Namespace, settings: Settings) -> tuple[Any, str | None, Any]:
    """With ``--book``: the graph's book-term check (``rag.agent.routing``) over that book's keyword
    index: a book file is indexed in a temporary directory (keywords only), anything else is an
    indexed book's id, id prefix, title or file name (``rag.index.resolve``; raises ``BookNotFound``).
    Returns (check or None, book title, index to close)."""
    if not getattr(args, "book", None):
        return None, None, None
    import tempfile

    from rag.agent.nodes.route import ROUTE_CHECK_K
    from rag.agent.routing import book_terms
    from rag.index import open_index
    from rag.index.resolve import resolve_book

    if Path(args.book).expanduser().is_file():
        index = open_index(settings.model_copy(update={"data_dir": Path(tempfile.mkdtemp(prefix="route-book-"))}))
        info = index.ingest(args.book, embed=False)
        book_id, title = info.id, info.title
    else:
        index = open_index(settings)
        try:
            book = resolve_book(index, args.book, ingest=False)
        except RagError:
            index.close()
            raise
        book_id, title = book.id, book.title

    def check(question: str) -> list[str]:
        return book_terms(question, index.retrieve(question, k=ROUTE_CHECK_K, book_id=book_id, mode="keyword"))

    return check, title, index


def cmd_answers(args: argparse.Namespace, settings: Settings, *, llm: Any | None = None,
                out: TextIO | None = None, err: TextIO | None = None) -> int:
    """The whole graph (no web) on labelled cases: does the answer say what is missing, and are its
    sentences supported by what they cite?"""
    return _with_replies(_cmd_answers, args, settings, llm, out, err)


def _cmd_answers(args: argparse.Namespace, settings: Settings, *, llm: Any | None, out: TextIO, err: TextIO,
                 stack: ExitStack) -> int:
    prepared = prepare(args, settings, llm, err, lambda: load_cases(
        args.cases, corpus_dir=args.corpus_dir, kinds=_kinds(args) or ["half"], per_kind=args.per_kind,
    )[: args.limit or None], stack)
    if isinstance(prepared, int):
        return prepared
    cases, settings, llm = prepared
    few_shot = settings.judge_few_shot and not args.no_few_shot

    def progress(i: int, o: AnswerOutcome) -> None:
        print(f"[{i + 1}/{len(cases)}] {o.case.id:<10} mode={o.answer_mode:<8} states_missing={o.states_missing!s:<5} "
              f"asserted={','.join(o.asserted) or '-'} {o.latency_s:6.2f}s", file=err, flush=True)

    outcomes = run_answers(cases, make_graph_factory(settings, llm, few_shot=few_shot),
                           on_result=None if args.quiet else progress)
    if outcomes and all(o.error for o in outcomes):
        print(f"error: every case failed, e.g. {outcomes[0].error}", file=err)
        return 2
    model = model_label(llm)
    summary = summarize_answers(outcomes)
    report = {"command": "answers", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cases_file": str(args.cases),
              "model": model, "method": settings.llm_structured_method, "few_shot": few_shot,
              "kinds": _kinds(args) or ["half"], "summary": summary, "results": [o.as_dict() for o in outcomes]}
    print(_header(report), file=out)
    print(f"answers that say what is missing {fmt(summary['states_missing_rate'])}   "
          f"answers that state a missing fact anyway {fmt(summary['asserts_missing_fact_rate'])}   "
          f"answers with numbers found in no source {fmt(summary['unsupported_numbers_rate'])}   "
          f"at risk {fmt(summary['at_risk_rate'])}   judge said enough {fmt(summary['judged_enough_rate'])}", file=out)
    print("answer modes: " + ", ".join(f"{k}={v}" for k, v in sorted(summary["answer_modes"].items())), file=out)
    print(f"sentences {summary['sentences']}   citation recall {fmt(summary['citation_recall'])}   "
          f"citation precision {fmt(summary['citation_precision'])}   uncited {summary['uncited_sentences']}", file=out)
    write_report(report_path(args, settings, "answers", model, "fewshot" if few_shot else "zeroshot"), report, out)
    return 0


def cmd_checks(args: argparse.Namespace, settings: Settings, *, out: TextIO | None = None,
               err: TextIO | None = None) -> int:
    """``eval checks``: the evidence code on the case file, no model: tampered evidence must flip
    every verified case to not enough; seeded answer errors must be flagged."""
    from rag.eval.checks import seeded_report, tamper_report

    out, err = out or sys.stdout, err or sys.stderr
    try:
        cases = load_cases(args.cases, corpus_dir=args.corpus_dir, limit=args.limit)
    except RagError as exc:
        print(f"error: {exc}", file=err)
        return 1
    if getattr(args, "replay", None):
        return _checks_on_replies(args, settings, cases, out, err)
    tamper, seeded = tamper_report(cases, settings.max_passage_chars), seeded_report(cases, settings.max_passage_chars)
    print(f"cases {len(cases)} file={args.cases}", file=out)
    print(f"tamper: answerable {tamper['answerable']}, with evidence {tamper['with_evidence']}, "
          f"verified {tamper['verified']} (rate {fmt(tamper['verified_rate'])})", file=out)
    for name, row in tamper["tampers"].items():
        print(f"  {name:<22} flipped to not enough {row['flipped']}/{row['tried']} ({fmt(row['rate'])})", file=out)
    print(f"seeded answer errors: flagged {fmt(seeded['flagged_rate'])}   false flags on faithful answers "
          f"{seeded['false_flags']}/{seeded['clean_sentences']} ({fmt(seeded['false_flag_rate'])})", file=out)
    for name, row in seeded["seeded"].items():
        print(f"  {name:<22} flagged {row['flagged']}/{row['tried']} ({fmt(row['rate'])})", file=out)
    report = {"command": "checks", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cases_file": str(args.cases),
              "tamper": tamper, "seeded": seeded}
    write_report(report_path(args, settings, "checks", "no-model", "code"), report, out)
    failed = any(r["flipped"] != r["tried"] for r in tamper["tampers"].values()) or tamper["verified"] != tamper["with_evidence"]
    return 3 if failed else 0


def _checks_on_replies(args: argparse.Namespace, settings: Settings, cases: list[Any], out: TextIO,
                       err: TextIO) -> int:
    """``eval checks --replay FIXTURE``: tampering and seeded errors on a model's recorded replies."""
    from rag.eval.checks import seeded_answer_report, tamper_replies
    from rag.eval.replay import load_fixture

    try:
        replies = load_fixture(args.replay, cases)
    except (RagError, OSError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    tamper = tamper_replies(cases, replies, settings.max_passage_chars)
    with ExitStack() as stack:  # --labels: the fixture's verify replies label the seeded sentences over HTTP
        relabel = None
        if args.labels:
            from rag.eval.marking import model_relabel

            prepared = prepare(args, settings, None, err, lambda: cases, stack)
            if isinstance(prepared, int):
                return prepared
            relabel = model_relabel(prepared[2], prepared[1].llm_structured_method)
        seeded = seeded_answer_report(cases, replies, settings.max_passage_chars, relabel)
        report_misses(args, err)
    print(f"cases {len(cases)} file={args.cases} replies={args.replay}", file=out)
    print(f"tamper: answerable {tamper['answerable']}, verified enough {tamper['verified']}", file=out)
    for name, row in tamper["tampers"].items():
        print(f"  {name:<22} flipped to not enough {row['flipped']}/{row['tried']} ({fmt(row['rate'])})", file=out)
    f = seeded["faithful"]
    print(f"recorded answers {seeded['answers']}: claim sentences {f['sentences']}   supported {f['supported']} "
          f"({fmt(seeded['supported_rate'])})   unsupported {f['unsupported']}   uncited {f['uncited']} "
          f"({fmt(seeded['uncited_rate'])})", file=out)
    print(f"seeded errors flagged {fmt(seeded['flagged_rate'])}", file=out)
    for name, row in seeded["seeded"].items():
        print(f"  {name:<22} flagged {row['flagged']}/{row['tried']} ({fmt(row['rate'])})", file=out)
    report = {"command": "checks", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cases_file": str(args.cases),
              "replies": str(args.replay), "tamper": tamper, "seeded": seeded}
    write_report(report_path(args, settings, "checks", Path(args.replay).stem, "replies"), report, out)
    return 3 if any(r["flipped"] != r["tried"] for r in tamper["tampers"].values()) else 0


def cmd_log(args: argparse.Namespace, settings: Settings, *, out: TextIO | None = None,
            err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    path = Path(args.path) if args.path else settings.eval_log_path
    try:
        summary = summarize_log(path)
    except RagError as exc:
        print(f"error: {exc}", file=err)
        return 1
    if args.json:
        print(json.dumps(summary.as_dict(), ensure_ascii=False, indent=2), file=out)
    else:
        print(format_summary(summary), file=out)
    return 0


# --------------------------------------------------------------------------- wiring
def _common(p: argparse.ArgumentParser, *, judge_cases: bool = True) -> None:
    p.add_argument("--cases", required=True, help="a JSONL case file (see assets/eval/)")
    p.add_argument("--report", help="where to write the JSON report (default: DATA_DIR/eval/...)")
    p.add_argument("--limit", type=int, help="only the first N cases")
    p.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    if not judge_cases:
        p.add_argument("--model", help="model name (overrides LLM_MODEL)")
        p.add_argument("--method", choices=METHODS, help="structured-output method (overrides LLM_STRUCTURED_METHOD)")
    else:
        model_arguments(p, "answer from recorded replies (a fixture, see rag/eval/replay.py) served over loopback "
                           "HTTP", "record every reply of the configured endpoint (LLM_BASE_URL) into FILE as a fixture")
        p.add_argument("--corpus-dir", help="directory of the corpus files that references point into "
                                            "(default: ../shared/corpus next to the repository, or $EVAL_CORPUS_DIR)")
        p.add_argument("--kinds", help=f"comma-separated case kinds to keep ({', '.join(KINDS)})")
        p.add_argument("--per-kind", type=int, help="only the first N cases of each kind (a stratified subset)")
        p.add_argument("--no-few-shot", action="store_true", help="judge without the few-shot counter-examples")


def add_commands(subparsers: Any) -> None:
    """Register ``eval`` with its sub-commands on the main CLI's subparsers."""
    ev = subparsers.add_parser("eval", help="measure the judge and the router; summarise the evaluation log")
    sub = ev.add_subparsers(dest="eval_command", required=True)

    judge = sub.add_parser("judge", help="benchmark the sufficiency judge on labelled cases")
    _common(judge)
    judge.add_argument("--web-rule", choices=sorted(WEB_RULES), default="first",
                       help="the web_query rule in the prompt: 'first' (web search available, default) or 'none'")
    judge.add_argument("--mode", choices=[*JUDGE_MODES, "all"],
                       help="judge mode (default: JUDGE_MODE); 'all' runs each mode and prints a comparison")
    judge.add_argument("--evidence", choices=["quote", "sentence"],
                       help="evidence as copied quotes or as cited sentence ids (default: JUDGE_EVIDENCE)")
    judge.add_argument("--relevance", action="store_true",
                       help="also ask, per verified part, whether the quote states the answer (JUDGE_RELEVANCE_CHECK)")
    judge.add_argument("--free-quotes", action="store_true",
                       help="with json_schema, leave the quote free text (default: constrained to the sources' spans)")
    judge.add_argument("--small", action="store_true",
                       help="the small turn's extraction (TURN_PROFILE=small) instead of the judge's evidence form")
    judge.set_defaults(func=cmd_judge)

    route = sub.add_parser("route", help="benchmark the router (simple vs complex) on labelled questions")
    _common(route, judge_cases=False)
    route.add_argument("--book", help="a book the questions are asked about (" + BOOK_HELP + "): its title goes to "
                                      "the router, and 'simple' questions naming what the book uses go to the book")
    route.set_defaults(func=cmd_route)

    answers = sub.add_parser("answers", help="hallucination risk: full graph, no web, on 'half' cases; "
                                             "does the answer say what is missing?")
    _common(answers)
    answers.set_defaults(func=cmd_answers)

    checks = sub.add_parser("checks", help="no model: tampered evidence must fail, seeded answer errors must be flagged")
    checks.add_argument("--cases", required=True, help="a JSONL case file (see assets/eval/)")
    checks.add_argument("--corpus-dir", help="directory of the corpus files that references point into")
    checks.add_argument("--limit", type=int, help="only the first N cases")
    checks.add_argument("--report", help="where to write the JSON report (default: DATA_DIR/eval/...)")
    checks.add_argument("--replay", metavar="FILE", help="tamper with and seed errors into a model's recorded "
                                                         "replies (a fixture) instead of evidence built from the cases")
    checks.add_argument("--labels", action="store_true", help="with --replay: the seeded sentences labelled by "
                                                              "the fixture's verify replies too (VERIFY_ANSWERS=llm)")
    checks.add_argument("--missed", metavar="FILE", help="with --labels: write the verify prompts the fixture "
                                                         "has no reply for to FILE (they hold book text)")
    checks.set_defaults(func=cmd_checks)

    from rag.eval.marking import add_sentences_command

    add_sentences_command(sub)

    log = sub.add_parser("log", help="summarise the evaluation log")
    log.add_argument("--path", help="the log file (default: DATA_DIR/eval_log.jsonl)")
    log.add_argument("--json", action="store_true", help="print the summary as JSON")
    log.set_defaults(func=cmd_log)
