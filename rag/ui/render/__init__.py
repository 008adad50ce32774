"""Rendering of the UI state as escaped HTML / Markdown, one module per panel. Pure functions, no
Gradio import.

``safe`` (escaping, safe URLs and links, Markdown escaping), ``answer`` (chat messages, citations,
sentence marks), ``trace`` (trace entries, evaluation rounds, checks), ``sources`` (book passages,
web cards), ``panels`` (banner, books table, ETA). Everything that comes from outside the code goes
through ``esc`` or ``safe_url`` before it reaches the page.
"""

from __future__ import annotations

from rag.ui.render.answer import (
    answer_summary,
    chat_messages,
    link_citations,
    sentence_tip,
    usable_checks,
)
from rag.ui.render.icons import NODE_ICONS, PART_ICONS, STATUS_ICONS
from rag.ui.render.panels import (
    Banner,
    book_status_text,
    fmt_eta,
    provider_label,
    render_banner,
    render_books,
)
from rag.ui.render.safe import (
    anchor_id,
    clip,
    esc,
    escape_markdown_text,
    external_link,
    find_urls,
    fmt_s,
    safe_url,
    site_of,
)
from rag.ui.render.sources import (
    highlight,
    how_found,
    passage_label,
    render_sources,
    verified_spans,
    web_card,
)
from rag.ui.render.trace import checks_html, evaluation_html, evaluations_json, render_trace

__all__ = [
    "NODE_ICONS",
    "Banner",
    "PART_ICONS",
    "STATUS_ICONS",
    "anchor_id",
    "answer_summary",
    "book_status_text",
    "chat_messages",
    "checks_html",
    "clip",
    "esc",
    "escape_markdown_text",
    "evaluation_html",
    "evaluations_json",
    "external_link",
    "find_urls",
    "fmt_eta",
    "fmt_s",
    "highlight",
    "how_found",
    "link_citations",
    "passage_label",
    "provider_label",
    "render_banner",
    "render_books",
    "render_sources",
    "render_trace",
    "safe_url",
    "sentence_tip",
    "site_of",
    "usable_checks",
    "verified_spans",
    "web_card",
]
