"""The chat: messages, the answer's citations and bare URLs linked, each checked sentence marked."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rag.checks import CITATION, SentenceCheck, citations_of
from rag.i18n import node_title, t, text
from rag.schemas import Passage, SearchResult
from rag.ui.render.icons import NODE_ICONS, STATUS_ICONS
from rag.ui.render.safe import (
    anchor_id,
    clip,
    esc,
    escape_markdown_text,
    external_link,
    find_urls,
    fmt_s,
    no_autolink,
    safe_url,
    url_text,
)
from rag.ui.render.sources import passage_label
from rag.ui.translate import STOP_NOTES, Turn, UiState

_CODE_SPAN = re.compile(r"`[^`\n]+`")
# Markdown that opens a line (list item, heading, quote): a sentence mark starts after it.
_LINE_LEAD = re.compile(r"^(?:\s*(?:[-*+]|\d{1,3}[.)])\s+|\s*#{1,6}\s+|\s*>\s?)+")


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
            title = t(self.lang, "cite_unsupported", n=n) if unsupported else passage_label(passage, self.lang)
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
    for m in CITATION.finditer(text):
        numbers = citations_of(m.group(0))
        marks.append((m.start(), m.end(), "".join(cites.link(n, unsupported) for n in numbers)))
    for start, end, href in find_urls(text):
        if not any(a < end and start < b for a, b, _ in marks):
            marks.append((start, end, f'<a class="answer-link" href="{esc(href)}" target="_blank" '
                                      f'rel="noopener noreferrer">{url_text(text[start:end])}</a>'))
    out: list[str] = []
    pos = 0
    for start, end, rendered in sorted(marks):
        if start < pos:
            continue
        out.append(no_autolink(escape_markdown_text(text[pos:start])))
        out.append(rendered)
        pos = end
    out.append(no_autolink(escape_markdown_text(text[pos:])))
    return "".join(out)


def usable_checks(answer: str, checks: Sequence[SentenceCheck]) -> list[SentenceCheck]:
    """The sentence checks that describe ``answer`` as it is (offsets in range, text equal), in
    order, without overlaps; none if any does not fit (they belong to another text)."""
    ordered = sorted(checks, key=lambda c: c.start)
    pos = 0
    for check in ordered:
        if check.start < pos or check.end > len(answer) or answer[check.start:check.end] != check.text:
            return []
        pos = check.end
    return ordered


def sentence_tip(check: SentenceCheck, lang: str) -> str:
    """What the page says about one checked sentence (on hover and keyboard focus)."""
    status = t(lang, f"sent_{check.status}")
    reason = text(lang, check.reason)
    if check.origin and check.status == "supported":
        return t(lang, "sent_tip", status=status, origin=t(lang, f"origin_{check.origin}"), reason=reason)
    return t(lang, "sent_tip_plain", status=status, reason=reason)


def link_citations(answer: str, turn_index: int, passages: Sequence[Passage],
                   web_results: Sequence[SearchResult], checks: Sequence[SentenceCheck] = (),
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


def answer_summary(checks: Sequence[SentenceCheck], lang: str) -> tuple[str, str] | None:
    """("5 of 6 sentences supported by their sources", css class), or None when no sentence claims
    anything."""
    claims = [c for c in checks if c.status != "no_claim"]
    if not claims:
        return None
    supported = sum(1 for c in claims if c.status == "supported")
    text = t(lang, "answer_summary", n=len(claims), k=supported)
    if supported < len(claims):
        bad = sum(1 for c in claims if c.status == "unsupported")
        unchecked = sum(1 for c in claims if c.status == "not_checked")
        text += t(lang, "answer_summary_detail", bad=bad, uncited=len(claims) - supported - bad - unchecked)
        if unchecked:  # never counted as supported, nor as wrong: code could not compare them
            text += t(lang, "answer_summary_not_checked", m=unchecked)
    return text, ("all" if supported == len(claims) else "some")


def strategy_text(lang: str, strategy: str) -> str:
    return t(lang, f"strategy_{strategy}") if strategy in ("simple", "complex") else strategy


def _thought_lines(turn: Turn, lang: str) -> list[str]:
    lines = []
    for entry in turn.entries:
        title = node_title(lang, entry.node)
        bits = [f"{STATUS_ICONS.get(entry.status, '')} {NODE_ICONS.get(entry.node, '•')} {escape_markdown_text(title)}"]
        if entry.duration_s is not None:
            bits.append(fmt_s(entry.duration_s))
        if entry.route is not None:
            bits.append(escape_markdown_text(strategy_text(lang, entry.route.strategy)))
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
            bits.append(escape_markdown_text(clip(text(lang, entry.error), 120)))
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
                "content": f"⚠️ **{t(lang, 'error_prefix')}**: {escape_markdown_text(text(lang, turn.error))}",
            })
        if turn.status == "stopped":
            messages.append({"role": "assistant", "content": f'<div class="turn-stopped">⏹ {esc(t(lang, STOP_NOTES[turn.stopped_by]))}</div>'})
    return messages
