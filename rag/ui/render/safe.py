"""Escaping and safe links: everything that comes from outside the code (web titles, snippets, URLs,
book text, book titles, model output, error messages) goes through ``esc`` or ``safe_url`` before it
reaches the page; answer text goes through ``escape_markdown_text``."""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from rag.schemas import SearchResult

_MD_ESCAPE = str.maketrans({"[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;"})
# A bare URL ends at whitespace, at any non-ASCII character (Chinese punctuation and brackets
# included: "（https://x.org/a）。" links to https://x.org/a) and at the ASCII characters a URL
# never holds unescaped; trailing sentence punctuation and an unbalanced ")" are not part of it.
_URL = re.compile(r"(?:https?://|www\.)[A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?'*_"
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


def no_autolink(md: str) -> str:
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


def url_text(url: str) -> str:
    """A URL as link text the Markdown autolinker leaves alone (entities display as the URL)."""
    return no_autolink(escape_markdown_text(url)).replace(".", "&#46;").replace("@", "&#64;")
