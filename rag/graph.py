"""Wiring only: ``build_graph(deps)`` assembles the nodes into a LangGraph ``StateGraph``.

    START -> route_question -> direct_answer -> END
                            -> retrieve_local -> evaluate -> generate -> END
                                                          -> web_search -> evaluate (capped)
                                                          -> fallback -> END
Without a model: START -> retrieval_only -> END.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph

from rag.deps import Deps
from rag.nodes import Nodes, after_evaluate
from rag.state import GraphState

#: Our own state types that the checkpointer may restore (and nothing else).
CHECKPOINT_TYPES = [
    ("rag.schemas", "RouteDecision"),
    ("rag.schemas", "Evaluation"),
    ("rag.schemas", "Passage"),
    ("rag.schemas", "SearchResult"),
]


def make_checkpointer() -> InMemorySaver:
    return InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES))


def build_graph(deps: Deps, *, checkpointer: Any | None = None) -> Any:
    """A compiled graph. Conversation memory per ``thread_id`` lives in ``checkpointer``
    (an in-memory saver by default)."""
    nodes = Nodes(deps)
    graph = StateGraph(GraphState)
    if deps.llm is None:
        graph.add_node("retrieval_only", nodes.retrieval_only)
        graph.add_edge(START, "retrieval_only")
        graph.add_edge("retrieval_only", END)
        return graph.compile(checkpointer=checkpointer or make_checkpointer())

    graph.add_node("route_question", nodes.route_question)
    graph.add_node("direct_answer", nodes.direct_answer)
    graph.add_node("retrieve_local", nodes.retrieve_local)
    graph.add_node("evaluate", nodes.evaluate)
    graph.add_node("web_search", nodes.web_search)
    graph.add_node("generate", nodes.generate)
    graph.add_node("fallback", nodes.fallback)

    graph.add_edge(START, "route_question")
    graph.add_conditional_edges(
        "route_question",
        lambda s: "direct_answer" if s["route"] is not None and s["route"].strategy == "simple" else "retrieve_local",
        ["direct_answer", "retrieve_local"],
    )
    graph.add_edge("retrieve_local", "evaluate")
    graph.add_conditional_edges(
        "evaluate",
        lambda s: after_evaluate(s, web_enabled=nodes.web_enabled, max_web_rounds=deps.settings.max_web_rounds),
        ["generate", "web_search", "fallback"],
    )
    graph.add_edge("web_search", "evaluate")
    for node in ("generate", "direct_answer", "fallback"):
        graph.add_edge(node, END)
    return graph.compile(checkpointer=checkpointer or make_checkpointer())
