"""A turn's configuration (``rag.agent.turnconfig.TurnConfig``): built once from the settings, the
deps and the model's profile, frozen, with the profile's differences as data; and the nodes as
plain functions over it (no class tower)."""

from __future__ import annotations

import ast
import dataclasses

import pytest
from conftest import REPO, make_settings

from rag.agent.deps import Deps
from rag.agent.profile import PROFILES, passage_chars
from rag.agent.turnconfig import TurnConfig, turn_config
from rag.testing.fakes import FakeWebSearch, ScriptedChatModel


def model(name: str) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[], model_name=name)


def test_the_config_reads_the_settings_once_and_cannot_change() -> None:
    settings = make_settings(retrieval_k=4, search_count=3, max_web_rounds=2, judge_mode="guarded",
                             judge_evidence="sentence", verify_answers="llm", turn_timeout=33, turn_profile="full")
    config = turn_config(Deps(settings=settings, llm=model("big"), web_search=FakeWebSearch([])))
    assert (config.retrieval_k, config.search_count, config.max_web_rounds, config.turn_timeout) == (4, 3, 2, 33)
    assert (config.judge.mode, config.judge.evidence, config.verify_answers) == ("guarded", "sentence", "llm")
    assert config.web_enabled and config.judge.method == settings.llm_structured_method
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.retrieval_k = 9  # type: ignore[misc]
    assert not turn_config(Deps(settings=settings, llm=model("big"))).web_enabled  # no search injected


def test_the_profile_arrives_as_data() -> None:
    settings = make_settings(max_passage_chars=1000)
    full = turn_config(Deps(settings=settings, llm=model("qwen2.5:72b")))
    compact = turn_config(Deps(settings=make_settings(max_passage_chars=1000, turn_profile="compact"),
                               llm=model("qwen2.5-1.5b-instruct")))
    small = turn_config(Deps(settings=settings, llm=model("qwen2.5-1.5b-instruct")))
    assert (full.profile, compact.profile, small.profile) == ("full", "compact", "small")
    for config in (full, compact, small):
        traits = PROFILES[config.profile]
        assert (config.route_by_code_first, config.rewrite_query, config.answer_after_judge, config.judge.few_shot,
                config.extract_answer) == (traits.route_by_code_first, traits.rewrite_query,
                                           traits.answer_after_judge, traits.few_shot, traits.extract_answer)
    assert small.extract_answer and not compact.extract_answer and small.judge.strict
    assert full.passage_chars(8) == 1000 and full.judge.passage_budget is None  # every passage whole
    assert compact.passage_chars(8) == passage_chars(settings, 8) < 1000  # cut to fit the small context
    off = turn_config(Deps(settings=settings, llm=model("qwen2.5:72b"), few_shot=False))
    assert not off.judge.few_shot  # the deps' choice wins in either profile


def test_the_nodes_are_functions_and_no_class_there_inherits_another() -> None:
    for path in sorted((REPO / "rag" / "agent" / "nodes").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        assert all(not c.bases for c in classes), (path.name, [c.name for c in classes if c.bases])
    from rag.agent import nodes

    for name in ("route_question", "retrieve_local", "evaluate", "web_search", "generate", "verify_answer",
                 "direct_answer", "fallback", "retrieval_only"):
        assert callable(getattr(nodes, name)) and not isinstance(getattr(nodes, name), type)
    assert isinstance(TurnConfig, type) and dataclasses.is_dataclass(TurnConfig)


def test_the_models_checks_are_on_by_default_for_a_hosted_capable_model_only() -> None:
    """``VERIFY_ANSWERS=auto`` and ``JUDGE_RELEVANCE_CHECK=auto``: a label per cited sentence and a
    relevance call per verified part where they are cheap and worth it (a hosted API's model in the
    full profile; the relevance call in the small turn too), code alone elsewhere; an explicit setting
    wins."""
    from rag.llm import chat_openai

    settings = make_settings()

    def config(base: str, name: str, **overrides: object) -> TurnConfig:
        llm = chat_openai(make_settings(**overrides) if overrides else settings, base, "sk-test", name)
        return turn_config(Deps(settings=make_settings(**overrides) if overrides else settings, llm=llm))

    hosted = config("https://api.deepseek.com/v1", "deepseek-chat")
    assert (hosted.verify_answers, hosted.judge.relevance) == ("llm", True)
    for local in (config("http://127.0.0.1:8080/v1", "qwen2.5-72b"), config("http://gpu-box:8000/v1", "llama-70b"),
                  config("https://api.deepseek.com/v1", "deepseek-chat", turn_profile="compact")):
        assert (local.verify_answers, local.judge.relevance) == ("code", False)
    # the small turn asks its own model whether each verified pick answers its part (one short call)
    small = config("https://api.deepseek.com/v1", "qwen2.5-1.5b-instruct")
    assert small.extract_answer and (small.verify_answers, small.judge.relevance) == ("code", True)
    assert not config("https://api.deepseek.com/v1", "qwen2.5-1.5b-instruct", judge_relevance_check=False).judge.relevance
    scripted = turn_config(Deps(settings=settings, llm=model("big")))  # not an OpenAI-compatible client
    assert (scripted.verify_answers, scripted.judge.relevance) == ("code", False)
    pinned = config("https://api.deepseek.com/v1", "deepseek-chat", verify_answers="code", judge_relevance_check=False)
    assert (pinned.verify_answers, pinned.judge.relevance) == ("code", False)
    forced = turn_config(Deps(settings=make_settings(verify_answers="llm", judge_relevance_check=True), llm=model("big")))
    assert (forced.verify_answers, forced.judge.relevance) == ("llm", True)
