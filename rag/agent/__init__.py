"""The agent: a LangGraph graph that routes a question, searches the book, judges whether what it
found is enough (web search when not), writes a cited answer and checks it sentence by sentence.

``build_graph(deps)`` (``rag.agent.graph``) wires the nodes (``rag.agent.nodes``) over the state
(``rag.agent.state``) with injected ``Deps`` (``rag.agent.deps``; real clients from
``rag.agent.wiring``); ``run_turn`` (``rag.agent.events``) turns a run into typed events.
"""
