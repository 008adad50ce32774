"""``rag eval sentences``: given sentences marked against their cases' passages, by code alone, or
with a model's label of each sentence (``--replay FIXTURE`` / ``--record FILE``: the sentence
checker's call of ``VERIFY_ANSWERS=llm`` through the real HTTP path, joined with code's marks by
``rag.checks.labels``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any, TextIO

from rag.checks import SentenceCheck, Source
from rag.config import Settings
from rag.errors import RagError
from rag.eval.cases import load_cases


def model_relabel(llm: Any, method: str) -> Any:
    """A ``mark_sentences`` relabel: the model's label of each sentence part whose mark it can change,
    applied by ``rag.checks.labels.apply_label`` (the part unchanged when the call fails)."""
    from rag.agent.context import verify_messages
    from rag.agent.judge import structured_with_retry
    from rag.checks.labels import apply_label, needs_label
    from rag.llm import judge_model
    from rag.schemas import SentenceLabel

    model = judge_model(llm)

    def relabel(mark: SentenceCheck, cited: Sequence[Source]) -> SentenceCheck:
        if not needs_label(mark) or not cited:
            return mark
        label, _ = structured_with_retry(model, SentenceLabel, verify_messages(mark.text, list(cited)), method)
        return mark if label is None else apply_label(mark, label.label, label.reason, label.quote, cited)

    return relabel


def cmd_sentences(args: argparse.Namespace, settings: Settings, *, out: TextIO | None = None,
                  err: TextIO | None = None) -> int:
    """``eval sentences``: each given sentence marked against its case's passages (status and reason),
    with counts per status, and per kind and label when the sentences carry them."""
    from rag.eval.checks import SentenceFileError, load_sentences, mark_sentences
    from rag.eval.common import prepare, report_misses, report_path, write_report

    out, err = out or sys.stdout, err or sys.stderr
    try:
        rows = load_sentences(args.sentences)
        cases = load_cases(args.cases, corpus_dir=args.corpus_dir)
    except (RagError, SentenceFileError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    with ExitStack() as stack:
        relabel, model = None, "no-model"
        if args.replay or args.record:
            prepared = prepare(args, settings, None, err, lambda: cases, stack)
            if isinstance(prepared, int):
                return prepared
            _, settings, llm = prepared
            relabel, model = model_relabel(llm, settings.llm_structured_method), "model-labels"
        try:
            report = mark_sentences(cases, rows, settings.max_passage_chars, relabel)
        except SentenceFileError as exc:
            print(f"error: {exc}", file=err)
            return 1
        report_misses(args, err)
    for r in report["results"]:
        print(f"{r['case']}\t{r['status']}\t{r['sentence']}\t{r['reason']}", file=out)
    print("sentences {n}: ".format(n=report["n"]) + ", ".join(f"{k} {v}" for k, v in sorted(report["counts"].items())),
          file=out)
    for field, groups in report["per"].items():
        for name, row in sorted(groups.items()):
            print(f"  {field} {name}: supported {row['supported']}/{row['n']}", file=out)
    report = {"command": "sentences", "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cases_file": str(args.cases),
              "sentences_file": str(args.sentences), "labels": args.replay or args.record or None, **report}
    write_report(report_path(args, settings, "sentences", model, "code"), report, out)
    return 0


def add_sentences_command(sub: Any) -> None:
    from rag.eval.common import model_arguments

    sentences = sub.add_parser("sentences", help="mark given sentences against their cases' passages (code; "
                                                 "with --replay/--record, a model's label of each too)")
    sentences.add_argument("--cases", required=True, help="a JSONL case file (see assets/eval/)")
    sentences.add_argument("--sentences", required=True,
                           help='JSONL: {"case": ID, "sentence": TEXT} per line (optional "question", "label", "kind")')
    sentences.add_argument("--corpus-dir", help="directory of the corpus files that references point into")
    sentences.add_argument("--report", help="where to write the JSON report (default: DATA_DIR/eval/...)")
    model_arguments(sentences, "the model's labels from recorded replies (a fixture with verify calls) served "
                               "over loopback HTTP", "label with the configured endpoint (LLM_BASE_URL), "
                                                     "recording its replies into FILE")
    sentences.set_defaults(func=cmd_sentences)
