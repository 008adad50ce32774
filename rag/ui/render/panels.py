"""The mode banner and the books table (with each book's status and the time its vectors take)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag.i18n import t, text
from rag.ui.render.safe import esc


def provider_label(lang: str, name: str) -> str:
    """A web search provider (SEARCH_PROVIDER's value: a name, or a chain "bocha,duckduckgo") as the
    page names it in ``lang``: "none" in words, a chain as its providers in the order tried."""
    from rag.i18n import en
    from rag.search.registry import SPECS

    def one(item: str) -> str:
        if f"provider.{item}" in en.CATALOGUE:
            return t(lang, f"provider.{item}")
        spec = SPECS.get(item)
        return spec.label if spec is not None else item

    names = [n.strip().lower() for n in (name or "").split(",") if n.strip()] or ["none"]
    if len(names) == 1:
        return one(names[0])
    return t(lang, "provider.chain", names=" → ".join(one(n) for n in names))


@dataclass(frozen=True)
class Banner:
    """What the mode banner shows: the model (connected or not), the web provider (None: off),
    whether the session has its own settings, where the model could not be reached or did not answer
    in time (already safe to show), and the embedded model's download and load (``local``, a
    ``rag.local.LocalState``)."""

    llm_model: str | None
    llm_connected: bool
    web_provider: str | None
    custom: bool = False
    llm_unreachable: str | None = None
    llm_slow: str | None = None
    local: Any | None = None


def render_banner(banner: Banner, lang: str) -> str:
    """The mode banner: model connected / too slow / not reachable / retrieval-only (or the
    embedded model's download and load), web on (provider) / disabled."""
    llm_model, llm_connected, local = banner.llm_model, banner.llm_connected, banner.local
    llm_unreachable, llm_slow, web_provider = banner.llm_unreachable, banner.llm_slow, banner.web_provider
    if llm_connected and llm_unreachable:
        model = (f'<span class="badge error mode-model-unreachable">⚠️ '
                 f'{esc(t(lang, "banner_model_unreachable", where=llm_unreachable, model=llm_model or "?"))}</span>')
    elif llm_connected and llm_slow:
        model = (f'<span class="badge warn mode-model-slow">🐢 '
                 f'{esc(t(lang, "banner_model_slow", where=llm_slow, model=llm_model or "?"))}</span>')
    elif llm_connected and local is not None and local.phase == "ready":
        model = f'<span class="badge ok mode-model mode-local">🤖 {esc(t(lang, "banner_local_ready", model=local.model))}</span>'
    elif llm_connected:
        model = f'<span class="badge ok mode-model">🤖 {esc(t(lang, "banner_model", model=llm_model or "?"))}</span>'
    elif local is not None and local.phase != "ready":
        model = _local_badge(local, lang)
    else:
        model = f'<span class="badge warn mode-retrieval-only">📚 {esc(t(lang, "banner_retrieval_only"))}</span>'
    if web_provider:
        web = f'<span class="badge ok mode-web">🌐 {esc(t(lang, "banner_web_on", provider=provider_label(lang, web_provider)))}</span>'
    else:
        web = f'<span class="badge muted mode-web-off">🚫 {esc(t(lang, "banner_web_off"))}</span>'
    extra = f'<span class="badge info">⚙️ {esc(t(lang, "banner_custom"))}</span>' if banner.custom else ""
    return f'<div class="rag-banner">{model}{web}{extra}</div>'


def _local_badge(local: Any, lang: str) -> str:
    """The embedded model on its way (downloading, loading) or failed; answers are retrieval-only meanwhile."""
    if local.phase == "failed":
        reason = text(lang, local.error) if local.error is not None else "?"
        return (f'<span class="badge warn mode-retrieval-only mode-local-failed">📚 '
                f'{esc(t(lang, "banner_local_failed", model=local.model, reason=reason))}</span>')
    if local.phase == "downloading":
        mb = 1024 * 1024
        label = t(lang, "banner_local_downloading", model=local.model, pct=local.pct,
                  done=local.done // mb, total=local.total // mb if local.total else "?")
        return f'<span class="badge info mode-local-downloading">⏬ {esc(label)}</span>'
    return (f'<span class="badge info mode-local-loading">⏳ '
            f'{esc(t(lang, "banner_local_loading", model=local.model))}</span>')


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
        error_html = f'<div class="note error book-error">{esc(text(lang, error))}</div>' if error else ""
        notice = _book_field(book, "notice", None)
        if notice and status in {"keyword_ready", "embedding"}:  # e.g. embedding will take long: said before the wait
            error_html += f'<div class="note warning book-notice">{esc(text(lang, notice))}</div>'
        status_text = book_status_text(book, lang, (etas or {}).get(book_id))
        author = str(_book_field(book, "author", "") or "").strip()
        author_html = f' <span class="book-author muted">· {esc(author)}</span>' if author else ""
        rows.append(
            f'<tr class="book-row status-{esc(status)}" data-book-id="{esc(book_id)}">'
            f'<td class="book-title">{esc(_book_field(book, "title"))}{author_html}</td>'
            f"<td>{esc(_book_field(book, 'chapters', ''))}</td>"
            f"<td>{esc(_book_field(book, 'chunks', ''))}</td>"
            f"<td>{esc(_book_field(book, 'embedded', ''))}</td>"
            f'<td class="book-status">{esc(status_text)}{error_html}</td></tr>'
        )
    return f'<div class="rag-books">{msg}<table class="books"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
