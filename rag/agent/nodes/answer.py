"""The nodes that write the answer: ``generate`` (cited, from the sources), ``direct_answer`` (a
general question, from the model's knowledge), ``fallback`` (nothing usable was found) and
``retrieval_only`` (no model: the best passages as they are)."""

from __future__ import annotations

import json
import logging
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from rag.agent import prompts
from rag.agent.compose import WhyNoWeb, missing_parts, not_covered_line, small_answer
from rag.agent.context import answer_messages, direct_messages, format_sentence_context
from rag.agent.extract import SENTENCE_BUDGET_CHARS
from rag.agent.judge import judge_messages, sources_of
from rag.agent.names import DIRECT_ANSWER, GENERATE
from rag.agent.nodes.common import (
    Env,
    current_question,
    judge_context,
    search_scope,
    web_allowed,
    web_query_rule,
)
from rag.agent.nodes.retrieve import search_book
from rag.agent.state import RESET, GraphState, Notice, reset_question_state
from rag.checks.select import bearing_sentences
from rag.i18n import Level, text
from rag.lang import detect_lang, language_name
from rag.llm import Streamed, stream_text
from rag.schemas import Evaluation, Passage

logger = logging.getLogger(__name__)

RETRIEVAL_ONLY_CHARS = 400  # of each passage shown without a model


def findings(evaluation: Evaluation | None) -> str:
    """The judge's findings as the JSON it was asked for (the compact answer prompt's assistant turn):
    each part with its answer, source and quote when code verified it ("not found" otherwise: an
    unverified claim is not offered to the writer), and the verdict code gave."""
    if evaluation is None:
        return "{}"
    data: dict[str, Any] = {"reason": evaluation.reason}
    if evaluation.parts:
        data["parts"] = [{"part": p.part, "answer": p.answer, "source": p.matched_source or p.source, "quote": p.quote}
                         if p.status == "verified" else
                         {"part": p.part, "answer": "not found", "source": None, "quote": "not found"}
                         for p in evaluation.parts]
    else:
        data["missing"] = evaluation.missing
    data.update(enough=evaluation.enough, web_query=None, confidence=evaluation.confidence)
    return json.dumps(data, ensure_ascii=False)


def _stream_answer(env: Env, messages: list[BaseMessage]) -> Streamed:
    """The answer as it streams, within the turn's deadline and ``STREAM_IDLE_TIMEOUT``; a small
    model's cut at ``SMALL_MODEL_MAX_ANSWER_CHARS``, and any model's where it starts to loop."""
    return stream_text(env.answer_model, messages, idle=env.config.stream_idle_timeout,
                       max_chars=env.config.max_answer_chars)


def _unfinished(env: Env, node: str, streamed: Streamed, lang: str) -> tuple[str, Notice | None] | None:
    """For an answer that is empty (or only whitespace) or was cut short: the line that says so
    in the answer, and the notice for the trace (None for a cancelled turn: nobody is reading).
    None for a complete answer."""
    if streamed.cut is None and streamed.text.strip():
        return None
    if streamed.cut == "cancel":
        return "", None
    params: dict[str, str] = {}
    if streamed.cut == "turn":
        params["seconds"] = f"{env.config.turn_timeout:g}"
    elif streamed.cut == "idle":
        params["seconds"] = f"{env.config.stream_idle_timeout:g}"
    elif streamed.cut == "length":
        params["chars"] = str(env.config.max_answer_chars or len(streamed.text))
    key = f"answer_cut_{streamed.cut}" if streamed.cut else "answer_empty"
    level: Level = "warning" if streamed.cut in ("repeat", "length") and streamed.text.strip() else "error"
    return prompts.text(lang, key, **params), env.n(node, f"agent.{key}", level, **params)


def why_no_web(state: GraphState, env: Env) -> WhyNoWeb:
    """Why no (more) web search follows a "not enough" that reaches the answer."""
    read_up_to = state.get("read_up_to")
    if read_up_to is not None and not web_allowed(state, env.config.web_enabled) and env.config.web_enabled:
        return WhyNoWeb(read_up_to=read_up_to)
    if not env.config.web_enabled:
        return WhyNoWeb(read_up_to=read_up_to, web_off=read_up_to is None)
    return WhyNoWeb(rounds=len(state.get("web_rounds") or []))


