"""``evaluate``: the judge (``rag.agent.judge``) on the passages and web results found so far, one
eval-log record per evaluation, and the edge after it (``after_evaluate``)."""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from rag.agent.extract import extract
from rag.agent.judge import JudgeRequest, judge
from rag.agent.names import EVALUATE, FALLBACK, GENERATE, WEB_SEARCH
from rag.agent.nodes.common import Env, current_question, judge_context, web_allowed, web_query_rule
from rag.agent.state import GraphState, Notice
from rag.llm import model_name
from rag.logs import redact
from rag.schemas import Evaluation

logger = logging.getLogger(__name__)


def after_evaluate(state: GraphState, *, web_enabled: bool, max_web_rounds: int) -> str:
    """Where to go after an evaluation (GENERATE, WEB_SEARCH or FALLBACK). Termination: every
    web_search adds one web round, and no web_search happens once ``max_web_rounds`` rounds exist."""
    evaluations = state.get("evaluations") or []
    if evaluations and evaluations[-1].enough:
        return GENERATE
    if web_allowed(state, web_enabled) and len(state.get("web_rounds") or []) < max_web_rounds:
        return WEB_SEARCH
    if not state.get("passages") and not state.get("web_results"):
        return FALLBACK
    return GENERATE


def eval_record(*, question: str, model: str, round_no: int, evaluation: Evaluation, latency: float,
                searched: dict[str, Any] | None, invalid: bool) -> dict[str, Any]:
    """One eval-log record (``Deps.eval_log``): the verdict, its round, its latency, and the web
    search it judged (None in round 1)."""
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "model": model,
        "question_hash": hashlib.sha256(question.encode("utf-8")).hexdigest()[:16],
        "question": question,
        "round": round_no,
        "evaluation": evaluation.model_dump(),
        "latency_s": round(latency, 4),
        "searched": searched,
        "invalid_json": invalid,
    }


def evaluate(state: GraphState, env: Env) -> dict[str, Any]:
    question = current_question(state)
    rounds = len(state.get("web_rounds") or [])
    passages = state.get("passages") or []
    web_results = state.get("web_results") or []
    notices: list[Notice] = []
    invalid = False
    started = time.monotonic()
    if not passages and not web_results:
        evaluation = Evaluation(reason="Nothing was retrieved, so nothing can answer the question.",
                                enough=False, missing=[question], web_query=None if rounds else question,
                                confidence=1.0, mode=env.config.judge.mode)
    else:
        evaluation, invalid, notices = _judge(state, env, question)
    _log_evaluation(state, env, evaluation, latency=time.monotonic() - started, invalid=invalid)
    return {"evaluations": [evaluation], "notices": notices}


def _judge(state: GraphState, env: Env, question: str) -> tuple[Evaluation, bool, list[Notice]]:
    """The judge's evaluation, whether its output was invalid (not: unreachable), and the notices."""
    passages = state.get("passages") or []
    web_results = state.get("web_results") or []
    if env.config.extract_answer:  # the small turn: the model copies the answer out of chosen sentences
        judged = extract(env.judge_model, question, passages, web_results, config=env.config.judge,
                         methods=env.deps.methods).judged
    else:
        rule = web_query_rule(state, env.config, len(state.get("web_rounds") or []))
        request = JudgeRequest(question, passages, web_results, context=judge_context(state), web_query_rule=rule)
        judged = judge(env.judge_model, request, env.config.judge, methods=env.deps.methods)
    errors = [env.error(e) for e in judged.errors]
    evaluation = judged.evaluation.model_copy(update={"reason": redact(judged.evaluation.reason, env.deps.secrets)})
    notices: list[Notice] = []
    invalid = False
    if judged.invalid:
        # A model that could not be reached is not a model that wrote bad JSON (the eval log keeps them apart).
        invalid = judged.invalid_output
        code = "agent.eval_invalid" if invalid else "agent.eval_unreachable"
        notices.append(env.n(EVALUATE, code, "warning", error=errors[-1]))
    elif errors:
        notices.append(env.n(EVALUATE, "agent.eval_retried", error=errors[0]))
    unverified = [p for p in evaluation.parts if p.status == "unverified"]
    if evaluation.model_enough and not evaluation.enough and unverified:
        notices.append(env.n(EVALUATE, "agent.judge_overruled", "warning", unverified=len(unverified),
                               parts=len(evaluation.parts)))
    return evaluation, invalid, notices


def _log_evaluation(state: GraphState, env: Env, evaluation: Evaluation, *, latency: float,
                    invalid: bool) -> None:
    """One eval-log record with what this evaluation knows. Where the graph goes next is decided
    by the edge after this node, not predicted here."""
    if env.deps.eval_log is None:
        return
    round_no = len(state.get("evaluations") or []) + 1
    web_rounds = state.get("web_rounds") or []
    last = web_rounds[-1] if round_no > 1 and web_rounds else None
    searched = None if last is None else {"query": last["query"], "provider": last["provider"],
                                          "results": len(last["results"]),
                                          "error": None if last["error"] is None else str(last["error"])}
    record = eval_record(question=current_question(state), model=model_name(env.answer_model), round_no=round_no,
                         evaluation=evaluation, latency=latency, searched=searched, invalid=invalid)
    try:
        env.deps.eval_log(record)
    except Exception:  # noqa: BLE001 - logging must never break a turn
        logger.exception("could not write the evaluation log")
