"""Rendering of the UI state as escaped HTML / Markdown. Pure functions, no Gradio import.

Everything that comes from outside the code (web titles, snippets, URLs, book text, book titles,
model output, error messages) goes through ``esc`` or ``safe_url`` before it reaches the page.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

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
from rag.schemas import Evaluation, PartResult, Passage, SearchResult, SentenceResult
from rag.ui.i18n import message as code_message
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
STATUS_ICONS = {"running": "⏳", "done": "✓", "error": "✗", "stopped": "⏹"}
PART_ICONS = {"verified": "✓", "unverified": "✗", "not_found": "∅"}
SNIPPET_CHARS = 280
HIT_PREVIEW_CHARS = 60
TITLE_CHARS = 300

_CITATION = re.compile(r"\[(\s*\d{1,3}(?:\s*[,，、]\s*\d{1,3})*\s*)\]")
_MD_ESCAPE = str.maketrans({"[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;"})
# A bare URL ends at whitespace, at any non-ASCII character (Chinese punctuation and brackets
# included: "（https://x.org/a）。" links to https://x.org/a) and at the ASCII characters a URL
# never holds unescaped; trailing sentence punctuation and an unbalanced ")" are not part of it.
_URL = re.compile(r"(?:https?://|www\.)[A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?'*_"
_CODE_SPAN = re.compile(r"`[^`\n]+`")
# Markdown that opens a line (list item, heading, quote): a sentence mark starts after it.
_LINE_LEAD = re.compile(r"^(?:\s*(?:[-*+]|\d{1,3}[.)])\s+|\s*#{1,6}\s+|\s*>\s?)+")
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


def external_link(url: str, text_html: str, css_class: str = "", title: str = "") -> str:
    """An ``<a>`` to an external http(s) URL (new tab, no opener), or just the text if unsafe."""
    href = safe_url(url)
    if href is None:
        return text_html
    cls = f' class="{esc(css_class)}"' if css_class else ""
    tip = f' title="{esc(title)}"' if title else ""
    return f'<a{cls}{tip} href="{href}" target="_blank" rel="noopener noreferrer">{text_html}</a>'


# --------------------------------------------------------------------------- answer text


def escape_markdown_text(text: str) -> str:
    """Escape text for the chatbot's Markdown: no raw HTML, no links or images of its own."""
    return text.translate(_MD_ESCAPE)


def _no_autolink(md: str) -> str:
    """Escaped text that the chatbot's Markdown cannot turn into a link by itself (its autolinker
    would run a bare URL on through Chinese punctuation): ``://`` and ``www.`` as entities."""
    md = md.replace("://", "&#58;//")
    return re.sub(r"(?i)\b(www)\.", r"\1&#46;", md)


