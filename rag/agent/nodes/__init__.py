"""The graph's nodes, one module per node: ``route`` (route_question), ``retrieve``
(retrieve_local), ``evaluate`` (the judge, the eval log, the edge after it), ``web`` (web_search),
``answer`` (generate, direct_answer, fallback, retrieval_only) and ``verify`` (verify_answer);
``common`` holds what they share. ``Nodes`` is all of them over one ``Deps``; nodes create no
clients and read no global state, and each returns only what it adds to the state."""

from __future__ import annotations

from rag.agent.nodes.answer import AnswerNode
from rag.agent.nodes.evaluate import EvaluateNode, after_evaluate
from rag.agent.nodes.route import RouteNode
from rag.agent.nodes.verify import VerifyNode
from rag.agent.nodes.web import WebNode

__all__ = ["Nodes", "after_evaluate"]


class Nodes(RouteNode, AnswerNode, EvaluateNode, WebNode, VerifyNode):
    """Every node, as methods over the injected ``Deps``."""
