"""The graph's nodes. Each is a method of ``Nodes``, which holds the injected ``Deps``; nodes
create no clients and read no global state. Routing decisions are pure functions."""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage

from rag import deadline as turn_deadline
from rag.agent import prompts
from rag.agent.deps import Deps
from rag.agent.judge import fence_source, format_book_context, judge, sources_of, structured_with_retry
from rag.agent.names import DIRECT_ANSWER, EVALUATE, FALLBACK, GENERATE, RETRIEVE, ROUTE, VERIFY, WEB_SEARCH
from rag.agent.routing import book_terms
from rag.agent.state import RESET, GraphState, Notice, WebRound, reset_question_state, unseen_urls
from rag.checks import check_answer
from rag.deadline import DeadlineExceeded
from rag.errors import RagError
from rag.lang import book_title_marks, detect_lang, language_name
from rag.llm import DeadlineBound, Streamed, failure_kind, judge_model, model_name, stream_text
from rag.logs import redact
from rag.schemas import Evaluation, Passage, RouteDecision, SearchOutcome, SentenceLabel, SentenceResult
from rag.scope import limit_chapters
from rag.search.base import format_web_context

logger = logging.getLogger(__name__)

HISTORY_TURNS = 3  # question/answer pairs used to rewrite a follow-up
KEEP_MESSAGES = 4 * HISTORY_TURNS  # messages kept in the thread; older ones are removed
ROUTE_CHECK_K = 8  # passages searched to tell whether a "simple" question names things the book uses


# --------------------------------------------------------------------------- pure helpers
def current_question(state: GraphState) -> str:
    """The question being answered: the rewritten follow-up when there is one."""
    return state.get("standalone_question") or state.get("question", "")


def book_clause(title: str | None) -> str:
    """' (《title》)' for the router's prompt; a title that already has 《》 is not wrapped twice."""
    title = book_title_marks(title or "")
    return f" ({title})" if title else ""


def route_messages(question: str, book_title: str | None = None) -> list[BaseMessage]:
    """The router's prompt (shared by the graph and ``rag eval route``)."""
    return [SystemMessage(prompts.ROUTE_SYSTEM.format(book_clause=book_clause(book_title))),
            HumanMessage(prompts.ROUTE_USER.format(question=question))]


def answer_messages(question: str, lang: str, book_context: str, web_context: str = "", *,
                    missing: list[str] | None = None) -> list[BaseMessage]:
    """The answer writer's prompt (shared by ``generate`` and the benchmark's prompt renderer).
    ``missing``: None for a full answer; the judge's missing points (maybe none) for a partial one."""
    partial_note = ""
    if missing is not None:
        partial_note = "\n" + prompts.GENERATE_PARTIAL_NOTE.format(
            missing="; ".join(missing) if missing else "(not specified by the judge)",
            missing_heading=prompts.text("missing_heading", lang))
    return [
        SystemMessage(prompts.GENERATE_SYSTEM.format(language=language_name(lang),
                                                     cannot_confirm=prompts.text("cannot_confirm", lang))),
        HumanMessage(prompts.GENERATE_USER.format(
            question=question, book_context=book_context or prompts.text("no_book_context", lang),
            web_context=web_context or prompts.text("no_web_context", lang), partial_note=partial_note)),
    ]


def web_allowed(state: GraphState, web_enabled: bool) -> bool:
    """The web may be searched for this question: it is enabled, and there is no spoiler limit or
    the user allowed web results despite it (they are then marked as possible spoilers)."""
    return web_enabled and (state.get("read_up_to") is None or bool(state.get("allow_web_spoilers")))


def search_scope(state: GraphState) -> tuple[int, int] | None:
    """The chapters to search: the question's chapter range cut at its spoiler limit (empty, a > b,
    when the range lies wholly after the limit)."""
    chapters = state.get("chapters")
    return limit_chapters(tuple(chapters) if chapters else None, state.get("read_up_to"))  # type: ignore[arg-type]


