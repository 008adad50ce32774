"""The embedded model end to end, with the tiny GGUF the tests write loaded by the real llama.cpp
runtime: the page starts retrieval-only, the banner follows the load, and the next question is
answered by the model (route, evaluate, generate ran); ``python -m rag ask`` with only
``LOCAL_MODEL_PATH`` set answers with it too. A tiny model of random weights writes nonsense: what
is checked is that the turn runs through the model, not what it says."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, make_settings
from fixtures_ui.live import PASSAGES, QUESTION
from fixtures_ui.pages import make_pages, new_session
from test_ui_pages_chat import ask

from rag.local import LocalModel
from rag.testing.fakes import FakeRetriever
from rag.testing.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("models") / "tiny.gguf")


def test_the_page_switches_from_retrieval_only_to_the_model_when_it_is_ready(tiny, tmp_path):
    from rag.agent.wiring import make_deps

    settings = make_settings(local_model_path=str(tiny), data_dir=tmp_path / "data", llm_max_tokens=48,
                             max_web_rounds=0, eval_log_enabled=False, turn_timeout=120, llm_timeout=60)
    local = LocalModel(settings)
    index = FakeRetriever(PASSAGES)
    deps = make_deps(settings, index=index, local=local)
    assert deps.llm is None  # not ready yet: retrieval-only
    pages = make_pages(deps, index=None, make_deps=lambda s, **kw: make_deps(s, local=local, **{"index": index, **kw}),
                       local=local)
    session = new_session(pages)
    banner = pages.shell.on_load(session, {}, None)[pages.layout.shell.banner]
    assert "mode-local-loading" in banner and "mode-retrieval-only" not in banner
    try:
        local.start(on_ready=pages.ctx.use_model)
        local.ensure(timeout=120)
        tick = pages.shell.on_banner_tick(session)
        assert "mode-local" in tick[pages.layout.shell.banner] and "tiny" in tick[pages.layout.shell.banner]
        assert tick[pages.layout.shell.banner_timer].active is False  # the banner stops ticking
        final = ask(pages, session, QUESTION)["final"]
        trace = final[pages.layout.chat.trace]
        assert 'data-node="retrieval_only"' not in trace
        assert 'data-node="evaluate"' in trace or 'data-node="direct_answer"' in trace
    finally:
        local.close()


def test_python_m_rag_ask_answers_with_the_file_given(tiny, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LOCAL_", "HF_"))}
    env.update({"LOCAL_MODEL_PATH": str(tiny), "DATA_DIR": str(tmp_path / "data"), "OLLAMA_AUTODETECT": "false",
                "LLM_MAX_TOKENS": "48", "MAX_WEB_ROUNDS": "0", "PYTHONPATH": str(REPO), "TURN_TIMEOUT": "120"})
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "rag", "ask", QUESTION], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=300)
    assert result.returncode in (0, 3), result.stderr[-2000:]
    assert "retrieval-only" not in result.stderr and "not available" not in result.stderr
    assert "[route_question" in result.stderr or "[evaluate" in result.stderr, result.stderr[-2000:]
    assert str(tiny.parent) not in result.stderr + result.stdout  # the model's folder is never printed
    assert time.monotonic() - started < 300


def test_an_unusable_model_file_leaves_the_cli_retrieval_only_with_one_line(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a model at all")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "LOCAL_", "HF_"))}
    env.update({"LOCAL_MODEL_PATH": str(bad), "DATA_DIR": str(tmp_path / "data"), "OLLAMA_AUTODETECT": "false",
                "PYTHONPATH": str(REPO)})
    result = subprocess.run([sys.executable, "-m", "rag", "ask", QUESTION], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=300)
    assert "The local model is not available" in result.stderr and "Traceback" not in result.stderr
    assert "retrieval-only" in result.stderr and str(tmp_path) not in result.stderr


def test_deps_without_the_manager_stay_retrieval_only(tiny, tmp_path):
    from rag.agent.wiring import make_deps

    deps = make_deps(make_settings(local_model_path=str(tiny), data_dir=tmp_path, eval_log_enabled=False))
    assert deps.llm is None and deps.mode == "retrieval_only"
