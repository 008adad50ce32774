"""The graph's nodes, one module per node, each a plain function ``node(state, env)`` over ``Env``
(``common``: the injected ``Deps``, the turn's ``TurnConfig``, the judge's model): ``route``
(route_question), ``retrieve`` (retrieve_local), ``evaluate`` (the judge, the eval log, the edge after
it), ``web`` (web_search), ``answer`` (generate, direct_answer, fallback, retrieval_only) and
``verify`` (verify_answer). Nodes create no clients and read no global state, and each returns only
what it adds to the state; ``rag.agent.graph`` binds them to one ``Env``."""

from __future__ import annotations

from rag.agent.nodes.answer import direct_answer, fallback, generate, retrieval_only
from rag.agent.nodes.common import Env
from rag.agent.nodes.evaluate import after_evaluate, evaluate
from rag.agent.nodes.retrieve import retrieve_local
from rag.agent.nodes.route import route_question
from rag.agent.nodes.verify import verify_answer
from rag.agent.nodes.web import web_search

__all__ = ["Env", "after_evaluate", "direct_answer", "evaluate", "fallback", "generate", "retrieval_only",
           "retrieve_local", "route_question", "verify_answer", "web_search"]
