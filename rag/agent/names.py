"""The graph's node names, one constant each: the graph, the events, the CLI and the UI use these
(and only these) to name a node."""

from __future__ import annotations

ROUTE = "route_question"
RETRIEVE = "retrieve_local"
EVALUATE = "evaluate"
WEB_SEARCH = "web_search"
GENERATE = "generate"
VERIFY = "verify_answer"  # checks the answer's sentences against their citations
DIRECT_ANSWER = "direct_answer"
FALLBACK = "fallback"
RETRIEVAL_ONLY = "retrieval_only"  # the whole graph when no model is configured

#: Every node, in the order a turn meets them.
NODES: tuple[str, ...] = (ROUTE, RETRIEVE, EVALUATE, WEB_SEARCH, GENERATE, VERIFY, DIRECT_ANSWER, FALLBACK,
                          RETRIEVAL_ONLY)

#: Nodes whose LLM tokens and final text are the user-visible answer.
ANSWER_NODES: frozenset[str] = frozenset({GENERATE, DIRECT_ANSWER, FALLBACK, RETRIEVAL_ONLY})