def generate(state: GraphState, env: Env) -> dict[str, Any]:
    lang = state.get("language", "en")
    evaluations = state.get("evaluations") or []
    last = evaluations[-1] if evaluations else None
    mode = "full" if last is not None and last.enough else "partial"
    if env.config.extract_answer:
        return _small_answer(state, env, lang, last, mode)
    missing = None if mode == "full" else (last.missing if last else [])
    if env.config.answer_after_judge:
        messages = _after_judge_messages(state, env, lang, last, missing)
    else:
        messages = answer_messages(current_question(state), lang, state.get("local_context") or "",
                                   state.get("web_context") or "", missing=missing)
    # Not enough, and no web search can follow: the first line says what is not covered, and why
    first = None if mode == "full" else not_covered_line(lang, missing_parts(last, current_question(state)),
                                                          why_no_web(state, env))
    notices: list[Notice] = []
    raw_from: int | None = None  # where the app's own lines after the answer begin (not checked as an answer)
    try:
        streamed = _stream_answer(env, messages)
    except Exception as exc:  # noqa: BLE001 - say so in one line; the sources stay in the Sources tab
        logger.warning("generation failed: %s", exc)
        notices.append(env.n(GENERATE, "agent.generation_failed", "error", error=env.model_error(exc)))
        answer, raw_from = prompts.text(lang, "generation_failed", error=type(exc).__name__), 0
    else:
        answer = streamed.text
        unfinished = _unfinished(env, GENERATE, streamed, lang)
        if unfinished is not None:  # keep what was written and say in one line why it stops
            line, notice = unfinished
            notices += [notice] if notice is not None else []
            kept = answer.rstrip() if answer.strip() else ""  # as streamed: the text shown so far stays its prefix
            raw_from = (len(kept) + 2 if kept else 0) if line else None
            note = f"{line}{prompts.text(lang, 'stopped_note')}" if line else ""
            answer = "\n\n".join(part for part in (kept, note) if part)
    answer_from = 0
    if first:
        answer_from = len(first) + 2
        answer = f"{first}\n\n{answer}"
        raw_from = None if raw_from is None else raw_from + answer_from
    return {"answer": answer, "answer_mode": mode, "notices": notices, "messages": [AIMessage(answer)],
            "unprocessed_from": raw_from, "answer_from": answer_from}


def _small_answer(state: GraphState, env: Env, lang: str, last: Evaluation | None, mode: str) -> dict[str, Any]:
    """The small turn's answer, written by code from what the model picked and code checked
    (``rag.agent.compose.small_answer``): no second model call."""
    question = current_question(state)
    passages = state.get("passages") or []
    sources = sources_of(passages, state.get("web_results") or [], env.config.passage_chars(len(passages)))
    chosen = bearing_sentences(question, sources, budget_chars=SENTENCE_BUDGET_CHARS)
    composed = small_answer(lang, last, chosen, question=question, why=why_no_web(state, env))
    return {"answer": composed.text, "answer_mode": mode, "notices": [], "messages": [AIMessage(composed.text)],
            "unprocessed_from": composed.unchecked_from, "answer_from": composed.answer_from}


def _after_judge_messages(state: GraphState, env: Env, lang: str, last: Evaluation | None,
                          missing: list[str] | None) -> list[BaseMessage]:
    """The answer prompt written after the judge's (the compact profile's): the judge's last prompt as it was sent (system prompt,
    question, sources: the prefix llama.cpp has cached), the judge's findings as its reply, then
    the request for the answer (the only new text the model reads)."""
    question = current_question(state)
    passages, web_results = state.get("passages") or [], state.get("web_results") or []
    context = judge_context(state)
    judge = env.config.judge
    if judge.evidence == "sentence" and judge.mode != "verdict":
        context = format_sentence_context(sources_of(passages, web_results, judge.passage_chars(len(passages))))
    messages = judge_messages(question, context, mode=judge.mode, few_shot=judge.few_shot,
                              web_query_rule=web_query_rule(state, env.config, len(state.get("web_rounds") or [])),
                              evidence=judge.evidence)
    partial_note = ""
    if missing is not None:
        partial_note = prompts.COMPACT_PARTIAL_NOTE.format(
            missing="; ".join(missing) if missing else "(not specified by the judge)",
            missing_heading=prompts.text(lang, "missing_heading"),
            cannot_confirm=prompts.text(lang, "cannot_confirm"))
    request = prompts.COMPACT_ANSWER_USER.format(language=language_name("zh" if lang == "zh" else "en"),
                                                 cite_example=prompts.text(lang, "cite_example"),
                                                 partial_note=partial_note)
    return [*messages, AIMessage(findings(last)), HumanMessage(request)]


