"""Run the judge, the router, or the whole answer path over labelled cases.

The judge and the router are called exactly as the graph calls them: the same prompt builders
(``rag.agent.judge.judge_messages`` / ``rag.agent.context.route_messages``), the same context formatting
(``format_book_context``), the same schema, the temperature-0 copy of the model (``judge_model``)
and the same one-retry policy (``structured_with_retry``). A case whose reply is invalid twice is
counted as "not enough" (judge) or "complex" (router) - what the graph would then do - and is
also counted in the invalid-JSON figures.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag.agent import prompts
from rag.agent.context import format_book_context, route_messages
from rag.agent.judge import JudgeConfig, JudgeRequest, judge, structured_with_retry
from rag.errors import LLMError, LLMOutputError
from rag.eval.cases import Case, RouteCase
from rag.eval.metrics import binary_metrics, confusion, latency_summary, per_group, ratio, risk_coverage
from rag.llm import MethodCache, judge_model, model_name
from rag.schemas import Evaluation, Passage, RouteDecision

logger = logging.getLogger(__name__)

WEB_RULES = {"first": prompts.WEB_QUERY_RULE_FIRST, "none": prompts.WEB_QUERY_RULE_NONE}


@dataclass
class CallStats:
    """One structured call with its retry: how many attempts, which failed and why, how long."""

    attempts: int
    invalid_replies: int  # replies that were not valid JSON / did not fit the schema
    call_errors: int  # attempts that got no reply (HTTP error, timeout, refused connection)
    latency_s: float
    errors: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.attempts > self.invalid_replies + self.call_errors


def _structured(judge_llm: Any, schema: type, messages: list[Any], method: str) -> tuple[Any | None, CallStats]:
    started = time.perf_counter()
    result, errors = structured_with_retry(judge_llm, schema, messages, method)
    latency = time.perf_counter() - started
    invalid = sum(1 for e in errors if isinstance(e, LLMOutputError))
    stats = CallStats(attempts=len(errors) + (1 if result is not None else 0), invalid_replies=invalid,
                      call_errors=len(errors) - invalid, latency_s=latency, errors=[str(e) for e in errors])
    return result, stats


def _check_reachable(index: int, stats: CallStats) -> None:
    """The first case got no reply at all: the model is not there. Stop instead of timing out N times."""
    if index == 0 and stats.call_errors and stats.call_errors == stats.attempts:
        raise LLMError(f"the model did not answer: {stats.errors[-1]}")


# --------------------------------------------------------------------------- judge
@dataclass
class JudgeOutcome:
    case: Case
    predicted_enough: bool  # what the graph acts on (an invalid reply counts as not enough)
    evaluation: Evaluation | None
    stats: CallStats
    tokens: int = 0  # prompt + completion tokens the endpoint reported (0 when it reports none)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.case.id, "kind": self.case.kind, "label_enough": self.case.label_enough,
                "tokens": self.tokens,
                "predicted_enough": self.predicted_enough, "correct": self.predicted_enough == self.case.label_enough,
                "valid": self.stats.valid, "attempts": self.stats.attempts,
                "invalid_replies": self.stats.invalid_replies, "call_errors": self.stats.call_errors,
                "latency_s": round(self.stats.latency_s, 4), "errors": self.stats.errors,
                "evaluation": evaluation_record(self.evaluation) if self.evaluation else None}


def evaluation_record(evaluation: Evaluation) -> dict[str, Any]:
    """An evaluation as the reports write it: each part's detail as its English text (``str``), so
    reports stay comparable with the ones before the details became message codes."""
    data = evaluation.model_dump()
    for part, dumped in zip(evaluation.parts, data["parts"], strict=True):
        dumped["detail"] = str(part.detail)
    return data


def _judge_stats(errors: list[LLMError], invalid: bool, latency: float) -> CallStats:
    bad = sum(1 for e in errors if isinstance(e, LLMOutputError))
    return CallStats(attempts=len(errors) + (0 if invalid else 1), invalid_replies=bad,
                     call_errors=len(errors) - bad, latency_s=latency, errors=[str(e) for e in errors])


def judge_case(judge_llm: Any, case: Case, config: JudgeConfig, *, web_rule: str = "first",
               methods: MethodCache | None = None, small: bool = False) -> JudgeOutcome:
    """One case through ``rag.agent.judge.judge``, exactly as the graph's evaluate node calls it
    (``config.max_passage_chars`` of each passage, no budget for them all); ``small``: through the
    small turn's extraction (``rag.agent.extract``) instead, as that profile's evaluate node calls it."""
    from langchain_core.callbacks import get_usage_metadata_callback

    from rag.agent.extract import extract

    passages = case.passages()
    started = time.perf_counter()
    with get_usage_metadata_callback() as usage:
        if small:
            judged = extract(judge_llm, case.question, passages, config=config, methods=methods).judged
        else:
            context = format_book_context(passages, config.passage_chars(len(passages)))
            request = JudgeRequest(case.question, passages, context=context, web_query_rule=WEB_RULES[web_rule])
            judged = judge(judge_llm, request, config, methods=methods)
    stats = _judge_stats(judged.errors, judged.invalid, time.perf_counter() - started)
    tokens = sum(int(u.get("total_tokens", 0)) for u in usage.usage_metadata.values())
    return JudgeOutcome(case=case, predicted_enough=judged.evaluation.enough,
                        evaluation=None if judged.invalid else judged.evaluation, stats=stats, tokens=tokens)


def as_guarded(outcome: JudgeOutcome) -> JudgeOutcome:
    """An evidence-mode outcome decided as guarded mode would: the same reply, and "enough" only
    when the model said so too (``rag.agent.judge.decide``)."""
    ev = outcome.evaluation
    if ev is None:
        return outcome
    guarded = ev.model_copy(update={"enough": ev.enough and bool(ev.model_enough), "mode": "guarded"})
    return replace(outcome, predicted_enough=guarded.enough, evaluation=guarded)


def run_judge(cases: Sequence[Case], llm: Any, config: JudgeConfig, *, web_rule: str = "first",
              on_result: Callable[[int, JudgeOutcome], None] | None = None,
              methods: MethodCache | None = None, small: bool = False) -> list[JudgeOutcome]:
    """Judge every case (``methods``: what "auto" learns of the endpoint, kept across the cases).
    Raises LLMError when the very first call gets no reply at all."""
    judge_llm = judge_model(llm)
    methods = methods if methods is not None else MethodCache()
    outcomes: list[JudgeOutcome] = []
    for i, case in enumerate(cases):
        outcome = judge_case(judge_llm, case, config, web_rule=web_rule, methods=methods, small=small)
        _check_reachable(i, outcome.stats)
        outcomes.append(outcome)
        if on_result:
            on_result(i, outcome)
    return outcomes


def _call_figures(stats: Sequence[CallStats]) -> dict[str, Any]:
    calls = sum(s.attempts for s in stats)
    invalid = sum(s.invalid_replies for s in stats)
    return {
        "calls": calls,
        "invalid_json_replies": invalid,
        "invalid_json_rate": ratio(invalid, calls),  # per call (a retried case counts its bad reply)
        "call_errors": sum(s.call_errors for s in stats),
        "cases_without_valid_reply": sum(1 for s in stats if not s.valid),
        "mean_latency_per_call_s": ratio(sum(s.latency_s for s in stats), calls),
        "latency_per_case_s": latency_summary(s.latency_s for s in stats),
    }


def summarize_judge(outcomes: Sequence[JudgeOutcome]) -> dict[str, Any]:
    """Metrics with "not enough" as the positive class (the decision that sends for more context)."""
    labels = [not o.case.label_enough for o in outcomes]
    preds = [not o.predicted_enough for o in outcomes]
    metrics = binary_metrics(labels, preds)
    name = {True: "enough", False: "not_enough"}
    kinds = [o.case.kind for o in outcomes]
    per_kind = per_group(kinds, [o.case.label_enough for o in outcomes], [o.predicted_enough for o in outcomes])
    for kind, row in per_kind.items():
        group = [o for o in outcomes if o.case.kind == kind]
        row["label_enough"] = group[0].case.label_enough
        row["predicted_enough"] = sum(1 for o in group if o.predicted_enough)
        row["invalid"] = sum(1 for o in group if not o.stats.valid)
    valid = [o for o in outcomes if o.stats.valid]
    valid_metrics = binary_metrics([not o.case.label_enough for o in valid], [not o.predicted_enough for o in valid])
    return {
        **evidence_figures(outcomes),
        "n": len(outcomes),
        "positive_class": "not_enough",
        "metrics": metrics.as_dict(),
        "confusion": confusion([name[o.case.label_enough] for o in outcomes],
                               [name[o.predicted_enough] for o in outcomes], ["enough", "not_enough"]),
        "per_kind": per_kind,
        "valid_only": valid_metrics.as_dict(),
        **_call_figures([o.stats for o in outcomes]),
    }


def evidence_figures(outcomes: Sequence[JudgeOutcome]) -> dict[str, Any]:
    """What makes "enough" safe: how often an unanswerable case was let through (false-enough),
    how often an answerable one was recognised, whether every "enough" carries verified evidence,
    how many quotes verified, how often the model's verdict and the code's agree, and whether
    confidence ranks verdicts (risk-coverage, AURC)."""
    unanswerable = [o for o in outcomes if not o.case.label_enough]
    answerable = [o for o in outcomes if o.case.label_enough]
    enough = [o for o in outcomes if o.predicted_enough]
    evaluations = [o.evaluation for o in outcomes if o.evaluation is not None]
    quoted = [p for e in evaluations for p in e.parts if p.status != "not_found"]
    with_model = [o for o in outcomes if o.evaluation is not None and o.evaluation.model_enough is not None]
    return {
        "false_enough": sum(1 for o in unanswerable if o.predicted_enough),
        "false_enough_rate": ratio(sum(1 for o in unanswerable if o.predicted_enough), len(unanswerable)),
        "answerable_enough": sum(1 for o in answerable if o.predicted_enough),
        "answerable_enough_rate": ratio(sum(1 for o in answerable if o.predicted_enough), len(answerable)),
        "enough_with_verified_evidence": sum(
            1 for o in enough if o.evaluation and o.evaluation.parts
            and all(p.status == "verified" for p in o.evaluation.parts)),
        "enough_verdicts": len(enough),
        "quotes": len(quoted),
        "quote_verification_rate": ratio(sum(1 for p in quoted if p.status == "verified"), len(quoted)),
        "model_enough": sum(1 for o in with_model if o.evaluation and o.evaluation.model_enough),
        "model_code_agreement": ratio(sum(1 for o in with_model if o.evaluation
                                          and o.evaluation.model_enough == o.predicted_enough), len(with_model)),
        "tokens_per_case": ratio(sum(o.tokens for o in outcomes), len(outcomes)),
        "risk_coverage": risk_coverage([o.evaluation.confidence if o.evaluation else 0.0 for o in outcomes],
                                       [o.predicted_enough == o.case.label_enough for o in outcomes]),
    }


# --------------------------------------------------------------------------- router
@dataclass
class RouteOutcome:
    case: RouteCase
    predicted: str  # what the graph acts on (an invalid reply counts as "complex")
    decision: RouteDecision | None
    stats: CallStats
    router: str = ""  # what the router alone said (before the book-term override)
    book_terms: list[str] = field(default_factory=list)  # why the override sent a "simple" question to the book

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.case.id, "kind": self.case.kind, "label": self.case.label_strategy,
                "predicted": self.predicted, "correct": self.predicted == self.case.label_strategy,
                "router": self.router, "book_terms": self.book_terms,
                "valid": self.stats.valid, "attempts": self.stats.attempts,
                "invalid_replies": self.stats.invalid_replies, "call_errors": self.stats.call_errors,
                "latency_s": round(self.stats.latency_s, 4), "errors": self.stats.errors,
                "reason": self.decision.reason if self.decision else None}


def run_route(cases: Sequence[RouteCase], llm: Any, *, method: str, book_title: str | None = None,
              book_terms: Callable[[str], list[str]] | None = None,
              on_result: Callable[[int, RouteOutcome], None] | None = None) -> list[RouteOutcome]:
    """Route every case as the graph does: the router, then (with ``book_terms``, the loaded book's
    check) a "simple" question that names what the book uses goes to retrieval."""
    judge = judge_model(llm)
    outcomes: list[RouteOutcome] = []
    for i, case in enumerate(cases):
        decision, stats = _structured(judge, RouteDecision, route_messages(case.question, book_title), method)
        _check_reachable(i, stats)
        router = decision.strategy if decision else "complex"
        terms = book_terms(case.question) if book_terms is not None and router == "simple" else []
        outcome = RouteOutcome(case=case, predicted="complex" if terms else router, decision=decision, stats=stats,
                               router=router, book_terms=terms)
        outcomes.append(outcome)
        if on_result:
            on_result(i, outcome)
    return outcomes


def summarize_route(outcomes: Sequence[RouteOutcome]) -> dict[str, Any]:
    """Metrics with "simple" as the positive class: the branch that answers without the book."""
    labels = [o.case.label_strategy for o in outcomes]
    preds = [o.predicted for o in outcomes]
    metrics = binary_metrics([y == "simple" for y in labels], [p == "simple" for p in preds])
    router_only = binary_metrics([y == "simple" for y in labels], [o.router == "simple" for o in outcomes])
    return {
        "n": len(outcomes),
        "router_only": router_only.as_dict(),
        "overridden": sum(1 for o in outcomes if o.book_terms),
        "positive_class": "simple",
        "metrics": metrics.as_dict(),
        "confusion": confusion(labels, preds, ["simple", "complex"]),
        "per_kind": per_group([o.case.kind for o in outcomes], labels, preds),
        **_call_figures([o.stats for o in outcomes]),
    }


# --------------------------------------------------------------------------- answers (hallucination risk)
#: Phrases by which an answer says that something cannot be confirmed from its sources. The fixed
#: texts the generate prompt asks for come first; the rest are common paraphrases.
MISSING_MARKERS: tuple[str, ...] = (
    prompts.text("zh", "cannot_confirm"), prompts.text("en", "cannot_confirm"),
    prompts.text("zh", "missing_heading"), prompts.text("en", "missing_heading"),
    "无法确认", "无法从", "未能确认", "不能确认", "无从", "未提及", "没有提及", "没有提到", "未提到", "未说明",
    "没有说明", "没有给出", "未给出", "没有涉及", "未涉及", "不包含", "没有包含", "没有相关", "没有关于", "资料中没有",
    "来源中没有", "尚缺", "缺少", "缺失",
    "cannot confirm", "cannot be confirmed", "can't confirm", "could not be confirmed", "not mentioned",
    "does not mention", "do not mention", "not covered", "does not say", "do not say", "no information",
    "not stated", "not provided", "missing",
)


def states_missing(answer: str) -> bool:
    low = answer.lower()
    return any(marker.lower() in low for marker in MISSING_MARKERS)


_CITATION = re.compile(r"\[\d+\]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def unsupported_numbers(answer: str, sources: str) -> list[str]:
    """Arabic numbers in the answer (citation marks aside) that neither the sources nor the question
    contain: a cheap, checkable sign of a fact supplied from memory (an invented year, episode, count)."""
    found = _NUMBER.findall(_CITATION.sub(" ", answer))
    return sorted({n for n in found if n not in sources})


@dataclass
class AnswerOutcome:
    case: Case
    answer: str
    answer_mode: str  # full | partial | direct | fallback | error
    judged_enough: bool | None  # the last evaluation's verdict (None: no evaluation ran)
    states_missing: bool
    asserted: list[str]  # the case's missing-fact strings that the answer states anyway
    latency_s: float
    error: str | None = None
    unsupported: list[str] = field(default_factory=list)  # numbers in the answer found in no source
    checks: list[Any] = field(default_factory=list)  # the verify_answer node's SentenceChecks

    @property
    def at_risk(self) -> bool:
        """The answer does not say what is missing, or states a fact the sources do not hold."""
        return self.error is not None or not self.states_missing or bool(self.asserted) or bool(self.unsupported)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.case.id, "kind": self.case.kind, "answer_mode": self.answer_mode,
                "judged_enough": self.judged_enough, "states_missing": self.states_missing,
                "asserted_missing_facts": self.asserted, "unsupported_numbers": self.unsupported,
                "at_risk": self.at_risk,
                "sentences": [{"status": c.status, "citations": c.citations, "reason": str(c.reason), "text": c.text}
                              for c in self.checks],
                "latency_s": round(self.latency_s, 4), "error": self.error, "answer": self.answer}


def answer_case(graph_factory: Callable[[Case], Any], case: Case) -> AnswerOutcome:
    """Run the whole graph (route, retrieve = the case's passages, evaluate, generate; no web)."""
    graph = graph_factory(case)
    config = {"configurable": {"thread_id": f"eval-{uuid.uuid4().hex}"}, "recursion_limit": 50}
    started = time.perf_counter()
    try:
        values = graph.invoke({"question": case.question}, config)
    except Exception as exc:  # noqa: BLE001 - a failing case is a result, not a crash
        logger.warning("case %s failed: %s", case.id, exc)
        return AnswerOutcome(case=case, answer="", answer_mode="error", judged_enough=None, states_missing=False,
                             asserted=[], latency_s=time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    answer = str(values.get("answer") or "")
    # the model's own text: the app's first line (what the sources do not cover) says what is missing
    # for every model alike, so it is not what this measures
    own = answer[int(values.get("answer_from") or 0):]
    evaluations = values.get("evaluations") or []
    return AnswerOutcome(
        case=case, answer=answer, answer_mode=str(values.get("answer_mode") or "?"),
        judged_enough=evaluations[-1].enough if evaluations else None,
        states_missing=states_missing(own),
        asserted=[s for s in case.answer_strings if s in own],
        unsupported=unsupported_numbers(own, case.context_text + "\n" + case.question),
        checks=list(values.get("answer_checks") or []),
        latency_s=time.perf_counter() - started)


class StaticRetriever:
    """The retriever of an answer evaluation: whatever the query, the case's own context passages
    (those of ``book_id`` when asked for one book), so the graph answers from exactly that context."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None,
                 chapters: tuple[int, int] | None = None) -> list[Passage]:
        hits = [p for p in self.passages if (book_id is None or p.book_id in ("", book_id))
                and (chapters is None or p.chapter_num is None or chapters[0] <= p.chapter_num <= chapters[1])]
        return hits[: k or len(hits)]


def make_graph_factory(settings: Any, llm: Any, *, few_shot: bool) -> Callable[[Case], Any]:
    """A graph per case whose retriever returns exactly the case's passages; no web, no eval log."""
    from rag.agent.deps import Deps
    from rag.agent.graph import build_graph

    def factory(case: Case) -> Any:
        deps = Deps(settings=settings, llm=llm, retriever=StaticRetriever(case.passages()), web_search=None,
                    eval_log=None, few_shot=few_shot)
        return build_graph(deps)

    return factory


def run_answers(cases: Sequence[Case], graph_factory: Callable[[Case], Any],
                on_result: Callable[[int, AnswerOutcome], None] | None = None) -> list[AnswerOutcome]:
    outcomes: list[AnswerOutcome] = []
    for i, case in enumerate(cases):
        outcome = answer_case(graph_factory, case)
        outcomes.append(outcome)
        if on_result:
            on_result(i, outcome)
    return outcomes


def summarize_answers(outcomes: Sequence[AnswerOutcome]) -> dict[str, Any]:
    n = len(outcomes)
    modes: dict[str, int] = {}
    for o in outcomes:
        modes[o.answer_mode] = modes.get(o.answer_mode, 0) + 1
    return {
        "n": n,
        "states_missing_rate": ratio(sum(o.states_missing for o in outcomes), n),
        "asserts_missing_fact_rate": ratio(sum(bool(o.asserted) for o in outcomes), n),
        "unsupported_numbers_rate": ratio(sum(bool(o.unsupported) for o in outcomes), n),
        "at_risk_rate": ratio(sum(o.at_risk for o in outcomes), n),
        "judged_enough_rate": ratio(sum(1 for o in outcomes if o.judged_enough), n),
        "answer_modes": modes,
        **citation_figures([c for o in outcomes for c in o.checks]),
        "errors": sum(1 for o in outcomes if o.error),
        "latency_per_case_s": latency_summary(o.latency_s for o in outcomes),
    }


def citation_figures(checks: Sequence[Any]) -> dict[str, Any]:
    """Citation recall: the share of sentences that state something whose citations support them;
    citation precision: the share of cited sentences that their citations support."""
    claims = [c for c in checks if c.status != "no_claim"]
    cited = [c for c in claims if c.citations]
    supported = sum(1 for c in claims if c.status == "supported")
    return {"sentences": len(claims), "citation_recall": ratio(supported, len(claims)),
            "citation_precision": ratio(supported, len(cited)),
            "uncited_sentences": sum(1 for c in claims if c.status == "uncited")}


def model_label(llm: Any) -> str:
    return model_name(llm)
