"""The sources panel: book passages (verified quotes highlighted) and web cards."""

from __future__ import annotations

from collections.abc import Sequence

from rag.i18n import t
from rag.schemas import Passage, SearchResult
from rag.ui.render.safe import anchor_id, clip, esc, external_link, site_of
from rag.ui.translate import Turn, UiState

SNIPPET_CHARS = 280
TITLE_CHARS = 300


def passage_label(passage: Passage, lang: str) -> str:
    """Where a passage is, for people: its chapter's title, else "Chapter N" in ``lang``, else its
    book's title."""
    if not passage.chapter_title.strip() and passage.chapter_num is not None:
        return t(lang, "chapter_n", n=passage.chapter_num)
    return passage.label()


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
            f'<div class="src-head"><span class="src-num">[{n}]</span> <b>{esc(passage_label(p, lang))}</b>'
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


