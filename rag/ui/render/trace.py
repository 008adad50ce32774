"""The trace panel: one entry per node run, with its route, hits, evaluation rounds (parts and
quotes), web rounds, sentence checks and notices."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rag.agent.routing import CodeRoute, route_reason
from rag.checks import PartCheck, SentenceCheck
from rag.i18n import node_title, t, text
from rag.schemas import Evaluation, Passage, SearchResult
from rag.ui.render.answer import answer_summary, strategy_text
from rag.ui.render.icons import NODE_ICONS, PART_ICONS, STATUS_ICONS
from rag.ui.render.panels import provider_label
from rag.ui.render.safe import clip, esc, fmt_s
from rag.ui.render.sources import how_found, passage_label, web_card
from rag.ui.translate import STOP_NOTES, TraceEntry, Turn

HIT_PREVIEW_CHARS = 60


def _part_html(part: PartCheck, lang: str) -> str:
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
        meta.append(f'<span class="part-detail">{esc(text(lang, part.detail))}</span>')
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


def checks_html(checks: Sequence[SentenceCheck], lang: str) -> str:
    """The verify_answer entry: the summary line and each sentence that is not supported."""
    summary = answer_summary(checks, lang)
    if summary is None:
        return f'<div class="kv muted">{esc(t(lang, "checks_title"))}: –</div>'
    rows = "".join(
        f'<li class="check check-{esc(c.status)}"><span class="check-status">{esc(t(lang, f"sent_{c.status}"))}</span> '
        f'“{esc(clip(c.text, 120))}” <span class="check-reason">{esc(text(lang, c.reason))}</span></li>'
        for c in checks if c.status in ("unsupported", "uncited", "not_checked")
    )
    cls = "enough" if summary[1] == "all" else "not-enough"
    head = f'<div class="kv checks-summary"><span class="verdict {cls}">{esc(summary[0])}</span></div>'
    return head + (f'<ul class="checks">{rows}</ul>' if rows else "")


def _hits_html(passages: Sequence[Passage], lang: str) -> str:
    rows = "".join(
        f'<li class="hit"><span class="hit-num">[{n}]</span> '
        f'<span class="hit-chapter">{esc(passage_label(p, lang))}</span> {how_found(p, n, lang)}'
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
        strategy = strategy_text(lang, entry.route.strategy)
        # the router's own words are the model's text; a route the code decided says why in ``lang``
        cls = "code-text" if isinstance(entry.route, CodeRoute) else "model-text"
        parts.append(
            f'<div class="kv route route-{esc(entry.route.strategy)}"><b>{esc(t(lang, "strategy"))}:</b> {esc(strategy)}</div>'
            f'<div class="kv"><b>{esc(t(lang, "reason"))}:</b> '
            f'<span class="{cls}">{esc(text(lang, route_reason(entry.route)))}</span></div>'
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
        notes = list(rnd.get("notes") or [])
        provider = str(rnd.get("provider") or "")
        block = [f'<div class="kv web-query"><b>{esc(t(lang, "web_query"))}:</b> <code>{esc(rnd.get("query", ""))}</code></div>']
        if provider:
            block.append(f'<div class="kv"><b>{esc(t(lang, "provider"))}:</b> {esc(provider_label(lang, provider))}</div>')
        if notes:
            block.append("".join(f'<div class="note">ℹ️ {esc(text(lang, n))}</div>' for n in notes))
        if rnd.get("error"):
            block.append(f'<div class="note error">⚠️ {esc(text(lang, rnd["error"]))}</div>')
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
        parts.append(f'<div class="note {level}">{icon} {esc(text(lang, notice.get("msg")))}</div>')
    if entry.error:
        parts.append(f'<div class="note error">⛔ {esc(text(lang, entry.error))}</div>')
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
            label = t(lang, "writing_chars", n=entry.written) if entry.written else t(lang, "running")
            dur = f'<span class="trace-dur running">{esc(label)}</span>'
        items.append(
            f'<li class="trace-entry status-{esc(entry.status)}" data-node="{esc(entry.node)}">'
            f'<div class="trace-head"><span class="trace-status">{STATUS_ICONS.get(entry.status, "")}</span> '
            f'<span class="trace-icon">{NODE_ICONS.get(entry.node, "•")}</span> '
            f'<span class="trace-title">{esc(title)}</span>{dur}</div>'
            f'<div class="trace-body">{_entry_body(entry, turn, lang)}</div></li>'
        )
    footer = ""
    if turn.status == "queued":
        footer += f'<div class="note trace-queued">⏳ {esc(t(lang, "queued"))}</div>'
    if turn.status == "failed":
        footer += (f'<div class="note error trace-failed">⛔ {esc(t(lang, "error_prefix"))}: '
                   f'{esc(text(lang, turn.error))}</div>')
    if turn.status == "stopped":
        footer += f'<div class="note warning trace-stopped">⏹ {esc(t(lang, STOP_NOTES[turn.stopped_by]))}</div>'
    if turn.total_s is not None:
        footer += f'<div class="trace-total"><b>{esc(t(lang, "total_time"))}:</b> <span class="total-s">{esc(fmt_s(turn.total_s))}</span></div>'
    question = f'<div class="trace-question">❓ {esc(turn.question)}</div>'
    return f'<div class="rag-trace status-{esc(turn.status)}">{question}<ol class="trace-list">{"".join(items)}</ol>{footer}</div>'


def evaluations_json(turn: Turn | None) -> list[dict[str, Any]]:
    """Each evaluation round of the turn as a plain dict (for gr.JSON)."""
    if turn is None:
        return []
    return [{"round": i, **e.model_dump()} for i, e in enumerate(turn.evaluations, start=1)]


