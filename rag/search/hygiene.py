"""Result hygiene: everything a provider returns is untrusted text from the internet. These helpers
turn it into plain text (no HTML), bounded in size, deduplicated by URL identity, with clean dates,
and dig the human message out of a JSON error body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from rag.config import is_http_url
from rag.schemas import SearchResult

EXCERPT_CHARS = 200


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short one-line excerpt of a body for error messages (callers redact it)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _TextExtractor(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in {"br", "p", "div", "li"}:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def plain_text(value: object) -> str:
    """HTML (or plain text) -> one line of plain text: tags dropped, entities decoded,
    whitespace and control characters collapsed."""
    if value is None:
        return ""
    text = str(value)
    if "<" in text or "&" in text:
        parser = _TextExtractor()
        try:
            parser.feed(text)
            parser.close()
            text = "".join(parser.parts)
        except Exception:  # noqa: BLE001 - HTMLParser is lenient; never let hygiene fail a search
            text = re.sub(r"<[^>]*>", " ", text)
    text = "".join(ch if ch.isprintable() or ch.isspace() else " " for ch in text)
    return " ".join(text.split())


def first_text(*values: object) -> str:
    """The first value that is non-empty as plain text (e.g. a summary, else a snippet)."""
    for value in values:
        text = plain_text(value)
        if text:
            return text
    return ""


def truncate(text: str, limit: int) -> str:
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_TRACKING_PARAMS = re.compile(r"^(utm_[a-z]+|spm|fbclid|gclid|yclid|mc_cid|mc_eid)$", re.IGNORECASE)


def normalize_url(url: str) -> str:
    """The identity of a URL for deduplication: scheme, ``www.``, default port, fragment,
    trailing slash, tracking parameters and parameter order do not count."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    port = parts.port if parts.port not in (None, 80, 443) else None
    netloc = f"{host}:{port}" if port else host
    path = parts.path.rstrip("/")
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING_PARAMS.match(k))
    return urlunsplit(("", netloc, path, urlencode(query), ""))


def site_from_url(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


_ISO_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def clean_date(value: object) -> str:
    text = plain_text(value)
    match = _ISO_DATE.match(text)
    if match:
        return match.group(1)
    return truncate(text, 40)


def make_result(
    *,
    provider: str,
    url: object,
    title: object,
    snippet: object,
    site_name: object = "",
    date: object = "",
) -> SearchResult | None:
    """One clean result, or None when it is unusable (no http(s) URL)."""
    url_text = str(url or "").strip()
    if not url_text or any(ch.isspace() for ch in url_text):
        return None
    if not is_http_url(url_text):
        return None
    site = plain_text(site_name) or site_from_url(url_text)
    return SearchResult(
        title=truncate(plain_text(title) or site or url_text, 300),
        url=url_text,
        snippet=plain_text(snippet),
        site_name=truncate(site, 100),
        date=clean_date(date),
        provider=provider,
    )


def clean_results(results: Iterable[SearchResult | None], count: int, snippet_chars: int) -> list[SearchResult]:
    """Dedupe by normalised URL, drop empty snippets, truncate snippets, keep at most ``count``."""
    seen: set[str] = set()
    kept: list[SearchResult] = []
    for result in results:
        if len(kept) >= count:
            break
        if result is None:
            continue
        snippet = plain_text(result.snippet)
        if not snippet:
            continue
        key = normalize_url(result.url)
        if key in seen:
            continue
        seen.add(key)
        kept.append(result.model_copy(update={"snippet": truncate(snippet, snippet_chars)}))
    return kept


_MESSAGE_KEYS = ("msg", "message", "error", "errors", "error_message", "error_msg", "detail", "description",
                 "reason")


def find_message(data: Any) -> str:
    """The human message in a JSON body of any shape: a string itself, else the first of msg /
    message / error / errors / detail... (nested, or in a list), else the JSON of a message field
    that holds no string (``{"msg": {"text": ...}}``); "" when there is none."""
    if isinstance(data, str):
        return data
    if isinstance(data, list):
        for item in data:
            found = find_message(item)
            if found:
                return found
        return ""
    if isinstance(data, dict):
        for key in _MESSAGE_KEYS:
            value = data.get(key)
            if not value or isinstance(value, bool):
                continue
            found = find_message(value)
            if found:
                return found
            if isinstance(value, (dict, list)):
                return json.dumps(value, ensure_ascii=False)
    return ""


def list_of_dicts(value: Any) -> list[dict[str, Any]] | None:
    """``value`` as a list of dicts (non-dict items dropped), or None when it is not a list."""
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, dict)]
