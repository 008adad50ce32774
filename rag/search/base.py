"""Shared pieces of the web search providers: typed errors, result hygiene, the HTTP plumbing
every keyed provider uses.

Everything a provider returns is untrusted text from the internet. This module turns it into
plain text (no HTML), bounded in size, deduplicated; ``rag.agent.context.format_web_context``
wraps it in delimiters the web text cannot forge.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from pydantic import SecretStr

from rag.errors import ConfigError, SearchError
from rag.schemas import SearchOutcome, SearchResult

logger = logging.getLogger(__name__)

EXCERPT_CHARS = 200
MAX_QUERY_CHARS = 400
DEFAULT_MAX_RETRY_AFTER = 10.0
#: Largest response body read from a provider (after decompression); a search answer is a few KB.
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
REDACTED = "***"


# --------------------------------------------------------------------------- errors


class SearchAuthError(SearchError):
    """The key is missing, invalid, or the account may not search (HTTP 401/403)."""


class SearchConfigError(SearchError):
    """The provider refuses because of how it is set up (e.g. SearXNG without JSON output)."""


class SearchRequestError(SearchError):
    """The provider rejected the request itself (HTTP 400, 404, other 4xx)."""

    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(provider, message)


class SearchRateLimited(SearchError):
    """HTTP 429 (or a plan quota). ``retry_after`` is in seconds when the provider said so."""

    def __init__(self, provider: str, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(provider, message)


class SearchServerError(SearchError):
    """HTTP 5xx; the message carries a short excerpt of the body."""

    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(provider, message)


class SearchTimeout(SearchError):
    """No (complete) answer within ``search_timeout``: the total time of one request, however
    slowly the server trickles its headers or body."""


class SearchNetworkError(SearchError):
    """The provider could not be reached (DNS, refused connection, TLS...)."""


class SearchBadResponse(SearchError):
    """The body is not JSON, or JSON of the wrong shape."""


class SearchResponseTooLarge(SearchBadResponse):
    """The body is larger than ``max_response_bytes``; it is not read further."""


class SearchInvalidQuery(SearchError):
    """The query is empty."""


class BudgetExceeded(SearchError):
    """The per-session budget of web searches is used up."""


class SearchChainFailed(SearchError):
    """Every provider of a failover chain failed; ``errors`` holds each one, in order."""

    def __init__(self, provider: str, errors: Sequence[SearchError]) -> None:
        self.errors = list(errors)
        detail = "; ".join(f"{type(e).__name__}: {e}" for e in self.errors)
        super().__init__(provider, f"every provider failed ({detail})")


# --------------------------------------------------------------------------- secrets


class Redactor:
    """Replaces secret values (and URL credentials, Basic/Bearer credentials) in any text that may
    reach a user or a log."""

    _URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")

    def __init__(self, secrets: Iterable[SecretStr | str | None] = ()) -> None:
        values: list[str] = []
        for secret in secrets:
            if secret is None:
                continue
            value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
            if value and len(value) >= 4:
                values.append(value)
        self._values = sorted(set(values), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        from rag.logs import redact  # also: Basic/Bearer credentials, Authorization values

        for value in self._values:
            text = text.replace(value, REDACTED)
        text = self._URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
        return redact(text, [])

    def __repr__(self) -> str:
        return f"Redactor({len(self._values)} secret(s))"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short one-line excerpt of a body for error messages (callers redact it)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --------------------------------------------------------------------------- hygiene


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
    try:
        scheme = urlsplit(url_text).scheme.lower()
    except ValueError:
        return None
    if scheme not in {"http", "https"}:
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


# --------------------------------------------------------------------------- providers


def parse_retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - now()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class Provider:
    """Base of every provider: ``search`` and ``search_detailed`` on top of ``_fetch``.

    Subclasses implement ``_fetch(query, count, notes) -> list[SearchResult | None]`` (raw,
    possibly dirty results) and raise ``SearchError`` subclasses; this class cleans the results.
    """

    name: str = "provider"

    def __init__(self, *, snippet_chars: int = 800, max_count: int = 8) -> None:
        self.snippet_chars = snippet_chars
        self.max_count = max(1, max_count)
        self._redact: Callable[[str], str] = Redactor()

    def _fetch(self, query: str, count: int, notes: list[str]) -> list[SearchResult | None]:
        raise NotImplementedError

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        query = " ".join(str(query or "").split())
        if not query:
            raise SearchInvalidQuery(self.name, "the search query is empty")
        notes: list[str] = []
        if len(query) > MAX_QUERY_CHARS:
            query = query[:MAX_QUERY_CHARS]
            notes.append(f"query cut to {MAX_QUERY_CHARS} characters")
        count = min(int(count), self.max_count)
        if count <= 0:
            return SearchOutcome(results=[], provider=self.name, notes=notes)
        started = time.monotonic()
        try:
            raw = self._fetch(query, count, notes)
        except SearchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a parsing bug must still be a typed error
            logger.warning("%s: unexpected %s while searching", self.name, type(exc).__name__)
            detail = self._redact(excerpt(str(exc)))
            raise SearchBadResponse(self.name, f"unexpected {type(exc).__name__}: {detail or 'no detail'}") from None
        results = clean_results(raw, count, self.snippet_chars)
        if not results:
            notes.append(f"{self.name}: no results")
        logger.info(
            "web search via %s: %d result(s) (%d raw) in %.2f s", self.name, len(results), len(raw), time.monotonic() - started
        )
        return SearchOutcome(results=results, provider=self.name, notes=notes)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP connections)."""

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class HttpProvider(Provider):
    """A provider spoken to over HTTP with one ``httpx.Client`` (created in the constructor).

    Maps transport failures and status codes to the typed errors; honours ``Retry-After`` once
    on HTTP 429 (waiting at most ``max_retry_after`` seconds, through the injectable ``sleep``).
    Each request gets ``timeout`` seconds in total (httpx's own timeout bounds each read, so a
    server trickling one byte at a time would hold it indefinitely) and at most
    ``max_response_bytes`` of body.
    """

    #: Environment variable holding the key, named in auth errors ("" for keyless providers).
    key_env: str = ""

    def __init__(
        self,
        *,
        timeout: float = 8.0,
        snippet_chars: int = 800,
        max_count: int = 8,
        secrets: Iterable[SecretStr | str | None] = (),
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(snippet_chars=snippet_chars, max_count=max_count)
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._redact = Redactor(secrets)
        self._owns_client = client is None
        self._client = client or httpx.Client(
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
            headers={"Accept": "application/json", "User-Agent": "enough-rag/0.1"},
        )
        self._sleep = sleep
        self.max_retry_after = max_retry_after

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    # -- to be provided by subclasses
    def _build_request(self, query: str, count: int) -> httpx.Request:
        raise NotImplementedError

    def _auth_message(self, status: int, detail: str) -> str:
        what = f"the key in {self.key_env} was rejected" if self.key_env else "access was refused"
        return f"{what} (HTTP {status}){': ' + detail if detail else ''}"

    def _forbidden(self, status: int, detail: str) -> SearchError:
        return SearchAuthError(self.name, self._auth_message(status, detail))

    def _error_detail(self, response: httpx.Response) -> str:
        """A short, redacted excerpt of an error body (its message field when it is JSON)."""
        text = response.text
        try:
            data = json.loads(text)
        except ValueError:
            return self._redact(excerpt(text))
        message = _find_message(data)
        return self._redact(excerpt(message if message else text))

    # -- plumbing
    def _send(self, request: httpx.Request) -> httpx.Response:
        try:
            return self._exchange_within_deadline(request)
        except SearchError:
            raise
        except httpx.TimeoutException as exc:
            raise SearchTimeout(self.name, f"no answer within {self.timeout:g} s ({type(exc).__name__})") from None
        except httpx.DecodingError as exc:
            reason = self._redact(excerpt(str(exc) or type(exc).__name__))
            raise SearchBadResponse(self.name, f"answered with a body that cannot be decoded: {reason}") from None
        except httpx.HTTPError as exc:  # transport errors, decoding errors, invalid URLs...
            reason = self._redact(excerpt(str(exc) or type(exc).__name__))
            raise SearchNetworkError(self.name, f"could not reach {self._where(request)}: {reason}") from None

    def _exchange_within_deadline(self, request: httpx.Request) -> httpx.Response:
        """``_exchange`` in a worker thread, given up after ``timeout`` seconds in total. The
        abandoned worker stops at its next chunk (or read timeout) and closes its connection."""
        outcome: dict[str, Any] = {}
        done, cancelled = threading.Event(), threading.Event()

        def work() -> None:
            try:
                outcome["response"] = self._exchange(request, cancelled)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name=f"{self.name}-request", daemon=True).start()
        if not done.wait(self.timeout):
            cancelled.set()
            logger.info("%s: no complete answer within %g s; request abandoned", self.name, self.timeout)
            raise SearchTimeout(self.name, f"no answer within {self.timeout:g} s (the whole request, SEARCH_TIMEOUT)")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["response"]

    def _exchange(self, request: httpx.Request, cancelled: threading.Event) -> httpx.Response:
        """Send, then read the (decoded) body in chunks up to ``max_response_bytes``; returns a
        response whose body is fully read."""
        response = self._client.send(request, stream=True)
        try:
            limit = self.max_response_bytes
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > limit:
                raise self._too_large(int(declared))
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                if cancelled.is_set():
                    raise SearchTimeout(self.name, "abandoned")  # nobody waits for it any more
                size += len(chunk)
                if size > limit:
                    raise self._too_large(None)
                chunks.append(chunk)
        finally:
            response.close()
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in {"content-encoding", "content-length", "transfer-encoding"}]
        return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=request)

    def _too_large(self, declared: int | None) -> SearchResponseTooLarge:
        limit = f"{self.max_response_bytes / 1024 / 1024:g} MB"
        size = f" ({declared / 1024 / 1024:.1f} MB)" if declared else ""
        return SearchResponseTooLarge(self.name, f"answered with a body larger than {limit}{size}; not read further")

    def _where(self, request: httpx.Request) -> str:
        url = request.url
        return self._redact(f"{url.scheme}://{url.host}{':' + str(url.port) if url.port else ''}")

    def _request_json(self, query: str, count: int, notes: list[str]) -> Any:
        request = self._build_request(query, count)
        response = self._send(request)
        if response.status_code == 429:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if retry_after is not None and retry_after <= self.max_retry_after:
                logger.info("%s: rate limited, retrying once after %.1f s", self.name, retry_after)
                notes.append(f"{self.name}: rate limited, retried once after {retry_after:g} s")
                self._sleep(retry_after)
                response = self._send(self._build_request(query, count))
        self._check_status(response)
        return self._parse_json(response)

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        detail = self._error_detail(response)
        if status == 429:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            wait = f"; retry after {retry_after:g} s" if retry_after is not None else ""
            raise SearchRateLimited(
                self.name, f"rate limited (HTTP 429){wait}{': ' + detail if detail else ''}", retry_after
            )
        if status in (401, 403):
            raise self._forbidden(status, detail)
        if status >= 500:
            raise SearchServerError(self.name, f"server error HTTP {status}: {detail or '(empty body)'}", status)
        if 300 <= status < 400:
            location = self._redact(excerpt(response.headers.get("Location", "")))
            raise SearchRequestError(self.name, f"unexpected redirect HTTP {status} to {location or '?'}", status)
        raise SearchRequestError(self.name, f"request rejected (HTTP {status}): {detail or '(empty body)'}", status)

    def _parse_json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("Content-Type", "no content type").split(";")[0]
            body = self._redact(excerpt(response.text)) or "(empty body)"
            raise SearchBadResponse(self.name, f"answered with a body that is not JSON ({kind}): {body}") from None

    def bad_shape(self, what: str) -> SearchBadResponse:
        return SearchBadResponse(self.name, f"answered with JSON of an unexpected shape: {what}")

    def require_key(self, api_key: SecretStr | None) -> SecretStr:
        """The key, or a ConfigError naming ``key_env`` (raised at construction)."""
        if api_key is None or not api_key.get_secret_value().strip():
            raise ConfigError(f"SEARCH_PROVIDER includes {self.name} but {self.key_env} is not set")
        return api_key

    def results_list(self, data: Any, field: str = "results") -> list[dict[str, Any]]:
        """``data[field]`` as a list of result objects; a missing or malformed list is a typed error,
        a null list is zero results."""
        if not isinstance(data, dict):
            raise self.bad_shape(f"expected an object, got {type(data).__name__}")
        if field not in data:
            raise self.bad_shape(f"no '{field}' field")
        raw = data[field]
        if raw is None:
            return []
        items = list_of_dicts(raw)
        if items is None:
            raise self.bad_shape(f"'{field}' is {type(raw).__name__}, not a list")
        if raw and not items:
            raise self.bad_shape(f"'{field}' holds no objects")
        return items


def _find_message(data: Any) -> str:
    """The human message in a JSON error body: msg / message / error / detail(.error)."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for key in ("msg", "message", "error", "detail"):
            if key in data and data[key]:
                found = _find_message(data[key])
                if found:
                    return found
    return ""


def list_of_dicts(value: Any) -> list[dict[str, Any]] | None:
    """``value`` as a list of dicts (non-dict items dropped), or None when it is not a list."""
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, dict)]
