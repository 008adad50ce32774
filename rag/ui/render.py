"""Rendering of the UI state as escaped HTML / Markdown. Pure functions, no Gradio import.

Everything that comes from outside the code (web titles, snippets, URLs, book text, book titles,
model output, error messages) goes through ``esc`` or ``safe_url`` before it reaches the page.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from rag.names import (
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
from rag.schemas import Passage, SearchResult
from rag.ui.i18n import node_title, t
from rag.ui.translate import TraceEntry, Turn, UiState

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
STATUS_ICONS = {"running": "⏳", "done": "✓", "error": "✗"}
SNIPPET_CHARS = 280
HIT_PREVIEW_CHARS = 60

_CITATION = re.compile(r"\[(\s*\d{1,3}(?:\s*[,，、]\s*\d{1,3})*\s*)\]")
_MD_ESCAPE = str.maketrans({"[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;"})


_TEMPLATE_CHARS = str.maketrans({"{": "&#123;", "}": "&#125;", "$": "&#36;", "`": "&#96;"})


def esc(value: object) -> str:
    """HTML-escape any value (quotes included). Template characters (``{ } $ `` ` ``) become
    entities too, so no client-side template engine can ever interpret untrusted text."""
    return html.escape("" if value is None else str(value), quote=True).translate(_TEMPLATE_CHARS)


def safe_url(url: object) -> str | None:
    """The URL, attribute-escaped, if it is an absolute http(s) URL with a host; else None."""
    if not isinstance(url, str):
        return None
    url = url.strip()
    if any(ch in url for ch in "\x00\r\n\t ") or len(url) > 2048:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in {"http", "https"} or not parts.netloc:
        return None
    return esc(url)


def site_of(result: SearchResult) -> str:
    if result.site_name.strip():
        return result.site_name.strip()
    try:
        return urlsplit(result.url).hostname or ""
    except ValueError:
        return ""


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def anchor_id(turn_index: int, n: int) -> str:
    """DOM id of source ``[n]`` of turn ``turn_index`` in the sources panel."""
    return f"src-{turn_index}-{n}"


def external_link(url: str, text_html: str, css_class: str = "") -> str:
    """An ``<a>`` to an external http(s) URL (new tab, no opener), or just the text if unsafe."""
    href = safe_url(url)
    if href is None:
        return text_html
    cls = f' class="{esc(css_class)}"' if css_class else ""
    return f'<a{cls} href="{href}" target="_blank" rel="noopener noreferrer">{text_html}</a>'


# --------------------------------------------------------------------------- chat


def escape_markdown_text(text: str) -> str:
    """Escape text for the chatbot's Markdown: no raw HTML, no links or images of its own."""
    return text.translate(_MD_ESCAPE)


def link_citations(answer: str, turn_index: int, passages: Sequence[Passage],
                   web_results: Sequence[SearchResult]) -> str:
    """The answer as safe Markdown with ``[n]`` turned into links: book passages ``[1..p]`` to
    their anchor in the sources panel, web results ``[p+1..]`` to their URL (new tab)."""
    p = len(passages)
    out: list[str] = []
    pos = 0
    for match in _CITATION.finditer(answer):
        out.append(escape_markdown_text(answer[pos:match.start()]))
        pos = match.end()
        links = []
        for raw in re.split(r"[,，、]", match.group(1)):
            n = int(raw.strip())
            if 1 <= n <= p:
                passage = passages[n - 1]
                title = esc(passage.label())
                links.append(f'<a class="cite cite-book" href="#{anchor_id(turn_index, n)}" title="{title}">[{n}]</a>')
            elif p < n <= p + len(web_results) and safe_url(web_results[n - p - 1].url):
                result = web_results[n - p - 1]
                links.append(external_link(result.url, f"[{n}]", "cite cite-web"))
            else:
                links.append(escape_markdown_text(f"[{n}]"))
        out.append("".join(links))
    out.append(escape_markdown_text(answer[pos:]))
    return "".join(out)


def _thought_lines(turn: Turn, lang: str) -> list[str]:
    lines = []
    for entry in turn.entries:
        title = node_title(lang, entry.node)
        bits = [f"{STATUS_ICONS.get(entry.status, '')} {NODE_ICONS.get(entry.node, '•')} {escape_markdown_text(title)}"]
        if entry.duration_s is not None:
            bits.append(fmt_s(entry.duration_s))
        if entry.route is not None:
            bits.append(escape_markdown_text(entry.route.strategy))
        if entry.passages is not None:
            bits.append(t(lang, "hits", n=len(entry.passages)))
        if entry.evaluation is not None:
            verdict = t(lang, "verdict_enough" if entry.evaluation.enough else "verdict_not_enough")
            bits.append(f"{t(lang, 'round', n=entry.evaluation_round)}: {verdict}")
        for rnd in entry.web_rounds:
            bits.append(f"“{escape_markdown_text(clip(str(rnd.get('query', '')), 60))}”")
        if entry.error:
            bits.append(escape_markdown_text(clip(entry.error, 120)))
        lines.append(" · ".join(bits))
    return lines


def chat_messages(state: UiState, lang: str) -> list[dict[str, Any]]:
    """Messages for ``gr.Chatbot`` (messages format): per turn the user question, a collapsible
    "reasoning trace" thought (ChatMessage metadata with status and duration), and the answer."""
    messages: list[dict[str, Any]] = []
    for i, turn in enumerate(state.turns):
        messages.append({"role": "user", "content": escape_markdown_text(turn.question)})
        metadata: dict[str, Any] = {"title": t(lang, "trace_thought"), "id": f"trace-{i}"}
        if turn.status == "running":
            metadata["status"] = "pending"
        else:
            metadata["status"] = "done"
            if turn.total_s is not None:
                metadata["duration"] = round(turn.total_s, 2)
        lines = _thought_lines(turn, lang)
        messages.append({
            "role": "assistant",
            "content": "\n".join(f"- {line}" for line in lines) if lines else t(lang, "thinking"),
            "metadata": metadata,
        })
        if turn.answer:
            messages.append({
                "role": "assistant",
                "content": link_citations(turn.answer, i, turn.passages, turn.web_results),
            })
        if turn.status == "failed":
            messages.append({
                "role": "assistant",
                "content": f"⚠️ **{t(lang, 'error_prefix')}**: {escape_markdown_text(turn.error or '')}",
            })
    return messages


# --------------------------------------------------------------------------- trace panel


def web_card(result: SearchResult, number: int | None = None, dom_id: str | None = None) -> str:
    """A web source card: title (link), site, date, snippet. All escaped."""
    title = esc(clip(result.title or result.url, 200))
    num = f'<span class="src-num">[{number}]</span> ' if number is not None else ""
    meta = " · ".join(esc(x) for x in (site_of(result), result.date.strip()) if x)
    id_attr = f' id="{esc(dom_id)}"' if dom_id else ""
    return (
        f'<div class="web-card"{id_attr}>'
        f'<div class="web-title">{num}{external_link(result.url, title, "web-link")}</div>'
        f'<div class="web-meta">{meta}</div>'
        f'<div class="web-snippet">{esc(clip(result.snippet, SNIPPET_CHARS))}</div>'
        "</div>"
    )


def _eval_json(entry: TraceEntry) -> str:
    assert entry.evaluation is not None
    data = entry.evaluation.model_dump()
    ordered = {key: data.get(key) for key in ("enough", "missing", "reason", "web_query", "confidence")}
    return json.dumps(ordered, ensure_ascii=False, indent=2)


def _entry_body(entry: TraceEntry, turn: Turn, lang: str) -> str:
    parts: list[str] = []
    if entry.standalone_question and entry.standalone_question.strip() != turn.question.strip():
        parts.append(f'<div class="kv"><b>{esc(t(lang, "rewritten"))}:</b> {esc(entry.standalone_question)}</div>')
    if entry.route is not None:
        strategy = t(lang, f"strategy_{entry.route.strategy}")
        parts.append(
            f'<div class="kv route route-{esc(entry.route.strategy)}"><b>{esc(t(lang, "strategy"))}:</b> {esc(strategy)}</div>'
            f'<div class="kv"><b>{esc(t(lang, "reason"))}:</b> {esc(entry.route.reason)}</div>'
        )
    if entry.passages is not None:
        if not entry.passages:
            parts.append(f'<div class="kv muted">{esc(t(lang, "no_hits"))}</div>')
        else:
            rows = "".join(
                f'<li class="hit"><span class="hit-num">[{n}]</span> '
                f'<span class="hit-chapter">{esc(p.label())}</span> '
                f'<span class="hit-score">{p.score:.3f}</span>'
                f'{f" <span class=hit-src>{esc(p.source)}</span>" if p.source else ""}'
                f'<div class="hit-preview">{esc(clip(p.text, HIT_PREVIEW_CHARS))}</div></li>'
                for n, p in enumerate(entry.passages, start=1)
            )
            parts.append(f'<div class="kv">{esc(t(lang, "hits", n=len(entry.passages)))}</div><ol class="hits">{rows}</ol>')
    if entry.evaluation is not None:
        verdict_key = "verdict_enough" if entry.evaluation.enough else "verdict_not_enough"
        cls = "enough" if entry.evaluation.enough else "not-enough"
        parts.append(
            f'<div class="kv"><span class="round">{esc(t(lang, "round", n=entry.evaluation_round))}</span> '
            f'<span class="verdict {cls}">{esc(t(lang, verdict_key))}</span></div>'
            f'<pre class="eval-json" data-round="{esc(entry.evaluation_round)}">{esc(_eval_json(entry))}</pre>'
        )
    for rnd in entry.web_rounds:
        results = [r for r in (rnd.get("results") or []) if isinstance(r, SearchResult)]
        notes = [str(n) for n in (rnd.get("notes") or [])]
        provider = str(rnd.get("provider") or "")
        block = [f'<div class="kv web-query"><b>{esc(t(lang, "web_query"))}:</b> <code>{esc(rnd.get("query", ""))}</code></div>']
        if provider:
            block.append(f'<div class="kv"><b>{esc(t(lang, "provider"))}:</b> {esc(provider)}</div>')
        if notes:
            block.append("".join(f'<div class="note">ℹ️ {esc(n)}</div>' for n in notes))
        if rnd.get("error"):
            block.append(f'<div class="note error">⚠️ {esc(rnd["error"])}</div>')
        if results:
            block.append('<div class="web-cards">' + "".join(web_card(r) for r in results) + "</div>")
        elif not rnd.get("error"):
            block.append(f'<div class="kv muted">{esc(t(lang, "no_results"))}</div>')
        parts.append('<div class="web-round">' + "".join(block) + "</div>")
    if entry.answer_mode:
        mode = t(lang, f"mode_{entry.answer_mode}")
        parts.append(f'<div class="kv"><b>{esc(t(lang, "answer_mode"))}:</b> {esc(mode)}</div>')
    for notice in entry.notices:
        level = str(notice.get("level", "info"))
        level = level if level in {"info", "warning", "error"} else "info"
        icon = {"info": "ℹ️", "warning": "⚠️", "error": "⛔"}[level]
        parts.append(f'<div class="note {level}">{icon} {esc(notice.get("message", ""))}</div>')
    if entry.error:
        parts.append(f'<div class="note error">⛔ {esc(entry.error)}</div>')
    return "".join(parts)


def render_trace(turn: Turn | None, lang: str) -> str:
    """The trace panel for one turn: one entry per node run, in order, with durations."""
    if turn is None:
        return f'<div class="rag-trace empty">{esc(t(lang, "trace_empty"))}</div>'
    items = []
    for entry in turn.entries:
        title = node_title(lang, entry.node)
        dur = (
            f'<span class="trace-dur">{esc(fmt_s(entry.duration_s))}</span>'
            if entry.duration_s is not None
            else f'<span class="trace-dur running">{esc(t(lang, "running"))}</span>'
        )
        items.append(
            f'<li class="trace-entry status-{esc(entry.status)}" data-node="{esc(entry.node)}">'
            f'<div class="trace-head"><span class="trace-status">{STATUS_ICONS.get(entry.status, "")}</span> '
            f'<span class="trace-icon">{NODE_ICONS.get(entry.node, "•")}</span> '
            f'<span class="trace-title">{esc(title)}</span> <code class="trace-node">{esc(entry.node)}</code>{dur}</div>'
            f'<div class="trace-body">{_entry_body(entry, turn, lang)}</div></li>'
        )
    footer = ""
    if turn.status == "failed":
        footer += f'<div class="note error trace-failed">⛔ {esc(t(lang, "error_prefix"))}: {esc(turn.error or "")}</div>'
    if turn.total_s is not None:
        footer += f'<div class="trace-total"><b>{esc(t(lang, "total_time"))}:</b> <span class="total-s">{esc(fmt_s(turn.total_s))}</span></div>'
    question = f'<div class="trace-question">❓ {esc(turn.question)}</div>'
    return f'<div class="rag-trace status-{esc(turn.status)}">{question}<ol class="trace-list">{"".join(items)}</ol>{footer}</div>'


def evaluations_json(turn: Turn | None) -> list[dict[str, Any]]:
    """Each evaluation round of the turn as a plain dict (for gr.JSON)."""
    if turn is None:
        return []
    return [{"round": i, **e.model_dump()} for i, e in enumerate(turn.evaluations, start=1)]


# --------------------------------------------------------------------------- sources panel


def _turn_sources(turn: Turn, index: int, lang: str) -> str:
    parts = []
    if turn.passages:
        items = "".join(
            f'<div class="book-src" id="{anchor_id(index, n)}">'
            f'<div class="src-head"><span class="src-num">[{n}]</span> <b>{esc(p.label())}</b>'
            f'{f" · {esc(p.book_title)}" if p.book_title else ""}'
            f' <span class="hit-score">{p.score:.3f}</span></div>'
            f'<div class="src-text">{esc(p.text)}</div></div>'
            for n, p in enumerate(turn.passages, start=1)
        )
        parts.append(f'<h4>{esc(t(lang, "book_sources"))}</h4>{items}')
    if turn.web_results:
        offset = len(turn.passages)
        cards = "".join(
            web_card(r, number=offset + n, dom_id=anchor_id(index, offset + n))
            for n, r in enumerate(turn.web_results, start=1)
        )
        parts.append(f'<h4>{esc(t(lang, "web_sources"))}</h4><div class="web-cards">{cards}</div>')
    return "".join(parts)


def render_sources(state: UiState, lang: str) -> str:
    """Sources of every turn, newest first and open; earlier turns folded (their citation
    anchors stay valid)."""
    blocks = []
    for index in range(len(state.turns) - 1, -1, -1):
        turn = state.turns[index]
        body = _turn_sources(turn, index, lang)
        if not body:
            continue
        if index == len(state.turns) - 1:
            blocks.append(f'<div class="turn-sources current">{body}</div>')
        else:
            blocks.append(
                f'<details class="turn-sources"><summary>{esc(t(lang, "earlier_question"))}: '
                f"{esc(clip(turn.question, 60))}</summary>{body}</details>"
            )
    if not blocks:
        return f'<div class="rag-sources empty">{esc(t(lang, "sources_empty"))}</div>'
    return f'<div class="rag-sources">{"".join(blocks)}</div>'


# --------------------------------------------------------------------------- banner and books


def render_banner(*, llm_model: str | None, llm_connected: bool, web_provider: str | None,
                  custom: bool, lang: str) -> str:
    """The mode banner: model connected / retrieval-only, web on (provider) / disabled."""
    if llm_connected:
        model = f'<span class="badge ok mode-model">🤖 {esc(t(lang, "banner_model", model=llm_model or "?"))}</span>'
    else:
        model = f'<span class="badge warn mode-retrieval-only">📚 {esc(t(lang, "banner_retrieval_only"))}</span>'
    if web_provider:
        web = f'<span class="badge ok mode-web">🌐 {esc(t(lang, "banner_web_on", provider=web_provider))}</span>'
    else:
        web = f'<span class="badge muted mode-web-off">🚫 {esc(t(lang, "banner_web_off"))}</span>'
    extra = f'<span class="badge info">⚙️ {esc(t(lang, "banner_custom"))}</span>' if custom else ""
    return f'<div class="rag-banner">{model}{web}{extra}</div>'


def _book_field(book: Any, name: str, default: Any = "") -> Any:
    if isinstance(book, dict):
        return book.get(name, default)
    return getattr(book, name, default)


def render_books(books: Sequence[Any] | None, lang: str, message: str = "", level: str = "info") -> str:
    """The book list with status (books are BookInfo objects or dicts); ``message`` is plain text."""
    level = level if level in {"info", "warning", "error"} else "info"
    msg = f'<div class="book-msg note {level}">{esc(message)}</div>' if message else ""
    if books is None:
        return f'<div class="rag-books">{msg}<div class="muted">{esc(t(lang, "no_index"))}</div></div>'
    if not books:
        return f'<div class="rag-books">{msg}<div class="muted">{esc(t(lang, "no_books"))}</div></div>'
    head = "".join(
        f"<th>{esc(t(lang, k))}</th>" for k in ("col_title", "col_chapters", "col_chunks", "col_embedded", "col_status")
    )
    rows = []
    for book in books:
        status = str(_book_field(book, "status", ""))
        status_text = t(lang, f"status_{status}") if status in {"keyword_ready", "embedding", "ready", "error"} else status
        error = _book_field(book, "error", None)
        error_html = f'<div class="note error book-error">{esc(error)}</div>' if error else ""
        embedded, chunks = _book_field(book, "embedded", ""), _book_field(book, "chunks", "")
        if status in {"keyword_ready", "embedding"} and isinstance(embedded, int) and isinstance(chunks, int) and chunks:
            status_text = f"{status_text} {100 * embedded // chunks}%"
        rows.append(
            f'<tr class="book-row status-{esc(status)}" data-book-id="{esc(_book_field(book, "id"))}">'
            f'<td class="book-title">{esc(_book_field(book, "title"))}</td>'
            f"<td>{esc(_book_field(book, 'chapters', ''))}</td>"
            f"<td>{esc(_book_field(book, 'chunks', ''))}</td>"
            f"<td>{esc(_book_field(book, 'embedded', ''))}</td>"
            f'<td class="book-status">{esc(status_text)}{error_html}</td></tr>'
        )
    return f'<div class="rag-books">{msg}<table class="books"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
