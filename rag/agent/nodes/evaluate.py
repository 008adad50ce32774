"""``evaluate``: the judge (``rag.agent.judge``) on the passages and web results found so far, one
eval-log record per evaluation, and the edge after it (``after_evaluate``)."""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from rag.agent.judge import judge
from rag.agent.names import EVALUATE, FALLBACK, GENERATE, WEB_SEARCH
from rag.agent.nodes.common import NodeBase, current_question, web_allowed
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


class EvaluateNode(NodeBase):
    def evaluate(self, state: GraphState) -> dict[str, Any]:
        question = current_question(state)
        round_no = len(state.get("evaluations") or []) + 1
        rounds = len(state.get("web_rounds") or [])
        passages = state.get("passages") or []
        web_results = state.get("web_results") or []
        notices: list[Notice] = []
        invalid = False
        started = time.monotonic()
        if not passages and not web_results:
            evaluation = Evaluation(reason="Nothing was retrieved, so nothing can answer the question.",
                                    enough=False, missing=[question], web_query=None if rounds else question,
                                    confidence=1.0, mode=self.settings.judge_mode)
        else:
            evaluation, invalid, notices = self._judge(state, question, rounds)
        self._log_evaluation(state, evaluation, round_no, time.monotonic() - started, invalid=invalid)
        return {"evaluations": [evaluation], "notices": notices}

    def _judge(self, state: GraphState, question: str, rounds: int) -> tuple[Evaluation, bool, list[Notice]]:
        """The judge's evaluation, whether its output was invalid (not: unreachable), and the notices."""
        passages = state.get("passages") or []
        web_results = state.get("web_results") or []
        judged = judge(self.judge_llm, question, passages, web_results, context=self._judge_context(state),
                       mode=self.settings.judge_mode, method=self.settings.llm_structured_method,
                       few_shot=self._few_shot, web_query_rule=self._web_query_rule(state, rounds),
                       max_chars=self.passage_chars(len(passages)), relevance=self.settings.judge_relevance_check,
                       evidence=self.settings.judge_evidence)
        errors = [self.error(e) for e in judged.errors]
        evaluation = judged.evaluation.model_copy(update={"reason": redact(judged.evaluation.reason, self.deps.secrets)})
        notices: list[Notice] = []
        invalid = False
        if judged.invalid:
            # A model that could not be reached is not a model that wrote bad JSON (the eval log keeps them apart).
            invalid = judged.invalid_output
            code = "agent.eval_invalid" if invalid else "agent.eval_unreachable"
            notices.append(self._n(EVALUATE, code, "warning", error=errors[-1]))
        elif errors:
            notices.append(self._n(EVALUATE, "agent.eval_retried", error=errors[0]))
        unverified = [p for p in evaluation.parts if p.status == "unverified"]
        if evaluation.model_enough and not evaluation.enough and unverified:
            notices.append(self._n(EVALUATE, "agent.judge_overruled", "warning", unverified=len(unverified),
                                   parts=len(evaluation.parts)))
        return evaluation, invalid, notices

    def _log_evaluation(self, state: GraphState, evaluation: Evaluation, round_no: int, latency: float, *,
                        invalid: bool) -> None:
        """One eval-log record with what this evaluation knows. Where the graph goes next is decided
        by the edge after this node, not predicted here."""
        if self.deps.eval_log is None:
            return
        web_rounds = state.get("web_rounds") or []
        last = web_rounds[-1] if round_no > 1 and web_rounds else None
        searched = None if last is None else {"query": last["query"], "provider": last["provider"],
                                              "results": len(last["results"]),
                                              "error": None if last["error"] is None else str(last["error"])}
        record = eval_record(question=current_question(state), model=model_name(self.llm), round_no=round_no,
                             evaluation=evaluation, latency=latency, searched=searched, invalid=invalid)
        try:
            self.deps.eval_log(record)
        except Exception:  # noqa: BLE001 - logging must never break a turn
            logger.exception("could not write the evaluation log")
