"""The graph's injected dependencies. Tests build ``Deps`` with fakes; the app with real clients
(see ``rag.agent.wiring.make_deps``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag.agent.rewrite import QueryRewriter
from rag.config import Settings, web_enabled
from rag.schemas import Retriever, WebSearch


@dataclass
class Deps:
    settings: Settings
    llm: Any | None = None  # a LangChain BaseChatModel; None means retrieval-only mode
    retriever: Retriever | None = None
    web_search: WebSearch | None = None  # None means the web is disabled
    eval_log: Callable[[dict[str, Any]], None] | None = None  # receives one record per evaluation
    secrets: list[str] = field(default_factory=list)  # values scrubbed from notices shown to users
    few_shot: bool = True  # the judge's few-shot counter-examples (prompts.EVALUATE_FEW_SHOT)
    # Rewrites the question into the book's language and search keywords before retrieve_local
    # searches (rag.agent.rewrite.QueryRewriter); None: the question is searched as it is.
    rewriter: QueryRewriter | None = None

    @property
    def web_enabled(self) -> bool:
        """Whether answers may search the web: a web search is injected and rounds are allowed."""
        return web_enabled(self.web_search is not None, self.settings.max_web_rounds)

    @property
    def mode(self) -> str:
        """'model' when an LLM is connected, else 'retrieval_only'."""
        return "model" if self.llm is not None else "retrieval_only"
