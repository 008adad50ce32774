"""Shared test helpers: settings isolated from the developer's env and .env, scripted models."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"

_ENV_PREFIXES = ("LLM_", "SEARCH_", "BOCHA_", "TAVILY_", "SEARXNG_", "EMBEDDING_", "CHROMA_", "RETRIEVAL_",
                 "MAX_WEB_ROUNDS", "DATA_DIR", "OLLAMA_", "EVAL_LOG", "ACTIVE_BOOK")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's .env or keys, or finds a local Ollama."""
    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_AUTODETECT", "false")
    monkeypatch.chdir(tmp_path)  # so a stray .env in the repo is not read


def make_settings(**overrides: Any):
    from rag.config import Settings

    return Settings(_env_file=None, **overrides)


def responder(route: str | dict | Exception | list = "complex", evaluations: list[Any] | None = None,
              answer: str | Exception = "answer [1]", rewrite: str = "rewritten question") -> Callable[..., Any]:
    """A ScriptedChatModel responder that answers by schema: RouteDecision, Evaluation, text."""
    evals = list(evaluations or [])
    routes = list(route) if isinstance(route, list) else None

    def reply(messages: list[Any], *, schema: str | None) -> Any:
        if schema == "RouteDecision":
            r = routes.pop(0) if routes is not None else route
            if isinstance(r, (dict, Exception)) or (isinstance(r, str) and r not in ("simple", "complex")):
                return r
            return {"reason": f"scripted {r}", "strategy": r}
        if schema == "Evaluation":
            if not evals:
                raise AssertionError("unexpected extra evaluation call")
            return evals.pop(0)
        system = str(messages[0].content) if messages else ""
        if "standalone question" in system:
            return rewrite
        return answer

    return reply


def ev(enough: bool, missing: list[str] | None = None, web_query: str | None = None,
       confidence: float = 0.8, reason: str = "scripted") -> dict[str, Any]:
    return {"reason": reason, "enough": enough, "missing": missing or [], "web_query": web_query,
            "confidence": confidence}