def find_urls(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, href)`` of each bare http(s) / www. URL in ``text`` (see ``_URL``)."""
    found = []
    for m in _URL.finditer(text):
        url = m.group(0)
        while url:
            if url[-1] in _URL_TRAILING or (url[-1] == ")" and url.count("(") < url.count(")")):
                url = url[:-1]
                continue
            break
        href = url if url.lower().startswith(("http://", "https://")) else f"https://{url}"
        if safe_url(href) is None or not urlsplit(href).hostname:
            continue
        found.append((m.start(), m.start() + len(url), href))
    return found


def _url_text(url: str) -> str:
    """A URL as link text the Markdown autolinker leaves alone (entities display as the URL)."""
    return _no_autolink(escape_markdown_text(url)).replace(".", "&#46;").replace("@", "&#64;")


class _Cites:
    """How ``[n]`` is linked in one answer: book passages ``[1..p]`` to their anchor in the sources
    panel, web results ``[p+1..]`` to their URL; in an unsupported sentence, marked as not support."""

    def __init__(self, turn_index: int, passages: Sequence[Passage], web_results: Sequence[SearchResult],
                 lang: str) -> None:
        self.turn_index, self.passages, self.web_results, self.lang = turn_index, passages, web_results, lang

    def link(self, n: int, unsupported: bool = False) -> str:
        p = len(self.passages)
        extra = " cite-unsupported" if unsupported else ""
        if 1 <= n <= p:
            passage = self.passages[n - 1]
            title = t(self.lang, "cite_unsupported", n=n) if unsupported else passage.label()
            return (f'<a class="cite cite-book{extra}" href="#{anchor_id(self.turn_index, n)}" '
                    f'title="{esc(title)}">[{n}]</a>')
        if p < n <= p + len(self.web_results) and safe_url(self.web_results[n - p - 1].url):
            result = self.web_results[n - p - 1]
            title = t(self.lang, "cite_unsupported", n=n) if unsupported else clip(result.title or result.url, 120)
            return external_link(result.url, f"[{n}]", f"cite cite-web{extra}", title=title)
        return escape_markdown_text(f"[{n}]")


def _inline(text: str, cites: _Cites, unsupported: bool = False) -> str:
    """A piece of answer text as safe Markdown: citations and bare URLs linked, code spans kept."""
    out: list[str] = []
    pos = 0
    for code in _CODE_SPAN.finditer(text):
        out.append(_links(text[pos:code.start()], cites, unsupported))
        out.append(escape_markdown_text(code.group(0)))
        pos = code.end()
    out.append(_links(text[pos:], cites, unsupported))
    return "".join(out)


def _links(text: str, cites: _Cites, unsupported: bool) -> str:
    marks: list[tuple[int, int, str]] = []
    for m in _CITATION.finditer(text):
        numbers = [int(x) for x in re.split(r"\s*[,，、]\s*", m.group(1).strip()) if x.strip().isdigit()]
        marks.append((m.start(), m.end(), "".join(cites.link(n, unsupported) for n in numbers)))
    for start, end, href in find_urls(text):
        if not any(a < end and start < b for a, b, _ in marks):
            marks.append((start, end, f'<a class="answer-link" href="{esc(href)}" target="_blank" '
                                      f'rel="noopener noreferrer">{_url_text(text[start:end])}</a>'))
    out: list[str] = []
    pos = 0
    for start, end, rendered in sorted(marks):
        if start < pos:
            continue
        out.append(_no_autolink(escape_markdown_text(text[pos:start])))
        out.append(rendered)
        pos = end
    out.append(_no_autolink(escape_markdown_text(text[pos:])))
    return "".join(out)


def usable_checks(answer: str, checks: Sequence[SentenceResult]) -> list[SentenceResult]:
    """The sentence checks that describe ``answer`` as it is (offsets in range, text equal), in
    order, without overlaps; none if any does not fit (they belong to another text)."""
    ordered = sorted(checks, key=lambda c: c.start)
    pos = 0
    for check in ordered:
        if check.start < pos or check.end > len(answer) or answer[check.start:check.end] != check.text:
            return []
        pos = check.end
    return ordered


def sentence_tip(check: SentenceResult, lang: str) -> str:
    """What the page says about one checked sentence (on hover and keyboard focus)."""
    status = t(lang, f"sent_{check.status}")
    reason = code_message(check.reason, lang)
    if check.origin and check.status == "supported":
        return t(lang, "sent_tip", status=status, origin=t(lang, f"origin_{check.origin}"), reason=reason)
    return t(lang, "sent_tip_plain", status=status, reason=reason)


def link_citations(answer: str, turn_index: int, passages: Sequence[Passage],
                   web_results: Sequence[SearchResult], checks: Sequence[SentenceResult] = (),
                   lang: str = "en") -> str:
    """The answer as safe Markdown: ``[n]`` linked to its source (book passages to their anchor in
    the sources panel, web results to their URL), bare URLs linked up to their real end, and with
    ``checks`` each checked sentence marked supported / unsupported / uncited (its reason on hover
    and keyboard focus; citations inside an unsupported sentence are marked as not supporting it)."""
    cites = _Cites(turn_index, passages, web_results, lang)
    out: list[str] = []
    pos = 0
    for check in usable_checks(answer, checks):
        out.append(_inline(answer[pos:check.start], cites))
        sentence = answer[check.start:check.end]
        if check.status == "no_claim":
            out.append(_inline(sentence, cites))
        else:
            lead = _LINE_LEAD.match(sentence)
            head = lead.group(0) if lead else ""
            origin = f" origin-{check.origin}" if check.origin and check.status == "supported" else ""
            out.append(_inline(head, cites))
            out.append(f'<span class="sent sent-{esc(check.status)}{origin}" tabindex="0" '
                       f'title="{esc(sentence_tip(check, lang))}">')
            out.append(_inline(sentence[len(head):], cites, unsupported=check.status == "unsupported"))
            out.append("</span>")
        pos = check.end
    out.append(_inline(answer[pos:], cites))
    return "".join(out)


def answer_summary(checks: Sequence[SentenceResult], lang: str) -> tuple[str, str] | None:
    """("5 of 6 sentences supported by their sources", css class), or None when no sentence claims
    anything."""
    claims = [c for c in checks if c.status != "no_claim"]
    if not claims:
        return None
    supported = sum(1 for c in claims if c.status == "supported")
    text = t(lang, "answer_summary", n=len(claims), k=supported)
    if supported < len(claims):
        bad = sum(1 for c in claims if c.status == "unsupported")
        text += t(lang, "answer_summary_detail", bad=bad, uncited=len(claims) - supported - bad)
    return text, ("all" if supported == len(claims) else "some")


def _strategy(lang: str, strategy: str) -> str:
    return t(lang, f"strategy_{strategy}") if strategy in ("simple", "complex") else strategy


def _thought_lines(turn: Turn, lang: str) -> list[str]:
    lines = []
    for entry in turn.entries:
        title = node_title(lang, entry.node)
        bits = [f"{STATUS_ICONS.get(entry.status, '')} {NODE_ICONS.get(entry.node, '•')} {escape_markdown_text(title)}"]
        if entry.duration_s is not None:
            bits.append(fmt_s(entry.duration_s))
        if entry.route is not None:
            bits.append(escape_markdown_text(_strategy(lang, entry.route.strategy)))
        if entry.passages is not None:
            bits.append(t(lang, "hits", n=len(entry.passages)))
        if entry.evaluation is not None:
            verdict = t(lang, "verdict_enough" if entry.evaluation.enough else "verdict_not_enough")
            bits.append(f"{t(lang, 'round', n=entry.evaluation_round)}: {verdict}")
        for rnd in entry.web_rounds:
            bits.append(f"“{escape_markdown_text(clip(str(rnd.get('query', '')), 60))}”")
        if entry.answer_checks:
            summary = answer_summary(entry.answer_checks, lang)
            if summary:
                bits.append(escape_markdown_text(summary[0]))
        if entry.status == "stopped":
            bits.append(t(lang, "stopped"))
        if entry.error:
            bits.append(escape_markdown_text(clip(code_message(entry.error, lang), 120)))
        lines.append(" · ".join(bits))
    return lines


def chat_messages(state: UiState, lang: str) -> list[dict[str, Any]]:
    """Messages for ``gr.Chatbot`` (messages format): per turn the user question, a collapsible
    "reasoning trace" thought (ChatMessage metadata with status and duration), and the answer with
    its sentences marked and one summary line under it."""
    messages: list[dict[str, Any]] = []
    for i, turn in enumerate(state.turns):
        messages.append({"role": "user", "content": escape_markdown_text(turn.question)})
        metadata: dict[str, Any] = {"title": t(lang, "trace_thought"), "id": f"trace-{i}"}
        if turn.status in ("queued", "running"):
            metadata["status"] = "pending"
        else:
            metadata["status"] = "done"
            if turn.total_s is not None:
                metadata["duration"] = round(turn.total_s, 2)
        lines = _thought_lines(turn, lang)
        if turn.status == "queued":
            content = f"⏳ {t(lang, 'queued')}"
        else:
            content = "\n".join(f"- {line}" for line in lines) if lines else t(lang, "thinking")
        messages.append({"role": "assistant", "content": content, "metadata": metadata})
        if turn.answer:
            checks = turn.answer_checks if turn.status == "done" else ()
            body = link_citations(turn.answer, i, turn.passages, turn.web_results, checks, lang)
            summary = answer_summary(usable_checks(turn.answer, checks), lang) if checks else None
            if summary:
                icon = "✓" if summary[1] == "all" else "⚠"
                body += f'\n\n<div class="answer-summary summary-{summary[1]}">{icon} {esc(summary[0])}</div>'
            messages.append({"role": "assistant", "content": body})
        if turn.status == "failed":
            messages.append({
                "role": "assistant",
                "content": f"⚠️ **{t(lang, 'error_prefix')}**: {escape_markdown_text(code_message(turn.error or '', lang))}",
            })
        if turn.status == "stopped":
            messages.append({"role": "assistant", "content": f'<div class="turn-stopped">⏹ {esc(t(lang, "stopped_note"))}</div>'})
    return messages


# --------------------------------------------------------------------------- trace panel


def highlight(text: str, spans: Sequence[tuple[int, int, str]], lang: str) -> str:
    """``text`` escaped, with each ``(start, end, part)`` span in a ``<mark>`` (overlaps dropped)."""
    out: list[str] = []
    pos = 0
    for start, end, part in sorted(spans):
        start, end = max(start, pos), min(end, len(text))
        if end <= start:
            continue
        out.append(esc(text[pos:start]))
        out.append(f'<mark class="quote-hl" title="{esc(t(lang, "verified_quote", part=part))}">'
                   f"{esc(text[start:end])}</mark>")
        pos = end
    out.append(esc(text[pos:]))
    return "".join(out)


def web_card(result: SearchResult, number: int | None = None, dom_id: str | None = None,
             spans: Sequence[tuple[int, int, str]] = (), lang: str = "en", full: bool = False,
             anchors: bool = True) -> str:
    """A web source card: title (link), site, date, snippet. All escaped. ``spans`` (verified
    quotes) are offsets into ``title + "\\n" + snippet``, the text the judge saw; ``full`` shows
    the whole snippet (the sources panel) instead of its start (the trace)."""
    title_text = result.title or result.url
    cut = len(result.title) + 1
    title_spans = [(a, min(b, len(result.title)), p) for a, b, p in spans if a < len(result.title)]
    snippet_spans = [(max(a, cut) - cut, b - cut, p) for a, b, p in spans if b > cut]
    if title_spans and result.title:
        title = highlight(result.title, title_spans, lang)
    else:
        title = esc(clip(title_text, TITLE_CHARS if full else 200))
    snippet = highlight(result.snippet, snippet_spans, lang) if full else esc(clip(result.snippet, SNIPPET_CHARS))
    num = f'<span class="src-num">[{number}]</span> ' if number is not None else ""
    meta = " · ".join(esc(x) for x in (site_of(result), result.date.strip()) if x)
    id_attr = f' {"id" if anchors else "data-src"}="{esc(dom_id)}" data-n="{number}"' if dom_id else ""
    back = _back_button(lang) if dom_id else ""
    return (
        f'<div class="web-card src-card"{id_attr}>'
        f'<div class="web-title">{num}{external_link(result.url, title, "web-link")}{back}</div>'
        f'<div class="web-meta">{meta}</div>'
        f'<div class="web-snippet">{snippet}</div>'
        "</div>"
    )


def _back_button(lang: str) -> str:
    return f'<button type="button" class="back-to-answer">{esc(t(lang, "back_to_answer"))}</button>'


def how_found(passage: Passage, n: int, lang: str) -> str:
    """The rank and the search that found a passage, its raw score in the title (one scale per
    search: BM25, cosine, RRF; they are not comparable, so the page shows the rank)."""
    how = passage.source if passage.source in ("hybrid", "keyword", "vector") else ""
    label = t(lang, f"how_{how}") if how else "?"
    title = t(lang, "rank_title", n=n, how=label, score=f"{passage.score:.3f}",
              scale=t(lang, f"scale_{how}") if how else "?")
    return f'<span class="hit-how how-{esc(how or "unknown")}" title="{esc(title)}">#{n} · {esc(label)}</span>'


def _part_html(part: PartResult, lang: str) -> str:
    status = part.status if part.status in PART_ICONS else "not_found"
    head = (f'<span class="pstatus pstatus-{status}">{PART_ICONS[status]} {esc(t(lang, f"part_{status}"))}</span> '
            f'<b class="part-name">{esc(part.part)}</b>')
    if part.answer and status != "not_found":
        head += f' → <span class="part-answer">{esc(part.answer)}</span>'
    quote = ""
    if part.quote and status != "not_found":
        quote = f'<blockquote class="part-quote">{esc(part.quote)}</blockquote>'
    meta = []
    if part.matched_source is not None:
        origin = t(lang, f"origin_{part.origin}") if part.origin else "?"
        meta.append(f'<span class="part-found">{esc(t(lang, "found_in", n=part.matched_source, origin=origin))}</span>')
    if part.source is not None and part.source != part.matched_source:
        meta.append(esc(t(lang, "cited_as", n=part.source)))
    if part.detail:
        meta.append(f'<span class="part-detail">{esc(code_message(part.detail, lang))}</span>')
    meta_html = f'<div class="part-meta">{" · ".join(meta)}</div>' if meta else ""
    return f'<li class="part part-{status}"><div class="part-head">{head}</div>{quote}{meta_html}</li>'


def evaluation_html(evaluation: Evaluation, round_no: int | None, lang: str) -> str:
    """One evaluation round: the code's verdict; in evidence and guarded modes also the model's own
    verdict next to it and each part of the question with its quote and check; then the JSON."""
    def verdict(enough: bool) -> str:
        cls = "enough" if enough else "not-enough"
        return f'<span class="verdict {cls}">{esc(t(lang, "verdict_enough" if enough else "verdict_not_enough"))}</span>'

    out = [f'<div class="kv"><span class="round">{esc(t(lang, "round", n=round_no))}</span> {verdict(evaluation.enough)}</div>']
    if evaluation.mode in ("evidence", "guarded"):
        model = verdict(bool(evaluation.model_enough)) if evaluation.model_enough is not None else "?"
        mode = t(lang, f"judge_{evaluation.mode}")
        out.append(
            f'<div class="kv verdicts"><span class="model-verdict">{esc(t(lang, "model_verdict"))}: {model}</span> · '
            f'<span class="code-verdict">{esc(t(lang, "code_verdict"))} ({esc(mode)}): {verdict(evaluation.enough)}</span></div>'
        )
        if evaluation.parts:
            items = "".join(_part_html(p, lang) for p in evaluation.parts)
            out.append(f'<div class="kv parts-title">{esc(t(lang, "parts_title"))}</div>'
                       f'<div class="parts-legend">{esc(t(lang, "verified_means"))}</div><ul class="parts">{items}</ul>')
    out.append(f'<pre class="eval-json" data-round="{esc(round_no)}">{esc(_eval_json_of(evaluation))}</pre>')
    return "".join(out)


def _eval_json_of(evaluation: Evaluation) -> str:
    data = evaluation.model_dump()
    ordered = {key: data.get(key) for key in ("enough", "missing", "reason", "web_query", "confidence")}
    return json.dumps(ordered, ensure_ascii=False, indent=2)


def checks_html(checks: Sequence[SentenceResult], lang: str) -> str:
    """The verify_answer entry: the summary line and each sentence that is not supported."""
    summary = answer_summary(checks, lang)
    if summary is None:
        return f'<div class="kv muted">{esc(t(lang, "checks_title"))}: –</div>'
    rows = "".join(
        f'<li class="check check-{esc(c.status)}"><span class="check-status">{esc(t(lang, f"sent_{c.status}"))}</span> '
        f'“{esc(clip(c.text, 120))}” <span class="check-reason">{esc(code_message(c.reason, lang))}</span></li>'
        for c in checks if c.status in ("unsupported", "uncited")
    )
    cls = "enough" if summary[1] == "all" else "not-enough"
    head = f'<div class="kv checks-summary"><span class="verdict {cls}">{esc(summary[0])}</span></div>'
    return head + (f'<ul class="checks">{rows}</ul>' if rows else "")


def _hits_html(passages: Sequence[Passage], lang: str) -> str:
    rows = "".join(
        f'<li class="hit"><span class="hit-num">[{n}]</span> '
        f'<span class="hit-chapter">{esc(p.label())}</span> {how_found(p, n, lang)}'
        f'<div class="hit-preview">{esc(clip(p.text, HIT_PREVIEW_CHARS))}</div></li>'
        for n, p in enumerate(passages, start=1)
    )
    return (f'<div class="kv">{esc(t(lang, "hits", n=len(passages)))} '
            f'<span class="muted legend">{esc(t(lang, "rank_legend"))}</span></div><ul class="hits">{rows}</ul>')


def _entry_body(entry: TraceEntry, turn: Turn, lang: str) -> str:
    parts: list[str] = []
    if entry.standalone_question and entry.standalone_question.strip() != turn.question.strip():
        parts.append(f'<div class="kv"><b>{esc(t(lang, "rewritten"))}:</b> {esc(entry.standalone_question)}</div>')
    if entry.route is not None:
        strategy = _strategy(lang, entry.route.strategy)
        parts.append(
            f'<div class="kv route route-{esc(entry.route.strategy)}"><b>{esc(t(lang, "strategy"))}:</b> {esc(strategy)}</div>'
            f'<div class="kv"><b>{esc(t(lang, "reason"))}:</b> {esc(code_message(entry.route.reason, lang))}</div>'
        )
    if entry.passages is not None:
        if not entry.passages:
            parts.append(f'<div class="kv muted">{esc(t(lang, "no_hits"))}</div>')
        else:
            parts.append(_hits_html(entry.passages, lang))
    if entry.evaluation is not None:
        parts.append(evaluation_html(entry.evaluation, entry.evaluation_round, lang))
    for rnd in entry.web_rounds:
        results = [r for r in (rnd.get("results") or []) if isinstance(r, SearchResult)]
        notes = [str(n) for n in (rnd.get("notes") or [])]
        provider = str(rnd.get("provider") or "")
        block = [f'<div class="kv web-query"><b>{esc(t(lang, "web_query"))}:</b> <code>{esc(rnd.get("query", ""))}</code></div>']
        if provider:
            block.append(f'<div class="kv"><b>{esc(t(lang, "provider"))}:</b> {esc(provider)}</div>')
        if notes:
            block.append("".join(f'<div class="note">ℹ️ {esc(code_message(n, lang))}</div>' for n in notes))
        if rnd.get("error"):
            block.append(f'<div class="note error">⚠️ {esc(code_message(str(rnd["error"]), lang))}</div>')
        if results:
            block.append('<div class="web-cards">' + "".join(web_card(r, lang=lang) for r in results) + "</div>")
        elif not rnd.get("error"):
            block.append(f'<div class="kv muted">{esc(t(lang, "no_results"))}</div>')
        parts.append('<div class="web-round">' + "".join(block) + "</div>")
    if entry.answer_mode:
        mode = t(lang, f"mode_{entry.answer_mode}")
        parts.append(f'<div class="kv"><b>{esc(t(lang, "answer_mode"))}:</b> {esc(mode)}</div>')
    if entry.answer_checks is not None:
        parts.append(checks_html(entry.answer_checks, lang) if entry.answer_checks
                     else f'<div class="kv muted">{esc(t(lang, "checks_off"))}</div>')
    for notice in entry.notices:
        level = str(notice.get("level", "info"))
        level = level if level in {"info", "warning", "error"} else "info"
        icon = {"info": "ℹ️", "warning": "⚠️", "error": "⛔"}[level]
        parts.append(f'<div class="note {level}">{icon} {esc(code_message(notice.get("msg") or str(notice.get("message", "")), lang))}</div>')
    if entry.error:
        parts.append(f'<div class="note error">⛔ {esc(code_message(entry.error, lang))}</div>')
    return "".join(parts)


def render_trace(turn: Turn | None, lang: str) -> str:
    """The trace panel for one turn: one entry per node run, in order, with durations."""
    if turn is None:
        return f'<div class="rag-trace empty">{esc(t(lang, "trace_empty"))}</div>'
    items = []
    for entry in turn.entries:
        title = node_title(lang, entry.node)
        if entry.duration_s is not None:
            dur = f'<span class="trace-dur">{esc(fmt_s(entry.duration_s))}</span>'
        elif entry.status == "stopped":
            dur = f'<span class="trace-dur stopped">{esc(t(lang, "stopped"))}</span>'
        else:
            dur = f'<span class="trace-dur running">{esc(t(lang, "running"))}</span>'
        items.append(
            f'<li class="trace-entry status-{esc(entry.status)}" data-node="{esc(entry.node)}">'
            f'<div class="trace-head"><span class="trace-status">{STATUS_ICONS.get(entry.status, "")}</span> '
            f'<span class="trace-icon">{NODE_ICONS.get(entry.node, "•")}</span> '
            f'<span class="trace-title">{esc(title)}</span> <code class="trace-node">{esc(entry.node)}</code>{dur}</div>'
            f'<div class="trace-body">{_entry_body(entry, turn, lang)}</div></li>'
        )
    footer = ""
    if turn.status == "queued":
        footer += f'<div class="note trace-queued">⏳ {esc(t(lang, "queued"))}</div>'
    if turn.status == "failed":
        footer += (f'<div class="note error trace-failed">⛔ {esc(t(lang, "error_prefix"))}: '
                   f'{esc(code_message(turn.error or "", lang))}</div>')
    if turn.status == "stopped":
        footer += f'<div class="note warning trace-stopped">⏹ {esc(t(lang, "stopped_note"))}</div>'
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


def verified_spans(turn: Turn) -> dict[int, list[tuple[int, int, str]]]:
    """Source number -> the spans of its verified quotes (from every evaluation round), each with
    the part of the question it answers."""
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for evaluation in turn.evaluations:
        for part in evaluation.parts:
            if part.status == "verified" and part.matched_source is not None and part.span is not None:
                start, end = part.span
                if 0 <= start < end:
                    spans.setdefault(part.matched_source, []).append((start, end, part.part))
    return spans


def _turn_sources(turn: Turn, index: int, lang: str, anchors: bool = True) -> str:
    parts = []
    spans = verified_spans(turn)
    attr = "id" if anchors else "data-src"
    if turn.passages:
        items = "".join(
            f'<div class="book-src src-card" {attr}="{anchor_id(index, n)}" data-n="{n}">'
            f'<div class="src-head"><span class="src-num">[{n}]</span> <b>{esc(p.label())}</b>'
            f'{f" · {esc(p.book_title)}" if p.book_title else ""} {how_found(p, n, lang)}'
            f"{_back_button(lang)}</div>"
            f'<div class="src-text">{highlight(p.text, spans.get(n, []), lang)}</div></div>'
            for n, p in enumerate(turn.passages, start=1)
        )
        parts.append(f'<h4>{esc(t(lang, "book_sources"))}</h4>{items}')
    if turn.web_results:
        offset = len(turn.passages)
        cards = "".join(
            web_card(r, number=offset + n, dom_id=anchor_id(index, offset + n), spans=spans.get(offset + n, []),
                     lang=lang, full=True, anchors=anchors)
            for n, r in enumerate(turn.web_results, start=1)
        )
        parts.append(f'<h4>{esc(t(lang, "web_sources"))}</h4><div class="web-cards">{cards}</div>')
    return "".join(parts)


def render_sources(state: UiState, lang: str, anchors: bool = True) -> str:
    """Sources of every turn, newest first and open; earlier turns folded (their citation
    anchors stay valid). ``anchors=False``: the same with ``data-src`` instead of ids (the hidden
    copy that citation previews read, which must not repeat the panel's ids)."""
    blocks = []
    for index in range(len(state.turns) - 1, -1, -1):
        turn = state.turns[index]
        body = _turn_sources(turn, index, lang, anchors)
        if not body:
            continue
        if index == len(state.turns) - 1:
            blocks.append(f'<div class="turn-sources current" data-turn="{index}">{body}</div>')
        else:
            blocks.append(
                f'<details class="turn-sources" data-turn="{index}"><summary>{esc(t(lang, "earlier_question"))}: '
                f"{esc(clip(turn.question, 60))}</summary>{body}</details>"
            )
    if not blocks:
        return f'<div class="rag-sources empty">{esc(t(lang, "sources_empty"))}</div>'
    return f'<div class="rag-sources">{"".join(blocks)}</div>'


# --------------------------------------------------------------------------- banner and books


def render_banner(*, llm_model: str | None, llm_connected: bool, web_provider: str | None,
                  custom: bool, lang: str, llm_unreachable: str | None = None) -> str:
    """The mode banner: model connected / not reachable / retrieval-only, web on (provider) /
    disabled. ``llm_unreachable``: where the model could not be reached (already safe to show)."""
    if llm_connected and llm_unreachable:
        model = (f'<span class="badge error mode-model-unreachable">⚠️ '
                 f'{esc(t(lang, "banner_model_unreachable", where=llm_unreachable, model=llm_model or "?"))}</span>')
    elif llm_connected:
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


def fmt_eta(seconds: float, lang: str) -> str:
    """'about 3 min left' (rounded up to a minute past 90 s, else to 10 s)."""
    if seconds > 90:
        amount = t(lang, "minutes", n=int(-(-seconds // 60)))
    else:
        amount = t(lang, "seconds", n=max(10, int(-(-seconds // 10) * 10)))
    return t(lang, "eta", time=amount)


def book_status_text(book: Any, lang: str, eta_s: float | None = None) -> str:
    """A book's status for people: keyword-searchable while its vectors are computed (with the
    share done and the time left), ready, or error."""
    status = str(_book_field(book, "status", ""))
    embedded, chunks = _book_field(book, "embedded", ""), _book_field(book, "chunks", "")
    if status in {"keyword_ready", "embedding"} and isinstance(embedded, int) and isinstance(chunks, int) and chunks:
        if status == "keyword_ready" and embedded == 0:
            return t(lang, "status_keyword_ready")
        text = t(lang, "status_searchable_embedding", pct=100 * embedded // chunks)
        if eta_s is not None and status == "embedding":
            text += f" · {fmt_eta(eta_s, lang)}"
        return text
    return t(lang, f"status_{status}") if status in {"keyword_ready", "embedding", "ready", "error"} else status


def render_books(books: Sequence[Any] | None, lang: str, message: str = "", level: str = "info",
                 etas: Mapping[str, float] | None = None) -> str:
    """The book list with status (books are BookInfo objects or dicts); ``message`` is plain text;
    ``etas``: book id -> seconds until its vectors are done."""
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
        book_id = str(_book_field(book, "id"))
        error = _book_field(book, "error", None)
        error_html = f'<div class="note error book-error">{esc(code_message(str(error), lang))}</div>' if error else ""
        status_text = book_status_text(book, lang, (etas or {}).get(book_id))
        rows.append(
            f'<tr class="book-row status-{esc(status)}" data-book-id="{esc(book_id)}">'
            f'<td class="book-title">{esc(_book_field(book, "title"))}</td>'
            f"<td>{esc(_book_field(book, 'chapters', ''))}</td>"
            f"<td>{esc(_book_field(book, 'chunks', ''))}</td>"
            f"<td>{esc(_book_field(book, 'embedded', ''))}</td>"
            f'<td class="book-status">{esc(status_text)}{error_html}</td></tr>'
        )
    return f'<div class="rag-books">{msg}<table class="books"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
