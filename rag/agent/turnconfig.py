"""``TurnConfig``: everything a turn's nodes and its judge read from the configuration, fixed for the
turn. It is built once (``turn_config``) from the settings (the session's own, with its overrides:
the page builds its ``Deps`` from them), the injected dependencies and the model's profile
(``rag.agent.profile``), whose differences arrive here as data: no node asks which profile runs.

Frozen: a node cannot change what a later node reads, and a turn's settings cannot change under it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rag.agent.deps import Deps
from rag.agent.judge import JudgeConfig
from rag.agent.profile import PROFILES, Profile, hosted_capable, passage_budget, small_model, turn_profile


@dataclass(frozen=True)
class TurnConfig:
    profile: Profile
    judge: JudgeConfig
    route_by_code_first: bool  # the book-term check decides before the router is asked
    rewrite_query: bool  # the query rewrite runs (when a rewriter is injected)
    answer_after_judge: bool  # the answer is asked for after the judge's own prompt and findings
    extract_answer: bool  # the model copies the answer out of chosen sentences (``rag.agent.extract``)
    ask_router: bool  # with a book chosen, the router decides whether the question is about it
    web_enabled: bool  # a web search is injected and rounds are allowed
    max_web_rounds: int
    retrieval_k: int  # passages of one book search
    search_count: int  # results of one web search
    turn_timeout: float  # seconds of the whole turn (named when an answer is cut)
    stream_idle_timeout: float  # seconds an answer may stall before it is cut
    verify_answers: Literal["code", "llm", "off"]
    max_answer_chars: int | None = None  # a small model's streamed answer is cut here (None: no cap)

    def passage_chars(self, n_passages: int) -> int:
        """Characters of each book passage in a prompt, for the judge and the writer alike."""
        return self.judge.passage_chars(n_passages)


def turn_config(deps: Deps) -> TurnConfig:
    """The configuration of a turn run over ``deps``."""
    settings = deps.settings
    profile = turn_profile(settings, deps.llm)
    traits = PROFILES[profile]
    judging, retrieval, web, limits = settings.judge, settings.retrieval, settings.web, settings.limits
    # the model's checks (relevance of each verified part, a label per cited sentence) where they are
    # cheap and worth it: a hosted capable model in the full profile. The small turn asks its own model
    # whether each verified pick answers its part: one short call (about a second for a 1.5B on two
    # cores) that took its false "enough" from 5 to 2 of 30 held-out cases (docs/benchmarks.md)
    model_checks = profile == "full" and hosted_capable(deps.llm)
    judge = JudgeConfig(mode=judging.judge_mode, method=settings.llm.llm_structured_method,
                        few_shot=deps.few_shot and traits.few_shot, evidence=judging.judge_evidence,
                        relevance=(model_checks or traits.extract_answer) if judging.judge_relevance_check == "auto"
                        else bool(judging.judge_relevance_check), max_passage_chars=retrieval.max_passage_chars,
                        strict=small_model(deps.llm),
                        passage_budget=passage_budget(settings) if traits.fit_passages else None)
    return TurnConfig(profile=profile, judge=judge, route_by_code_first=traits.route_by_code_first,
                      rewrite_query=traits.rewrite_query, answer_after_judge=traits.answer_after_judge,
                      extract_answer=traits.extract_answer, ask_router=traits.ask_router,
                      web_enabled=deps.web_enabled, max_web_rounds=web.max_web_rounds,
                      retrieval_k=retrieval.retrieval_k, search_count=web.search_count,
                      turn_timeout=limits.turn_timeout, stream_idle_timeout=limits.stream_idle_timeout,
                      verify_answers=("llm" if model_checks else "code") if judging.verify_answers == "auto"
                      else judging.verify_answers,
                      max_answer_chars=(settings.llm.small_model_max_answer_chars or None) if small_model(deps.llm)
                      else None)
