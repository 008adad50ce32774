"""``verify_answer``: every sentence of the answer checked against the sources it cites
(``rag.checks``); with ``VERIFY_ANSWERS=llm`` the model also labels each cited sentence given only
its sources."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rag.agent.context import verify_messages
from rag.agent.judge import sources_of
from rag.agent.names import VERIFY
from rag.agent.nodes.common import Env
from rag.agent.state import GraphState, Notice
from rag.checks import SentenceCheck, Source, check_answer
from rag.checks.labels import apply_label, needs_label
from rag.schemas import SentenceLabel


def verify_answer(state: GraphState, env: Env) -> dict[str, Any]:
    if env.config.verify_answers == "off":
        return {"answer_checks": []}
    passages = state.get("passages") or []
    sources = sources_of(passages, state.get("web_results") or [], env.config.passage_chars(len(passages)))
    answer = state.get("answer") or ""
    notices: list[Notice] = []
    raw_from = state.get("unprocessed_from")
    if raw_from is not None:  # the app's own lines after the answer are not an answer: never checked as one
        answer = answer[:raw_from]
        notices.append(env.n(VERIFY, "agent.verify_skipped_raw"))
    # the app's first line (what the sources do not cover) is not a claim either; offsets stay the answer's
    start = min(state.get("answer_from") or 0, len(answer))
    checked = check_answer(" " * start + answer[start:], sources, question=state.get("question"))
    results = [replace(c, text=answer[c.start:c.end]) for c in checked.sentences]
    if env.config.verify_answers == "llm":
        notices += _model_labels(env, results, sources)
    return {"answer_checks": results, "notices": notices}


def _model_labels(env: Env, results: list[SentenceCheck], sources: list[Source]) -> list[Notice]:
    """The model's label of every sentence code found supported, or refused for its wording only
    (``results`` updated in place by ``rag.checks.labels.apply_label``)."""
    by_number = {src.number: src for src in sources}
    for i, r in enumerate(results):
        if not needs_label(r):
            continue
        cited = [by_number[n] for n in r.citations if n in by_number]
        label, errors = env.structured(SentenceLabel, verify_messages(r.text, cited))
        if label is None:
            return [env.n(VERIFY, "agent.verify_failed", "warning", error=env.error(errors[-1]))]
        results[i] = apply_label(r, label.label, label.reason, label.quote, cited)
    return []
