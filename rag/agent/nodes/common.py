"""What every node shares: the injected ``Deps`` (``NodeBase``), the notice helper, the structured
call with its retry, and the pure questions about a state (the question being answered, the
chapters to search, whether the web may be searched)."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import BaseMessage

from rag.agent import prompts
from rag.agent.context import labelled_context, web_block
from rag.agent.deps import Deps, as_retriever, as_web_search
from rag.agent.judge import structured_with_retry
from rag.agent.profile import passage_chars, turn_profile
from rag.agent.state import GraphState, Notice
from rag.deadline import DeadlineExceeded
from rag.errors import LLMError, RagError
from rag.i18n import Level, Msg
from rag.llm import DeadlineBound, judge_model, model_failure
from rag.logs import redact
from rag.schemas import Retriever, WebSearch
from rag.scope import limit_chapters

logger = logging.getLogger(__name__)

#: The notice codes that mean a model call never reached the model (route's and evaluate's fallbacks);
#: the chat page reads them to say so in its banner.
MODEL_UNREACHABLE_CODES = frozenset({"agent.router_unreachable", "agent.eval_unreachable"})


def current_question(state: GraphState) -> str:
    """The question being answered: the rewritten follow-up when there is one."""
    return state.get("standalone_question") or state.get("question", "")


def web_allowed(state: GraphState, web_enabled: bool) -> bool:
    """The web may be searched for this question: it is enabled, and there is no spoiler limit or
    the user allowed web results despite it (they are then marked as possible spoilers)."""
    return web_enabled and (state.get("read_up_to") is None or bool(state.get("allow_web_spoilers")))


def search_scope(state: GraphState) -> tuple[int, int] | None:
    """The chapters to search: the question's chapter range cut at its spoiler limit (empty, a > b,
    when the range lies wholly after the limit)."""
    chapters = state.get("chapters")
    return limit_chapters(tuple(chapters) if chapters else None, state.get("read_up_to"))  # type: ignore[arg-type]


class NodeBase:
    """Holds the injected ``Deps``; nodes create no clients and read no global state."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.llm = deps.llm
        # Route, rewrite and evaluate are deterministic: temperature 0. Every call ends by the turn's deadline.
        self.judge_llm = DeadlineBound(judge_model(deps.llm)) if deps.llm is not None else None
        # TURN_PROFILE: fewer and shorter calls for a small local model (rag.agent.profile)
        self.compact = turn_profile(deps.settings, deps.llm) == "compact"

    @property
    def _few_shot(self) -> bool:
        """The judge's few-shot examples: as set, never in the compact profile (a shorter prompt)."""
        return self.deps.few_shot and not self.compact

    def _judge_context(self, state: GraphState) -> str:
        """The judge's context: the book block, and the web block after it (``labelled_context``)."""
        passages = state.get("passages") or []
        return labelled_context(state.get("local_context") or "",
                                web_block(state.get("web_results") or [], len(passages) + 1, state.get("read_up_to")))

    def _web_query_rule(self, state: GraphState, rounds: int) -> str:
        """The judge's web-query rule after ``rounds`` web rounds."""
        enabled = web_allowed(state, self.deps.web_enabled)
        if rounds == 0:
            return prompts.WEB_QUERY_RULE_FIRST if enabled else prompts.WEB_QUERY_RULE_NONE
        more = enabled and rounds < self.settings.max_web_rounds
        return prompts.WEB_QUERY_RULE_MORE if more else prompts.WEB_QUERY_RULE_NONE

    def passage_chars(self, n_passages: int) -> int:
        """Characters of each book passage in a prompt (and in the sources its quotes are checked
        against): ``MAX_PASSAGE_CHARS``, or in the compact profile what fits its context."""
        return passage_chars(self.settings, n_passages) if self.compact else self.settings.max_passage_chars

    @property
    def retriever(self) -> Retriever | None:
        return as_retriever(self.deps.retriever)

    @property
    def web(self) -> WebSearch | None:
        return as_web_search(self.deps.web_search)

    def _n(self, node: str, code: str, level: Level = "info", **params: Any) -> Notice:
        """A notice for the trace: the message ``code`` at ``level``, any secret scrubbed from its params."""
        return self.notice(node, Msg.of(code, level=level, **params))

    def notice(self, node: str, msg: Msg) -> Notice:
        """A notice for the trace carrying ``msg`` (at its level), any secret scrubbed from its params."""
        return Notice(node=node, level=msg.level, msg=self.scrub(msg))

    def scrub(self, msg: Msg) -> Msg:
        """``msg`` with every secret of the settings removed from its text params (nested ones too)."""
        def clean(value: Any) -> Any:
            if isinstance(value, Msg):
                return self.scrub(value)
            if isinstance(value, list):
                return [clean(v) for v in value]
            # a public page's visitors read no server address either (an upstream body may name one)
            return redact(value, self.deps.secrets, addresses=self.settings.public_page) if isinstance(value, str) \
                else value

        return msg.model_copy(update={"params": {k: clean(v) for k, v in msg.params.items()}})

    def error(self, exc: BaseException) -> Msg:
        """An exception as a message param: its own ``Msg`` when it has one, else its text; scrubbed."""
        return self.scrub(exc.msg if isinstance(exc, (RagError, DeadlineExceeded)) else Msg.of("text", value=str(exc)))

    def model_error(self, exc: BaseException) -> Msg:
        """A failed model call as a message param: said as ``rag.llm.model_failure`` says it (never
        the endpoint's own error body, which may name its address or echo the key)."""
        return self.error(model_failure(self.llm, exc))

    def _structured(self, schema: type, messages: list[BaseMessage]) -> tuple[Any | None, list[LLMError]]:
        return structured_with_retry(self.judge_llm, schema, messages, self.settings.llm_structured_method)

    def _book_title(self, state: GraphState) -> str | None:
        """The loaded book's title, when the question is scoped to one book (for the router)."""
        return self._book_field(state, "title")

    def _book_lang(self, state: GraphState) -> str | None:
        """The language of the loaded book's text ("zh" | "en"), when the question is scoped to one book."""
        return self._book_field(state, "lang")

    def _book_field(self, state: GraphState, name: str) -> str | None:
        book_id, retriever = state.get("book_id"), self.retriever
        if not book_id or retriever is None:
            return None
        try:
            return str(getattr(retriever.book(book_id), name, "") or "") or None
        except Exception:  # noqa: BLE001 - a title is a hint, never a reason to fail
            return None
