"""``route_question``: the follow-up rewritten into a standalone question, then the router's
strategy; a "simple" question that names things the book itself uses goes to the book anyway
(``rag.agent.routing.book_terms``)."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, RemoveMessage

from rag.agent.context import rewrite_messages, route_messages
from rag.agent.names import ROUTE
from rag.agent.nodes.common import Env
from rag.agent.routing import book_chosen, book_terms, by_code, overruled, router_failed
from rag.agent.state import RESET, GraphState, Notice, reset_question_state
from rag.lang import detect_lang
from rag.llm import failure_kind
from rag.schemas import RouteDecision

logger = logging.getLogger(__name__)

HISTORY_TURNS = 3  # question/answer pairs used to rewrite a follow-up
KEEP_MESSAGES = 4 * HISTORY_TURNS  # messages kept in the thread; older ones are removed
ROUTE_CHECK_K = 8  # passages searched to tell whether a "simple" question names things the book uses


def history(messages: list[AnyMessage]) -> list[BaseMessage]:
    """The last ``HISTORY_TURNS`` question/answer pairs of the thread."""
    pairs: list[BaseMessage] = [m for m in messages if isinstance(m, (HumanMessage, AIMessage))]
    return pairs[-2 * HISTORY_TURNS:]


def route_question(state: GraphState, env: Env) -> dict[str, Any]:
    question = (state.get("question") or "").strip()
    update: dict[str, Any] = reset_question_state()
    notices: list[Notice] = []
    standalone = question
    earlier = history(state.get("messages") or [])
    if earlier and env.judge_llm is not None:
        try:
            reply = env.judge_llm.invoke(rewrite_messages(earlier, question))
            text = str(reply.content).strip().strip('"“”')
            if text:
                standalone = text.splitlines()[0].strip() or question
        except Exception as exc:  # noqa: BLE001 - a failed rewrite must not end the turn
            notices.append(env.n(ROUTE, "agent.rewrite_failed", "warning", error=env.model_error(exc)))
    route, route_notices = _route(standalone, state, env)
    old = (state.get("messages") or [])[:-KEEP_MESSAGES] if state.get("messages") else []
    trimmed: list[BaseMessage] = [RemoveMessage(id=m.id) for m in old if m.id]
    update.update(standalone_question=standalone, language=detect_lang(question), route=route,
                  notices=[RESET, *notices, *route_notices], messages=[*trimmed, HumanMessage(question)])
    return update


def _route(question: str, state: GraphState, env: Env) -> tuple[RouteDecision, list[Notice]]:
    """The router's decision and what the trace should know about it. Where the profile says so
    (``route_by_code_first``) the book-term check comes first: a question naming what the book uses
    goes to retrieval by code, without a router call."""
    terms: list[str] | None = None
    if env.config.route_by_code_first:
        terms = _book_terms(question, state.get("book_id"), env)
        if terms:
            return by_code(terms), [env.n(ROUTE, "agent.routed_by_code", names="、".join(terms[:3]))]
    if not env.config.ask_router and state.get("book_id"):
        return book_chosen(), []
    route, errors = env.structured(RouteDecision, route_messages(question, env.book_field(state, "title")))
    if route is None:
        # A model that could not be reached is not a model that wrote bad JSON (as in evaluate).
        invalid = any(failure_kind(e) == "invalid_output" for e in errors)
        error = env.error(errors[-1])
        route = router_failed(error)
        code = "agent.router_invalid" if invalid else "agent.router_unreachable"
        return route, [env.n(ROUTE, code, "warning", error=error)]
    if route.strategy == "simple":
        terms = _book_terms(question, state.get("book_id"), env) if terms is None else terms
        if terms:  # a book question is never answered from the model's memory
            return overruled(route, terms), [env.n(ROUTE, "agent.router_book_terms", names="、".join(terms[:3]))]
    return route, []


def _book_terms(question: str, book_id: str | None, env: Env) -> list[str]:
    """Terms of the question that the book itself uses (see ``rag.agent.routing``); [] without a book."""
    if env.retriever is None:
        return []
    try:
        passages = env.retriever.retrieve(question, k=ROUTE_CHECK_K, book_id=book_id)
    except Exception as exc:  # noqa: BLE001 - the check is a safeguard, not a step that may fail a turn
        logger.warning("book-term check failed: %s", exc)
        return []
    return book_terms(question, passages)
