"""The graph's typed state. Everything here is a Python object (no JSON strings)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from rag.schemas import Evaluation, Passage, RouteDecision, SearchResult

AnswerMode = Literal["direct", "full", "partial", "fallback", "retrieval_only"]


class WebRound(TypedDict):
    """One web search round, as shown in the trace."""

    query: str
    provider: str  # who answered ("" if it failed)
    results: list[SearchResult]
    error: str | None
    notes: list[str]  # e.g. "cache hit", "budget 3/20 used", "bocha failed, duckduckgo answered"


class Notice(TypedDict):
    """Something the user should see in the trace: a retry, a fallback, an error."""

    node: str
    level: Literal["info", "warning", "error"]
    message: str


class GraphState(TypedDict, total=False):
    # Conversation (kept across questions in one thread)
    messages: Annotated[list[AnyMessage], add_messages]

    # Input of the current question
    question: str
    book_id: str | None

    # Per-question state (reset by route_question)
    standalone_question: str  # question rewritten with the history (== question on the first turn)
    language: Literal["zh", "en"]
    route: RouteDecision | None
    passages: list[Passage]
    local_context: str
    evaluations: list[Evaluation]
    web_rounds: list[WebRound]
    web_results: list[SearchResult]
    web_context: str
    notices: list[Notice]
    answer_mode: AnswerMode
    answer: str


def reset_question_state() -> dict:
    """Values that route_question writes at the start of every question."""
    return {
        "route": None,
        "passages": [],
        "local_context": "",
        "evaluations": [],
        "web_rounds": [],
        "web_results": [],
        "web_context": "",
        "notices": [],
        "answer_mode": "full",
        "answer": "",
    }
