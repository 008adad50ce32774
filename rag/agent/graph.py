"""Wiring only: ``build_graph(deps)`` assembles the nodes into a LangGraph ``StateGraph``.

    START -> route_question -> direct_answer -> END
                            -> retrieve_local -> evaluate -> generate -> verify_answer -> END
                                                          -> web_search -> evaluate (capped)
                                                          -> fallback -> END
Without a model: START -> retrieval_only -> END.

The graph's input is one question (``rag.agent.state.InputState``: ``question``, ``book_id``); every
other key given to ``invoke``/``stream`` is ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph

from rag.agent import nodes
from rag.agent.deps import Deps
from rag.agent.names import (
    DIRECT_ANSWER,
    EVALUATE,
    FALLBACK,
    GENERATE,
    RETRIEVAL_ONLY,
    RETRIEVE,
    ROUTE,
    VERIFY,
    WEB_SEARCH,
)
from rag.agent.nodes import Env, after_evaluate
from rag.agent.state import GraphState, InputState
from rag.deadline import CONFIG_KEY

#: Our own state types that the checkpointer may restore (and nothing else).
CHECKPOINT_TYPES = [
    ("rag.schemas", "RouteDecision"),
    ("rag.agent.routing", "CodeRoute"),  # a route the code decided, its reason a message
    ("rag.schemas", "Evaluation"),
    ("rag.schemas", "Passage"),
    ("rag.schemas", "SearchResult"),
    ("rag.checks.quotes", "PartCheck"),
    ("rag.checks.sentences", "SentenceCheck"),
    ("rag.i18n.msg", "Msg"),  # notices and check details
    ("rag.agent.state", "Reset"),  # the reset marker, in the node writes a checkpoint keeps
]


class _Node(Protocol):
    """A node as LangGraph calls it: the state in, what the node adds to it out."""

    def __call__(self, state: GraphState) -> dict[str, Any]: ...


def make_checkpointer() -> InMemorySaver:
    return InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES))


def build_graph(deps: Deps, *, checkpointer: Any | None = None) -> Any:
    """A compiled graph. Conversation memory per ``thread_id`` lives in ``checkpointer``
    (an in-memory saver by default)."""
    env = Env.of(deps)  # the turn's configuration, fixed for every turn of this graph

    def bind(node: Callable[[GraphState, Env], dict[str, Any]]) -> _Node:
        def run(state: GraphState) -> dict[str, Any]:
            return node(state, env)

        run.__name__ = node.__name__
        return run

    graph = StateGraph(GraphState, input_schema=InputState)
    if deps.llm is None:
        graph.add_node(RETRIEVAL_ONLY, bind(nodes.retrieval_only))
        graph.add_edge(START, RETRIEVAL_ONLY)
        graph.add_edge(RETRIEVAL_ONLY, END)
        return _compile(graph, deps, checkpointer)

    graph.add_node(ROUTE, bind(nodes.route_question))
    graph.add_node(DIRECT_ANSWER, bind(nodes.direct_answer))
    graph.add_node(RETRIEVE, bind(nodes.retrieve_local))
    graph.add_node(EVALUATE, bind(nodes.evaluate))
    graph.add_node(WEB_SEARCH, bind(nodes.web_search))
    graph.add_node(GENERATE, bind(nodes.generate))
    graph.add_node(VERIFY, bind(nodes.verify_answer))
    graph.add_node(FALLBACK, bind(nodes.fallback))

    graph.add_edge(START, ROUTE)
    graph.add_conditional_edges(
        ROUTE,
        lambda s: DIRECT_ANSWER if s["route"] is not None and s["route"].strategy == "simple" else RETRIEVE,
        [DIRECT_ANSWER, RETRIEVE],
    )
    graph.add_edge(RETRIEVE, EVALUATE)
    graph.add_conditional_edges(
        EVALUATE,
        lambda s: after_evaluate(s, web_enabled=env.config.web_enabled, max_web_rounds=env.config.max_web_rounds),
        [GENERATE, WEB_SEARCH, FALLBACK],
    )
    graph.add_edge(WEB_SEARCH, EVALUATE)
    graph.add_edge(GENERATE, VERIFY)
    for node in (VERIFY, DIRECT_ANSWER, FALLBACK):
        graph.add_edge(node, END)
    return _compile(graph, deps, checkpointer)


def _compile(graph: StateGraph, deps: Deps, checkpointer: Any | None) -> Any:
    """The compiled graph, carrying its TURN_TIMEOUT for ``rag.agent.events.run_turn``."""
    compiled = graph.compile(checkpointer=checkpointer or make_checkpointer())
    return compiled.with_config(configurable={CONFIG_KEY: deps.settings.turn_timeout})