def after_evaluate(state: GraphState, *, web_enabled: bool, max_web_rounds: int) -> str:
    """Where to go after an evaluation (GENERATE, WEB_SEARCH or FALLBACK). Termination: every
    web_search adds one web round, and no web_search happens once ``max_web_rounds`` rounds exist."""
    evaluations = state.get("evaluations") or []
    if evaluations and evaluations[-1].enough:
        return GENERATE
    if web_allowed(state, web_enabled) and len(state.get("web_rounds") or []) < max_web_rounds:
        return WEB_SEARCH
    if not state.get("passages") and not state.get("web_results"):
        return FALLBACK
    return GENERATE


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


def _history(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if isinstance(m, (HumanMessage, AIMessage))][-2 * HISTORY_TURNS:]


class Nodes:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.llm = deps.llm
        # Route, rewrite and evaluate are deterministic: temperature 0. Every call ends by the turn's deadline.
        self.judge_llm = DeadlineBound(judge_model(deps.llm)) if deps.llm is not None else None

    def _n(self, *, node: str, level: str, message: str) -> Notice:
        """A notice for the trace, with any secret scrubbed from the message."""
        return Notice(node=node, level=level, message=redact(message, self.deps.secrets))  # type: ignore[typeddict-item]

    # ------------------------------------------------------------------ structured calls
    def _structured(self, schema: type, messages: list[BaseMessage]) -> tuple[Any | None, list[str]]:
        result, errors = structured_with_retry(self.judge_llm, schema, messages, self.settings.llm_structured_method)
        return result, [redact(e, self.deps.secrets) for e in errors]

    # ------------------------------------------------------------------ nodes
    # Each node returns only what it adds to the per-question lists (see rag.agent.state's reducers).
    def route_question(self, state: GraphState) -> dict[str, Any]:
        question = (state.get("question") or "").strip()
        update: dict[str, Any] = reset_question_state()
        notices: list[Notice] = []
        language = detect_lang(question)
        standalone = question
        history = _history(state.get("messages") or [])
        if history:
            lines = [f"{'User' if isinstance(m, HumanMessage) else 'Assistant'}: {str(m.content)[:600]}" for m in history]
            try:
                reply = self.judge_llm.invoke([
                    SystemMessage(prompts.REWRITE_SYSTEM),
                    HumanMessage(prompts.REWRITE_USER.format(history="\n".join(lines), question=question)),
                ])
                text = str(reply.content).strip().strip('"“”')
                if text:
                    standalone = text.splitlines()[0].strip() or question
            except Exception as exc:  # noqa: BLE001 - a failed rewrite must not end the turn
                notices.append(self._n(node=ROUTE, level="warning",
                                      message=f"could not rewrite the follow-up question: {exc}"))
        route, errors = self._structured(RouteDecision, route_messages(standalone, self._book_title(state)))
        if route is None:
            # A model that could not be reached is not a model that wrote bad JSON (as in evaluate).
            invalid = any(failure_kind(e) == "invalid_output" for e in errors)
            what = "router output invalid twice" if invalid else "the model could not be reached"
            route = RouteDecision(strategy="complex", reason=f"router failed twice, using retrieval: {errors[-1]}")
            notices.append(self._n(node=ROUTE, level="warning",
                                  message=f"{what}; took the retrieval path ({errors[-1]})"))
        elif route.strategy == "simple":
            terms = self._book_terms(standalone, state.get("book_id"))
            if terms:  # a book question is never answered from the model's memory
                names = "、".join(terms[:3])
                route = RouteDecision(strategy="complex",
                                      reason=f"{route.reason} -> retrieval: the book itself uses {names}")
                notices.append(self._n(node=ROUTE, level="info",
                                      message=f"the router said simple, but the book uses {names}: searching the book"))
        old = (state.get("messages") or [])[:-KEEP_MESSAGES] if state.get("messages") else []
        trimmed: list[BaseMessage] = [RemoveMessage(id=m.id) for m in old if m.id]
        update.update(standalone_question=standalone, language=language, route=route, notices=[RESET, *notices],
                      messages=[*trimmed, HumanMessage(question)])
        return update

    def _book_title(self, state: GraphState) -> str | None:
        """The loaded book's title, when the question is scoped to one book (for the router)."""
        book_id, lookup = state.get("book_id"), getattr(self.deps.retriever, "book", None)
        if not book_id or not callable(lookup):
            return None
        try:
            return str(lookup(book_id).title)
        except Exception:  # noqa: BLE001 - a title is a hint, never a reason to fail
            return None

    def _book_terms(self, question: str, book_id: str | None) -> list[str]:
        """Terms of the question that the book itself uses (see ``rag.agent.routing``); [] without a book."""
        if self.deps.retriever is None:
            return []
        try:
            passages = self.deps.retriever.retrieve(question, k=ROUTE_CHECK_K, book_id=book_id)
        except Exception as exc:  # noqa: BLE001 - the check is a safeguard, not a step that may fail a turn
            logger.warning("book-term check failed: %s", exc)
            return []
        return book_terms(question, passages)

    def _retrieve(self, query: str, book_id: str | None, *, chapters: tuple[int, int] | None = None,
                  queries: list[str] | None = None, read_up_to: int | None = None) -> dict[str, Any]:
        """Passages, their numbered context, and notices: the book could not be searched, the search
        fell back to keywords, the spoiler limit. ``chapters``: the (already limited) chapter range."""
        notices: list[Notice] = []
        if read_up_to is not None:
            notices.append(self._n(node=RETRIEVE, level="info", message=(
                f"spoiler limit: only chapters up to {read_up_to} are searched")))
        if self.deps.retriever is None:
            return {"passages": [], "local_context": "",
                    "notices": [*notices, self._n(node=RETRIEVE, level="warning", message="no book index is loaded")]}
        if chapters is not None and chapters[0] > chapters[1]:
            return {"passages": [], "local_context": "", "notices": [*notices, self._n(
                node=RETRIEVE, level="warning",
                message=f"nothing to search: the chapters asked for all come after the spoiler limit ({read_up_to})")]}
        search = getattr(self.deps.retriever, "search", None)
        try:
            scope = {"chapters": chapters} if chapters is not None else {}  # a retriever without scopes still works
            if callable(search):
                outcome = search(query, k=self.settings.retrieval_k, book_id=book_id, queries=queries or [], **scope)
                passages, notes = outcome.passages, outcome.notes
            else:
                passages, notes = self.deps.retriever.retrieve(query, k=self.settings.retrieval_k, book_id=book_id,
                                                               **scope), []
        except (RagError, ValueError) as exc:
            return {"passages": [], "local_context": "",
                    "notices": [*notices, self._n(node=RETRIEVE, level="error", message=f"book search failed: {exc}")]}
        for note in notes:
            level = "warning" if "failed" in note else "info"
            notices.append(self._n(node=RETRIEVE, level=level, message=note))
        if read_up_to is not None:  # never trust the retriever with a spoiler
            passages = [p for p in passages if p.chapter_num is not None and p.chapter_num <= read_up_to]
        context = format_book_context(passages, self.settings.max_passage_chars)
        if read_up_to is not None and context:
            context = f"{prompts.SPOILER_LINE.format(chapter=read_up_to)}\n\n{context}"
        return {"passages": passages, "local_context": context, "notices": notices}

    def retrieve_local(self, state: GraphState) -> dict[str, Any]:
        question = current_question(state)
        notices: list[Notice] = []
        queries: list[str] = []
        if self.deps.rewriter is not None:
            try:
                rewritten = self.deps.rewriter.rewrite(question, book_title=self._book_title(state))
                queries = rewritten.queries
                if queries:
                    notices.append(self._n(node=RETRIEVE, level="info", message=(
                        f"searched also for: {' | '.join(queries)} (query rewrite {rewritten.seconds:.1f}s)")))
            except Exception as exc:  # noqa: BLE001 - without a rewrite the question is searched as it is
                notices.append(self._n(node=RETRIEVE, level="warning",
                                      message=f"could not rewrite the question for the search: {exc}"))
        result = self._retrieve(question, state.get("book_id"), chapters=search_scope(state), queries=queries,
                                read_up_to=state.get("read_up_to"))
        result["notices"] = [*notices, *result["notices"]]
        if state.get("read_up_to") is not None and self.deps.web_enabled and not state.get("allow_web_spoilers"):
            result["notices"].append(self._n(node=RETRIEVE, level="info", message=(
                "web search is off while the spoiler limit is on (allow it to search the web anyway)")))
        return result

    def evaluate(self, state: GraphState) -> dict[str, Any]:
        question = current_question(state)
        round_no = len(state.get("evaluations") or []) + 1
        rounds = len(state.get("web_rounds") or [])
        notices: list[Notice] = []
        passages = state.get("passages") or []
        web_results = state.get("web_results") or []
        invalid = False
        started = time.monotonic()
        if not passages and not web_results:
            evaluation = Evaluation(reason="Nothing was retrieved, so nothing can answer the question.",
                                    enough=False, missing=[question], web_query=None if rounds else question,
                                    confidence=1.0, mode=self.settings.judge_mode)
        else:
            web_enabled = web_allowed(state, self.deps.web_enabled)
            if rounds == 0:
                rule = prompts.WEB_QUERY_RULE_FIRST if web_enabled else prompts.WEB_QUERY_RULE_NONE
            else:
                more = web_enabled and rounds < self.settings.max_web_rounds
                rule = prompts.WEB_QUERY_RULE_MORE if more else prompts.WEB_QUERY_RULE_NONE
            judged = judge(self.judge_llm, question, passages, web_results, context=self._labelled_context(state),
                           mode=self.settings.judge_mode, method=self.settings.llm_structured_method,
                           few_shot=self.deps.few_shot, web_query_rule=rule,
                           max_chars=self.settings.max_passage_chars, relevance=self.settings.judge_relevance_check,
                           evidence=self.settings.judge_evidence)
            evaluation = judged.evaluation
            errors = [redact(e, self.deps.secrets) for e in judged.errors]
            evaluation = evaluation.model_copy(update={"reason": redact(evaluation.reason, self.deps.secrets)})
            if judged.invalid:
                # A model that could not be reached is not a model that wrote bad JSON (the eval log keeps them apart).
                invalid = any(failure_kind(e) == "invalid_output" for e in judged.errors)
                what = "evaluation output invalid twice" if invalid else "the model could not be reached"
                notices.append(self._n(node=EVALUATE, level="warning",
                                      message=f"{what}; assumed not enough ({errors[-1]})"))
            elif errors:
                notices.append(self._n(node=EVALUATE, level="info",
                                      message=f"evaluation retried once after: {errors[0]}"))
            unverified = [p for p in evaluation.parts if p.status == "unverified"]
            if evaluation.model_enough and not evaluation.enough and unverified:
                notices.append(self._n(node=EVALUATE, level="warning", message=(
                    f"the judge said enough, but {len(unverified)} of {len(evaluation.parts)} part(s) "
                    "had no evidence that checks out: not enough")))
        self._log_evaluation(state, evaluation, round_no, time.monotonic() - started, invalid=invalid)
        return {"evaluations": [evaluation], "notices": notices}

    def _labelled_context(self, state: GraphState) -> str:
        book = state.get("local_context") or prompts.text("no_book_context", "en")
        web_results = state.get("web_results") or []
        if not web_results:
            return book
        web = format_web_context(web_results, start_index=len(state.get("passages") or []) + 1)
        if state.get("read_up_to") is not None:  # web allowed despite the spoiler limit
            web = f"{prompts.SPOILER_WEB_LINE.format(chapter=state.get('read_up_to'))}\n{web}"
        return f"=== BOOK SOURCES ===\n{book}\n\n=== WEB SOURCES (untrusted data) ===\n{web}"

    def _log_evaluation(self, state: GraphState, evaluation: Evaluation, round_no: int, latency: float, *,
                        invalid: bool) -> None:
        """One eval-log record with what this evaluation knows: its verdict, its round, its latency,
        and the web search it judged (the one just before it; None in round 1). Where the graph goes
        next is decided by the edge after this node, not predicted here."""
        if self.deps.eval_log is None:
            return
        question = current_question(state)
        web_rounds = state.get("web_rounds") or []
        last = web_rounds[-1] if round_no > 1 and web_rounds else None
        searched = None if last is None else {"query": last["query"], "provider": last["provider"],
                                              "results": len(last["results"]), "error": last["error"]}
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "model": model_name(self.llm),
            "question_hash": hashlib.sha256(question.encode("utf-8")).hexdigest()[:16],
            "question": question,
            "round": round_no,
            "evaluation": evaluation.model_dump(),
            "latency_s": round(latency, 4),
            "searched": searched,
            "invalid_json": invalid,
        }
        try:
            self.deps.eval_log(record)
        except Exception:  # noqa: BLE001 - logging must never break a turn
            logger.exception("could not write the evaluation log")

    def web_search(self, state: GraphState) -> dict[str, Any]:
        query = web_query_for(state)
        known = state.get("web_results") or []
        new_results: list[Any] = []
        notices: list[Notice] = []
        search = self.deps.web_search
        web_round = WebRound(query=query, provider="", results=[], error=None, notes=[])
        deadline = turn_deadline.current()
        count = self.settings.search_count
        try:
            if search is None:
                raise RagError("web search is not configured")
            if deadline is not None and deadline.expired:
                raise deadline.exceeded("not searched")
            detailed = getattr(search, "search_detailed", None)
            if callable(detailed):
                outcome: SearchOutcome = turn_deadline.call_before(lambda: detailed(query, count), deadline,
                                                                   "no results in time")
            else:
                results = turn_deadline.call_before(lambda: search.search(query, count), deadline, "no results in time")
                outcome = SearchOutcome(results=results, provider=search.name)
            web_round.update(provider=outcome.provider, results=outcome.results, notes=list(outcome.notes))
            new_results = unseen_urls(known, outcome.results)
            if not outcome.results and not any("no results" in n for n in web_round["notes"]):
                web_round["notes"].append("no results")
        except (RagError, DeadlineExceeded) as exc:
            web_round["error"] = redact(str(exc), self.deps.secrets)
            notices.append(self._n(node=WEB_SEARCH, level="error", message=f"web search failed: {exc}"))
        except Exception as exc:  # noqa: BLE001 - a provider bug must not end the turn
            logger.exception("web search crashed")
            web_round["error"] = redact(f"{type(exc).__name__}: {exc}", self.deps.secrets)
            notices.append(self._n(node=WEB_SEARCH, level="error", message=f"web search failed: {web_round['error']}"))
        results = [*known, *new_results]
        web_context = format_web_context(results, start_index=len(state.get("passages") or []) + 1) if results else ""
        limit = state.get("read_up_to")
        if limit is not None and results:  # allowed despite the spoiler limit: marked as possible spoilers
            web_context = f"{prompts.SPOILER_WEB_LINE.format(chapter=limit)}\n{web_context}"
            web_round["notes"].append(f"possible spoilers: web results may go beyond chapter {limit}")
        return {"web_rounds": [web_round], "web_results": new_results, "web_context": web_context, "notices": notices}

    def _stream_answer(self, messages: list[BaseMessage]) -> Streamed:
        """The answer as it streams, within the turn's deadline and ``STREAM_IDLE_TIMEOUT``."""
        return stream_text(self.llm, messages, idle=self.settings.stream_idle_timeout)

    def _unfinished(self, node: str, streamed: Streamed, lang: str) -> tuple[str, Notice] | None:
        """For an answer that is empty (or only whitespace) or was cut short: the line that says so
        in the answer, and the notice for the trace (an error: no complete answer was written).
        None for a complete answer."""
        if streamed.cut is None and streamed.text.strip():
            return None
        if streamed.cut == "turn":
            seconds = f"{self.settings.turn_timeout:g}"
            line = prompts.text("answer_cut_turn", lang, seconds=seconds)
            message = f"the answer was cut short: the turn's time limit was reached (TURN_TIMEOUT={seconds} s)"
        elif streamed.cut == "idle":
            seconds = f"{self.settings.stream_idle_timeout:g}"
            line = prompts.text("answer_cut_idle", lang, seconds=seconds)
            message = f"the answer was cut short: the model sent nothing for {seconds} s (STREAM_IDLE_TIMEOUT)"
        else:
            line = prompts.text("answer_empty", lang)
            message = "the model returned an empty answer"
        return line, self._n(node=node, level="error", message=message)

    def generate(self, state: GraphState) -> dict[str, Any]:
        lang = state.get("language", "en")
        question = current_question(state)
        evaluations = state.get("evaluations") or []
        last = evaluations[-1] if evaluations else None
        mode = "full" if last is not None and last.enough else "partial"
        messages = answer_messages(question, lang, state.get("local_context") or "", state.get("web_context") or "",
                                   missing=None if mode == "full" else (last.missing if last else []))
        notices: list[Notice] = []
        try:
            streamed = self._stream_answer(messages)
        except Exception as exc:  # noqa: BLE001 - show the sources instead of crashing
            logger.warning("generation failed: %s", exc)
            notices.append(self._n(node=GENERATE, level="error", message=f"generation failed: {exc}"))
            answer = self._sources_dump(state, prompts.text("generation_failed", lang, error=type(exc).__name__))
        else:
            answer = streamed.text
            unfinished = self._unfinished(GENERATE, streamed, lang)
            if unfinished is not None:  # keep what was written, say why it stops, and show the sources
                line, notice = unfinished
                notices.append(notice)
                head = f"{line}\n{prompts.text('sources_found', lang)}"
                kept = answer if answer.strip() else ""  # as streamed: the text shown so far stays its prefix
                answer = "\n\n".join(part for part in (kept, self._sources_dump(state, head)) if part)
        return {"answer": answer, "answer_mode": mode, "notices": notices, "messages": [AIMessage(answer)]}

    def direct_answer(self, state: GraphState) -> dict[str, Any]:
        lang = state.get("language", "en")
        question = current_question(state)
        notices: list[Notice] = []
        try:
            streamed = self._stream_answer([
                SystemMessage(prompts.DIRECT_SYSTEM.format(language=language_name(lang))),
                HumanMessage(question),
            ])
            unfinished = self._unfinished(DIRECT_ANSWER, streamed, lang)
            parts = [streamed.text.rstrip()]
            if unfinished is not None:
                parts.append(unfinished[0])
                notices.append(unfinished[1])
            if streamed.text.strip():
                # Say plainly that nothing was looked up: a misrouted book question must not pass as sourced.
                parts.append(prompts.text("direct_note", lang))
            answer = "\n\n".join(part for part in parts if part)
        except Exception as exc:  # noqa: BLE001
            notices.append(self._n(node=DIRECT_ANSWER, level="error", message=f"generation failed: {exc}"))
            answer = prompts.text("generation_failed", lang, error=type(exc).__name__)
        return {"answer": answer, "answer_mode": "direct", "notices": notices, "messages": [AIMessage(answer)]}

    def fallback(self, state: GraphState) -> dict[str, Any]:
        """Nothing usable was found: say so without calling the model, and list what is missing."""
        lang = state.get("language", "en")
        tried_web = bool(state.get("web_rounds"))
        lines = [prompts.text("fallback", lang, web=prompts.text("fallback_web", lang) if tried_web else "")]
        evaluations = state.get("evaluations") or []
        missing = evaluations[-1].missing if evaluations else []
        if missing:
            lines += ["", prompts.text("fallback_missing", lang)] + [f"- {m}" for m in missing]
        problems = [n["message"] for n in state.get("notices") or [] if n["level"] == "error"]
        if problems:
            lines += ["", prompts.text("fallback_errors", lang)] + [f"- {p}" for p in problems]
        answer = "\n".join(lines)
        return {"answer": answer, "answer_mode": "fallback", "messages": [AIMessage(answer)]}

    def verify_answer(self, state: GraphState) -> dict[str, Any]:
        """Check every sentence of the answer against the sources it cites (``rag.checks``); with
        ``VERIFY_ANSWERS=llm`` the model also labels each cited sentence given only its sources."""
        if self.settings.verify_answers == "off":
            return {"answer_checks": []}
        sources = sources_of(state.get("passages") or [], state.get("web_results") or [],
                             self.settings.max_passage_chars)
        checked = check_answer(state.get("answer") or "", sources)
        results = [SentenceResult(text=c.text, start=c.start, end=c.end, citations=list(c.citations),
                                  status=c.status, reason=c.reason, origin=c.origin) for c in checked.sentences]
        notices: list[Notice] = []
        if self.settings.verify_answers == "llm":
            by_number = {src.number: src for src in sources}
            for i, r in enumerate(results):
                if r.status != "supported":
                    continue  # code already flagged it; the model can only add doubt
                cited = "\n\n".join(fence_source(by_number[n]) for n in r.citations if n in by_number)
                label, errors = self._structured(SentenceLabel, [
                    SystemMessage(prompts.VERIFY_SYSTEM),
                    HumanMessage(prompts.VERIFY_USER.format(sentence=r.text, sources=cited))])
                if label is None:
                    notices.append(self._n(node=VERIFY, level="warning",
                                          message=f"sentence check by the model failed: {errors[-1]}"))
                    break
                if label.label in ("unsupported", "contradicted"):
                    results[i] = r.model_copy(update={"status": "unsupported",
                                                      "reason": f"the model: {label.label} ({label.reason})"})
                elif label.label == "partial":
                    results[i] = r.model_copy(update={"reason": f"{r.reason}; the model: partly ({label.reason})"})
        return {"answer_checks": results, "notices": notices}

    def _sources_dump(self, state: GraphState, head: str) -> str:
        lines = [head, ""]
        for i, p in enumerate(state.get("passages") or [], start=1):
            lines.append(f"[{i}] {p.label()}: {p.text[:300]}")
        offset = len(state.get("passages") or [])
        for j, r in enumerate(state.get("web_results") or [], start=offset + 1):
            lines.append(f"[{j}] {r.title} ({r.url}): {r.snippet[:300]}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ no model at all
    def retrieval_only(self, state: GraphState) -> dict[str, Any]:
        question = (state.get("question") or "").strip()
        lang = detect_lang(question)
        update: dict[str, Any] = {**reset_question_state(), "standalone_question": question, "language": lang}
        retrieved = self._retrieve(question, state.get("book_id"), chapters=search_scope(state),
                                   read_up_to=state.get("read_up_to"))
        update.update(passages=retrieved["passages"], local_context=retrieved["local_context"],
                      notices=[RESET, *retrieved.get("notices", [])])
        passages: list[Passage] = retrieved["passages"]
        lines = [prompts.text("retrieval_only_head", lang), ""]
        if not passages:
            lines.append(prompts.text("retrieval_only_none", lang))
        for i, p in enumerate(passages, start=1):
            snippet = " ".join(p.text.split())
            snippet = snippet if len(snippet) <= 400 else snippet[:400] + "…"
            lines.append(f"[{i}] {p.label()} (score {p.score:.3f})\n{snippet}\n")
        lines += ["", prompts.text("retrieval_only_howto", lang)]
        answer = "\n".join(lines)
        update.update(answer=answer, answer_mode="retrieval_only",
                      messages=[HumanMessage(question), AIMessage(answer)])
        return update


