"""``retrieve_local``: the book searched for the question (and its rewritten queries), within the
question's chapters and its spoiler limit; the passages become the numbered book block."""

from __future__ import annotations

import logging
from typing import Any

from rag import deadline as turn_deadline
from rag.agent.context import format_book_context, spoiler_book_block
from rag.agent.names import RETRIEVE
from rag.agent.nodes.common import Env, current_question, search_scope
from rag.agent.state import GraphState, Notice
from rag.errors import RagError

logger = logging.getLogger(__name__)


def search_book(env: Env, query: str, book_id: str | None, *, chapters: tuple[int, int] | None = None,
                queries: list[str] | None = None, read_up_to: int | None = None) -> dict[str, Any]:
    """Passages, their numbered context, and notices: the book could not be searched, the search
    fell back to keywords, the spoiler limit. ``chapters``: the (already limited) chapter range."""
    notices: list[Notice] = []
    unit = None
    if read_up_to is not None:
        unit = env.chapter_unit(book_id)  # the limit is said in the book's own word for a chapter
        notices.append(env.n(RETRIEVE, "agent.spoiler_limit", chapter=read_up_to, unit=unit))
    retriever = env.retriever
    if retriever is None:
        return {"passages": [], "local_context": "",
                "notices": [*notices, env.n(RETRIEVE, "agent.no_index", "warning")]}
    if chapters is not None and chapters[0] > chapters[1]:
        after = env.n(RETRIEVE, "agent.after_limit", "warning", chapter=read_up_to, unit=unit)
        return {"passages": [], "local_context": "", "notices": [*notices, after]}
    try:
        outcome = retriever.search(query, k=env.config.retrieval_k, book_id=book_id, queries=queries or [],
                                   chapters=chapters)
    except (RagError, ValueError) as exc:
        return {"passages": [], "local_context": "",
                "notices": [*notices, env.n(RETRIEVE, "agent.book_search_failed", "error", error=env.error(exc))]}
    notices += [env.notice(RETRIEVE, note) for note in outcome.notes]  # the index's notes, at their levels
    passages = outcome.passages
    if read_up_to is not None:  # never trust the retriever with a spoiler
        passages = [p for p in passages if p.chapter_num is not None and p.chapter_num <= read_up_to]
    context = spoiler_book_block(format_book_context(passages, env.config.passage_chars(len(passages))), read_up_to)
    return {"passages": passages, "local_context": context, "notices": notices}


def _rewritten(state: GraphState, env: Env, question: str) -> tuple[list[str], list[Notice]]:
    """The rewritten queries to search besides the question, and what the trace should know."""
    rewriter, deadline = env.deps.rewriter, turn_deadline.current()
    if rewriter is None:
        return [], []
    if not env.config.rewrite_query:  # a small model's rewrite costs a minute and measured no gain
        return [], [env.n(RETRIEVE, "agent.rewrite_skipped_compact")]
    notices: list[Notice] = []
    queries: list[str] = []
    try:
        if deadline is not None and deadline.expired:  # a hung router spent the turn: search as asked
            raise deadline.exceeded("not rewritten")
        title, lang = env.book_field(state, "title"), env.book_field(state, "lang")
        # by the turn's deadline: a hung model must not keep the passages from the page
        rewritten = turn_deadline.call_before(lambda: rewriter.rewrite(question, book_title=title, book_lang=lang),
                                              deadline, "query rewrite")
        queries = rewritten.queries
        if rewritten.refused:  # the model answered instead of rewriting: search the question alone
            notices.append(env.n(RETRIEVE, "agent.rewrite_refused", "warning", lines=" | ".join(rewritten.refused)))
        if queries:
            notices.append(env.n(RETRIEVE, "agent.searched_also", queries=" | ".join(queries),
                                 seconds=f"{rewritten.seconds:.1f}"))
    except Exception as exc:  # noqa: BLE001 - without a rewrite the question is searched as it is
        notices.append(env.n(RETRIEVE, "agent.query_rewrite_failed", "warning", error=env.model_error(exc)))
    return queries, notices


def retrieve_local(state: GraphState, env: Env) -> dict[str, Any]:
    question = current_question(state)
    queries, notices = _rewritten(state, env, question)
    result = search_book(env, question, state.get("book_id"), chapters=search_scope(state), queries=queries,
                         read_up_to=state.get("read_up_to"))
    result["notices"] = [*notices, *result["notices"]]
    if state.get("read_up_to") is not None and env.config.web_enabled and not state.get("allow_web_spoilers"):
        result["notices"].append(env.n(RETRIEVE, "agent.web_off_spoilers"))
    return result