def direct_answer(state: GraphState, env: Env) -> dict[str, Any]:
    lang = state.get("language", "en")
    notices: list[Notice] = []
    try:
        streamed = _stream_answer(env, direct_messages(current_question(state), lang))
        unfinished = _unfinished(env, DIRECT_ANSWER, streamed, lang)
        parts = [streamed.text.rstrip()]
        if unfinished is not None:
            parts.append(unfinished[0])
            notices += [unfinished[1]] if unfinished[1] is not None else []
        if streamed.text.strip():
            # Say plainly that nothing was looked up: a misrouted book question must not pass as sourced.
            parts.append(prompts.text(lang, "direct_note"))
        answer = "\n\n".join(part for part in parts if part)
    except Exception as exc:  # noqa: BLE001
        notices.append(env.n(DIRECT_ANSWER, "agent.generation_failed", "error", error=env.model_error(exc)))
        answer = prompts.text(lang, "generation_failed", error=type(exc).__name__)
    return {"answer": answer, "answer_mode": "direct", "notices": notices, "messages": [AIMessage(answer)]}


def fallback(state: GraphState, env: Env) -> dict[str, Any]:
    """Nothing usable was found: say so without calling the model, and list what is missing."""
    lang = state.get("language", "en")
    tried_web = bool(state.get("web_rounds"))
    lines = [prompts.text(lang, "fallback", web=prompts.text(lang, "fallback_web") if tried_web else "")]
    evaluations = state.get("evaluations") or []
    missing = evaluations[-1].missing if evaluations else []
    if missing:
        lines += ["", prompts.text(lang, "fallback_missing")] + [f"- {m}" for m in missing]
    problems = [text(lang, n["msg"]) for n in state.get("notices") or [] if n["level"] == "error"]
    if problems:
        lines += ["", prompts.text(lang, "fallback_errors")] + [f"- {p}" for p in problems]
    answer = "\n".join(lines)
    return {"answer": answer, "answer_mode": "fallback", "messages": [AIMessage(answer)]}


def retrieval_only(state: GraphState, env: Env) -> dict[str, Any]:
    question = (state.get("question") or "").strip()
    lang = detect_lang(question)
    update: dict[str, Any] = {**reset_question_state(), "standalone_question": question, "language": lang}
    retrieved = search_book(env, question, state.get("book_id"), chapters=search_scope(state),
                           read_up_to=state.get("read_up_to"))
    update.update(passages=retrieved["passages"], local_context=retrieved["local_context"],
                  notices=[RESET, *retrieved.get("notices", [])])
    passages: list[Passage] = retrieved["passages"]
    lines = [prompts.text(lang, "retrieval_only_head"), ""]
    if not passages:
        lines.append(prompts.text(lang, "retrieval_only_none"))
    for i, p in enumerate(passages, start=1):
        snippet = " ".join(p.text.split())
        snippet = snippet if len(snippet) <= RETRIEVAL_ONLY_CHARS else snippet[:RETRIEVAL_ONLY_CHARS] + "…"
        lines.append(f"[{i}] {p.label()}\n{snippet}\n")  # [i] is the rank; no raw score for readers
    lines += ["", prompts.text(lang, "retrieval_only_howto")]
    answer = "\n".join(lines)
    update.update(answer=answer, answer_mode="retrieval_only",
                  messages=[HumanMessage(question), AIMessage(answer)])
    return update
