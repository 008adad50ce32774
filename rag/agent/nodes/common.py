"""What every node shares: ``Env`` (the injected ``Deps``, the turn's ``TurnConfig`` and the
judge's model, with the notice and error helpers), the structured call with its retry, and the pure
questions about a state (the question being answered, the chapters to search, whether the web may be
searched, the judge's context and web-query rule)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from rag.agent import prompts
from rag.agent.context import labelled_context, web_block
from rag.agent.deps import Deps, as_retriever, as_web_search
from rag.agent.judge import structured_with_retry
from rag.agent.state import GraphState, Notice
from rag.agent.turnconfig import TurnConfig, turn_config
from rag.deadline import DeadlineExceeded
from rag.errors import LLMError, RagError
from rag.i18n import Level, Msg, PerLang
from rag.llm import ChatModel, DeadlineBound, judge_model, model_failure
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


def judge_context(state: GraphState) -> str:
    """The judge's context: the book block, and the web block after it (``labelled_context``)."""
    passages = state.get("passages") or []
    return labelled_context(state.get("local_context") or "",
                            web_block(state.get("web_results") or [], len(passages) + 1, state.get("read_up_to")))


def web_query_rule(state: GraphState, config: TurnConfig, rounds: int) -> str:
    """The judge's web-query rule after ``rounds`` web rounds."""
    enabled = web_allowed(state, config.web_enabled)
    if rounds == 0:
        return prompts.WEB_QUERY_RULE_FIRST if enabled else prompts.WEB_QUERY_RULE_NONE
    more = enabled and rounds < config.max_web_rounds
    return prompts.WEB_QUERY_RULE_MORE if more else prompts.WEB_QUERY_RULE_NONE


@dataclass(frozen=True)
class Env:
    """What the nodes run over: the injected ``Deps`` (nodes create no clients and read no global
    state), the turn's ``TurnConfig``, and the judge's model (route, rewrite and evaluate are
    deterministic: temperature 0; every call ends by the turn's deadline)."""

    deps: Deps
    config: TurnConfig
    judge_llm: ChatModel | None

    @classmethod
    def of(cls, deps: Deps) -> Env:
        judge_llm = DeadlineBound(judge_model(deps.llm)) if deps.llm is not None else None
        return cls(deps=deps, config=turn_config(deps), judge_llm=judge_llm)

    @property
    def judge_model(self) -> ChatModel:
        """The judge's model; only the nodes the graph wires with a model ask for it."""
        if self.judge_llm is None:
            raise RuntimeError("no model: the graph wires the model's nodes only with one")
        return self.judge_llm

    @property
    def answer_model(self) -> ChatModel:
        """The model that writes answers (at its own temperature)."""
        if self.deps.llm is None:
            raise RuntimeError("no model: the graph wires the model's nodes only with one")
        return self.deps.llm

    @property
    def retriever(self) -> Retriever | None:
        return as_retriever(self.deps.retriever)

    @property
    def web(self) -> WebSearch | None:
        return as_web_search(self.deps.web_search)

    def n(self, node: str, code: str, level: Level = "info", **params: Any) -> Notice:
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
            return redact(value, self.deps.secrets, addresses=self.deps.settings.public_page) \
                if isinstance(value, str) else value

        return msg.model_copy(update={"params": {k: clean(v) for k, v in msg.params.items()}})

    def error(self, exc: BaseException) -> Msg:
        """An exception as a message param: its own ``Msg`` when it has one, else its text; scrubbed."""
        return self.scrub(exc.msg if isinstance(exc, (RagError, DeadlineExceeded)) else Msg.of("text", value=str(exc)))

    def model_error(self, exc: BaseException) -> Msg:
        """A failed model call as a message param: said as ``rag.llm.model_failure`` says it (never
        the endpoint's own error body, which may name its address or echo the key)."""
        return self.error(model_failure(self.deps.llm, exc))

    def structured(self, schema: type, messages: list[BaseMessage]) -> tuple[Any | None, list[LLMError]]:
        """The judge's model's structured reply (retried once), and the errors met."""
        return structured_with_retry(self.judge_model, schema, messages, self.config.judge.method,
                                     methods=self.deps.methods)

    def _book(self, book_id: str | None) -> Any | None:
        """The book ``book_id`` as the retriever tells it (``BookInfo``); None without one."""
        retriever = self.retriever
        if not book_id or retriever is None:
            return None
        try:
            return retriever.book(book_id)
        except Exception:  # noqa: BLE001 - what a book tells is a hint, never a reason to fail
            return None

    def book_field(self, state: GraphState, name: str) -> str | None:
        """A field of the loaded book (``title``, ``lang``), when the question is scoped to one book."""
        return str(getattr(self._book(state.get("book_id")), name, "") or "") or None

    def chapter_unit(self, book_id: str | None) -> PerLang:
        """The book's own word for a chapter in each language (``BookInfo.unit_zh`` / ``unit_en``), for
        a notice that names its chapters; "" (the catalogue's neutral word) without one book or when
        its headings are not numbered."""
        book = self._book(book_id)
        return PerLang(zh=str(getattr(book, "unit_zh", "") or ""), en=str(getattr(book, "unit_en", "") or ""))
