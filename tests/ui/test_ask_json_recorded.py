"""``/ask_json``'s output, recorded: scripted turns through the real graph and the script API
(``rag.ui.api.ScriptApi.ask_json``, what the endpoint returns), compared as JSON text with what the
code returned when they were recorded, so that a refactoring of the records a turn produces (parts,
sentence checks, passages) or of the nodes cannot change what scripts read.

Only the timings (``total_s``, each trace entry's ``duration_s``) are masked: they differ on every
run. To record again after a deliberate change of the output: ``RECORD_ASK_JSON=1 pytest`` this file,
and review the diff of ``tests/ui/recorded/``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_ui.live import PASSAGES, QUESTION, WEB, scripted_responder

from rag.agent.deps import Deps
from rag.agent.graph import build_graph
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.ui.api import ScriptApi

RECORDED = Path(__file__).parent / "recorded"
TIMINGS = ("total_s", "duration_s")


def masked(value: Any) -> Any:
    """``value`` with every timing replaced by "<seconds>" (None stays None)."""
    if isinstance(value, dict):
        return {k: ("<seconds>" if k in TIMINGS and v is not None else masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def ask_json(deps: Deps, *args: Any, **kwargs: Any) -> str:
    api = ScriptApi(lambda owner: build_graph(deps))
    return json.dumps(masked(api.ask_json(*args, **kwargs)), ensure_ascii=False, indent=1) + "\n"


def full_turn() -> str:
    """A full-profile turn: not enough from the book, one web round, enough; four checked sentences."""
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake", turn_profile="full")
    model = ScriptedChatModel(responder=scripted_responder())
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    return ask_json(deps, QUESTION)


def compact_scoped_turn() -> str:
    """A compact-profile turn of a small model, scoped to chapters 20-40 and read up to chapter 27:
    no web (the spoiler limit), the answer written after the judge's prompt."""
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="qwen2.5-1.5b-instruct",
                             turn_profile="compact")
    model = ScriptedChatModel(responder=scripted_responder(), model_name="qwen2.5-1.5b-instruct")
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    return ask_json(deps, QUESTION, chapter_from=20, chapter_to=40, read_up_to=27)


def retrieval_only_turn() -> str:
    """No model: the passages as they are."""
    deps = Deps(settings=make_settings(), llm=None, retriever=FakeRetriever(PASSAGES))
    return ask_json(deps, QUESTION)


@pytest.mark.parametrize("turn", [full_turn, compact_scoped_turn, retrieval_only_turn], ids=lambda f: f.__name__)
def test_ask_json_output_is_as_recorded(turn) -> None:
    path = RECORDED / f"ask_json_{turn.__name__}.json"
    got = turn()
    if os.environ.get("RECORD_ASK_JSON"):
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no recording: run with RECORD_ASK_JSON=1 to make {path.name}"
    assert got == path.read_text(encoding="utf-8")
