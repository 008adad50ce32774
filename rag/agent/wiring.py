"""Build real dependencies from settings (the only place that creates clients)."""

from __future__ import annotations

import logging
from typing import Any

from rag.agent.deps import Deps
from rag.agent.evallog import JsonlEvalLog
from rag.agent.rewrite import QueryRewriter
from rag.config import Settings, for_local_model
from rag.llm import is_local_model, judge_model, make_chat_model
from rag.logs import remember_secrets, secrets_of

logger = logging.getLogger(__name__)


def make_web_search_or_none(settings: Settings) -> Any | None:
    """The configured web search (raises ConfigError for an unknown provider or a missing key)."""
    if not settings.web_enabled:
        return None
    from rag.search import make_web_search

    return make_web_search(settings)


def make_deps(settings: Settings, *, index: Any | None = None, llm: Any | None = None,
              web_search: Any | None = None, local: Any | None = None) -> Deps:
    """Deps for the app and CLI. ``index`` is the book index (a Retriever); explicit ``llm`` and
    ``web_search`` override what the settings would build; ``local`` (a ``rag.local.LocalModel``)
    gives the embedded model when the settings use it and it is ready. Raises ConfigError on bad
    settings."""
    llm = llm if llm is not None else make_chat_model(settings, local=local)
    if llm is not None and is_local_model(llm):
        settings = for_local_model(settings)
    return Deps(
        settings=settings,
        llm=llm,
        retriever=index,
        web_search=web_search if web_search is not None else make_web_search_or_none(settings),
        eval_log=JsonlEvalLog(settings.eval_log_path) if settings.eval_log_enabled else None,
        few_shot=settings.judge_few_shot,
        secrets=remember_secrets(secrets_of(settings)),  # kept out of every log line too
        rewriter=QueryRewriter(judge_model(llm)) if llm is not None and settings.query_rewrite else None,
    )
