"""The icons of the trace and the chat's trace summary."""

from __future__ import annotations

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

NODE_ICONS = {
    ROUTE: "🧭",
    RETRIEVE: "📖",
    EVALUATE: "⚖️",
    WEB_SEARCH: "🌐",
    GENERATE: "✍️",
    VERIFY: "🔎",
    DIRECT_ANSWER: "💬",
    FALLBACK: "🛟",
    RETRIEVAL_ONLY: "📚",
}
STATUS_ICONS = {"running": "⏳", "done": "✓", "error": "✗", "stopped": "⏹"}
PART_ICONS = {"verified": "✓", "undecided": "?", "unverified": "✗", "not_found": "∅"}
