"""``web_search``: one web round for what the evidence did not cover (``web_query_for``), within
the turn's deadline; the results so far become the web block."""

from __future__ import annotations

import logging
from typing import Any

from rag import deadline as turn_deadline
from rag.agent.context import web_block
from rag.agent.names import WEB_SEARCH
from rag.agent.nodes.common import Env, current_question
from rag.agent.state import GraphState, Notice, WebRound, unseen_urls
from rag.deadline import DeadlineExceeded
from rag.errors import RagError
from rag.i18n import Msg
from rag.schemas import SearchOutcome, SearchResult
from rag.search import notes

logger = logging.getLogger(__name__)


def web_query_for(state: GraphState) -> str:
    """The evaluator's web_query, else the parts of the question that the evidence did not cover
    (measured: a 1.5B judge gave no web_query in 21 of 21 "not enough" verdicts), else the question
    plus the first missing points."""
    evaluations = state.get("evaluations") or []
    last = evaluations[-1] if evaluations else None
    if last and last.web_query:
        return last.web_query.strip()
    question = current_question(state)
    open_parts = [p.part for p in (last.parts if last else []) if p.status != "verified" and p.part.strip()]
    if open_parts:
        return " ".join(dict.fromkeys(open_parts[:3])).strip()
    missing = last.missing[:2] if last else []
    return " ".join([question, *missing]).strip()


def _search(env: Env, query: str) -> SearchOutcome:
    """One search by the turn's deadline; raises ``RagError`` / ``DeadlineExceeded`` (and any provider bug)."""
    search, deadline, count = env.web, turn_deadline.current(), env.config.search_count
    if search is None:
        raise RagError(Msg.of("agent.web_not_configured", level="error"))
    if deadline is not None and deadline.expired:
        raise deadline.exceeded("not_searched")
    return turn_deadline.call_before(lambda: search.search_detailed(query, count), deadline, "web_search")


def web_search(state: GraphState, env: Env) -> dict[str, Any]:
    query = web_query_for(state)
    known = state.get("web_results") or []
    new_results: list[SearchResult] = []
    notices: list[Notice] = []
    web_round = WebRound(query=query, provider="", results=[], error=None, notes=[])
    try:
        outcome = _search(env, query)
        web_round["provider"], web_round["results"] = outcome.provider, outcome.results
        web_round["notes"] = list(outcome.notes)
        new_results = unseen_urls(known, outcome.results)
        if not outcome.results and not any(notes.is_no_results(n) for n in web_round["notes"]):
            web_round["notes"].append(notes.no_results())
    except (RagError, DeadlineExceeded) as exc:
        web_round["error"] = env.error(exc)
        notices.append(env.n(WEB_SEARCH, "agent.web_failed", "error", error=web_round["error"]))
    except Exception as exc:  # noqa: BLE001 - a provider bug must not end the turn
        logger.exception("web search crashed")
        web_round["error"] = env.scrub(Msg.of("text", value=f"{type(exc).__name__}: {exc}"))
        notices.append(env.n(WEB_SEARCH, "agent.web_failed", "error", error=web_round["error"]))
    results = [*known, *new_results]
    limit = state.get("read_up_to")
    web_context = web_block(results, len(state.get("passages") or []) + 1, limit)
    if limit is not None and results:  # allowed despite the spoiler limit: marked as possible spoilers
        web_round["notes"].append(notes.spoilers(limit, env.chapter_unit(state.get("book_id"))))
    return {"web_rounds": [web_round], "web_results": new_results, "web_context": web_context, "notices": notices}
