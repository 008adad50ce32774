"""The base of every web search provider: ``Provider`` (query checks, cleaning the results, notes),
``HttpProvider`` (one ``httpx.Client``: status codes and transport failures to typed errors, one
retry on 429, a time and size limit on each request) and the ``Redactor`` that keeps keys out of
messages. Result hygiene is in ``rag.search.hygiene``, the errors in ``rag.errors``; the prompt's
web block (delimiters the web text cannot forge) is ``rag.agent.context.format_web_context``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import httpx
from pydantic import SecretStr

from rag import deadline as turn_deadline
from rag.config import is_http_url
from rag.errors import (
    ConfigError,
    SearchAuthError,
    SearchBadResponse,
    SearchError,
    SearchInvalidQuery,
    SearchNetworkError,
    SearchRateLimited,
    SearchRequestError,
    SearchResponseTooLarge,
    SearchServerError,
    SearchTimeout,
)
from rag.i18n import Msg
from rag.logs import redact
from rag.schemas import SearchOutcome, SearchResult
from rag.search import notes as search_notes
from rag.search.hygiene import clean_results, excerpt, find_message, list_of_dicts

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 400
DEFAULT_MAX_RETRY_AFTER = 10.0
#: Largest response body read from a provider (after decompression); a search answer is a few KB.
MAX_RESPONSE_BYTES = 2 * 1024 * 1024


# --------------------------------------------------------------------------- secrets


class Redactor:
    """Replaces secret values (and URL credentials, Basic/Bearer credentials: ``rag.logs.redact``) in
    any text that may reach a user or a log."""

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
        return redact(text, self._values)

    def __repr__(self) -> str:
        return f"Redactor({len(self._values)} secret(s))"




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


NO_DETAIL = Msg.of("search.no_detail")
_EMPTY_BODY = Msg.of("search.empty_body")


def with_detail(message: Msg, detail: str | Msg) -> Msg:
    """``message``, followed by ": <detail>" when there is one."""
    return Msg.of("search.with_detail", level=message.level, message=message, detail=detail) if detail else message


def require_http_url(url: str, env: str) -> str:
    """``url`` stripped, or a ConfigError saying that ``env`` must be an http(s) URL."""
    url = (url or "").strip()
    if not is_http_url(url):
        raise ConfigError(Msg.of("search.bad_url", level="error", env=env))
    return url


def missing_setting(provider: str, env: str) -> Msg:
    """The ConfigError message "SEARCH_PROVIDER includes <provider> but <ENV> is not set"."""
    return Msg.of("search.setting_missing", level="error", provider=provider, env=env)


class Provider:
    """Base of every provider: ``search`` and ``search_detailed`` on top of ``_fetch``.

    Subclasses implement ``_fetch(query, count, notes) -> list[SearchResult | None]`` (raw,
    possibly dirty results; ``notes`` takes ``Msg`` notes for the trace) and raise ``SearchError``
    subclasses; this class cleans the results. Its notes are ``Msg``s.
    """

    name: str = "provider"

    def __init__(self, *, snippet_chars: int = 800, max_count: int = 8) -> None:
        self.snippet_chars = snippet_chars
        self.max_count = max(1, max_count)
        self._redact: Callable[[str], str] = Redactor()

    def _fetch(self, query: str, count: int, notes: list[Msg]) -> list[SearchResult | None]:
        raise NotImplementedError

    def _msg(self, code: str, /, **params: Any) -> Msg:
        """An error message of this provider (``search.<code>``)."""
        return Msg.of(f"search.{code}", level="error", provider=self.name, **params)

    def said(self, data: Any) -> str:
        """The provider's own message in a body of any shape, short and redacted ("" when none)."""
        return self._redact(excerpt(find_message(data)))

    def bad_shape(self, what: str, data: Any = None) -> SearchBadResponse:
        """The error for a body that is not the results: the provider's own message when the body
        (``data``) carries one (an error reported with status 200), else what was wrong with it."""
        said = self.said(data)
        if said:
            logger.info("%s: answered with a message instead of results (%s)", self.name, what)
            return SearchBadResponse(self.name, self._msg("provider_said", message=said))
        return SearchBadResponse(self.name, self._msg("bad_shape", what=what))

    def search(self, query: str, count: int) -> list[SearchResult]:
        return self.search_detailed(query, count).results

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        query = " ".join(str(query or "").split())
        if not query:
            raise SearchInvalidQuery(self.name, self._msg("invalid_query"))
        notes: list[Msg] = []
        if len(query) > MAX_QUERY_CHARS:
            query = query[:MAX_QUERY_CHARS]
            notes.append(Msg.of("search.query_cut", n=MAX_QUERY_CHARS))
        count = min(int(count), self.max_count)
        if count <= 0:
            return search_notes.outcome([], self.name, notes)
        started = time.monotonic()
        try:
            raw = self._fetch(query, count, notes)
        except SearchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a parsing bug must still be a typed error
            logger.warning("%s: unexpected %s while searching", self.name, type(exc).__name__)
            detail = self._redact(excerpt(str(exc)))
            raise SearchBadResponse(self.name, self._msg("unexpected", kind=type(exc).__name__,
                                                         detail=detail or NO_DETAIL)) from None
        results = clean_results(raw, count, self.snippet_chars)
        if not results:
            notes.append(search_notes.no_results(self.name))
        logger.info(
            "web search via %s: %d result(s) (%d raw) in %.2f s", self.name, len(results), len(raw), time.monotonic() - started
        )
        return search_notes.outcome(results, self.name, notes)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP connections)."""

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


@dataclass(frozen=True)
class HttpOptions:
    """What every provider is built with besides its own settings: the limits of each request
    (``timeout`` seconds in all, ``max_response_bytes`` of body, one wait of at most
    ``max_retry_after`` seconds on HTTP 429), of its results (``max_count``, ``snippet_chars``), and
    for tests a ``client``, ``transport`` or ``sleep`` of their own. Providers that do not speak
    HTTP themselves (DuckDuckGo) read only the limits."""

    timeout: float = 8.0
    snippet_chars: int = 800
    max_count: int = 8
    client: httpx.Client | None = None
    transport: httpx.BaseTransport | None = None
    sleep: Callable[[float], None] | None = None
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER
    max_response_bytes: int = MAX_RESPONSE_BYTES


DEFAULT_HTTP = HttpOptions()


def capped(http: HttpOptions, most: int) -> HttpOptions:
    """``http`` with ``max_count`` at most ``most`` (what the provider's API accepts)."""
    return http if http.max_count <= most else replace(http, max_count=most)


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

    def __init__(self, http: HttpOptions = DEFAULT_HTTP, *, secrets: Iterable[SecretStr | str | None] = ()) -> None:
        super().__init__(snippet_chars=http.snippet_chars, max_count=http.max_count)
        self.timeout = http.timeout
        self.max_response_bytes = http.max_response_bytes
        self._redact = Redactor(secrets)
        self._owns_client = http.client is None
        self._client = http.client or httpx.Client(
            timeout=httpx.Timeout(http.timeout),
            transport=http.transport,
            follow_redirects=False,
            headers={"Accept": "application/json", "User-Agent": "enough-rag/0.1"},
        )
        self._sleep = http.sleep if http.sleep is not None else time.sleep
        self.max_retry_after = http.max_retry_after

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    # -- to be provided by subclasses
    def _build_request(self, query: str, count: int) -> httpx.Request:
        raise NotImplementedError

    def _auth_message(self, status: int, detail: str) -> Msg:
        if self.key_env:
            what = Msg.of("search.key_rejected", level="error", provider=self.name, env=self.key_env, status=status)
        else:
            what = Msg.of("search.access_refused", level="error", provider=self.name, status=status)
        return with_detail(what, detail)

    def _forbidden(self, status: int, detail: str) -> SearchError:
        return SearchAuthError(self.name, self._auth_message(status, detail))

    def _error_detail(self, response: httpx.Response) -> str:
        """A short, redacted excerpt of an error body (its message field when it is JSON)."""
        text = response.text
        try:
            data = json.loads(text)
        except ValueError:
            return self._redact(excerpt(text))
        message = find_message(data)
        return self._redact(excerpt(message if message else text))

    # -- plumbing
    def _send(self, request: httpx.Request) -> httpx.Response:
        try:
            return self._exchange_within_deadline(request)
        except SearchError:
            raise
        except httpx.TimeoutException as exc:
            raise SearchTimeout(self.name, self._msg("timeout", seconds=f"{self.timeout:g}",
                                                     reason=type(exc).__name__)) from None
        except httpx.DecodingError as exc:
            reason = self._redact(excerpt(str(exc) or type(exc).__name__))
            raise SearchBadResponse(self.name, self._msg("undecodable", reason=reason)) from None
        except httpx.HTTPError as exc:  # transport errors, decoding errors, invalid URLs...
            reason = self._redact(excerpt(str(exc) or type(exc).__name__))
            raise SearchNetworkError(self.name, self._msg("unreachable", where=self._where(request),
                                                          reason=reason)) from None

    def _exchange_within_deadline(self, request: httpx.Request) -> httpx.Response:
        """``_exchange`` in a worker thread (``rag.deadline.call_before``), given up after
        ``timeout`` seconds in total. The abandoned worker stops at its next chunk (or read
        timeout) and closes its connection."""
        cancelled = threading.Event()
        limit = turn_deadline.Deadline.after(self.timeout)
        try:
            return turn_deadline.call_before(lambda: self._exchange(request, cancelled), limit, "search_request")
        except turn_deadline.DeadlineExceeded:
            cancelled.set()
            logger.info("%s: no complete answer within %g s; request abandoned", self.name, self.timeout)
            raise SearchTimeout(self.name, self._msg("timeout_total", seconds=f"{self.timeout:g}")) from None

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
                if cancelled.is_set():  # nobody waits for it any more
                    raise SearchTimeout(self.name, self._msg("timeout_total", seconds=f"{self.timeout:g}"))
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
        limit = f"{self.max_response_bytes / 1024 / 1024:g}"
        if declared:
            return SearchResponseTooLarge(self.name, self._msg("too_large_size", limit=limit,
                                                               size=f"{declared / 1024 / 1024:.1f}"))
        return SearchResponseTooLarge(self.name, self._msg("too_large", limit=limit))

    def _where(self, request: httpx.Request) -> str:
        url = request.url
        return self._redact(f"{url.scheme}://{url.host}{':' + str(url.port) if url.port else ''}")

    def _request_json(self, query: str, count: int, notes: list[Msg]) -> Any:
        request = self._build_request(query, count)
        response = self._send(request)
        if response.status_code == 429:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if retry_after is not None and retry_after <= self.max_retry_after:
                logger.info("%s: rate limited, retrying once after %.1f s", self.name, retry_after)
                notes.append(Msg.of("search.retried", provider=self.name, seconds=f"{retry_after:g}"))
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
            limited = (self._msg("rate_limited") if retry_after is None
                       else self._msg("rate_limited_wait", seconds=f"{retry_after:g}"))
            raise SearchRateLimited(self.name, with_detail(limited, detail), retry_after)
        if status in (401, 403):
            raise self._forbidden(status, detail)
        if status >= 500:
            raise SearchServerError(self.name, self._msg("server_error", status=status, detail=detail or _EMPTY_BODY),
                                    status)
        if 300 <= status < 400:
            location = self._redact(excerpt(response.headers.get("Location", "")))
            raise SearchRequestError(self.name, self._msg("redirect", status=status, location=location or "?"), status)
        raise SearchRequestError(self.name, self._msg("rejected", status=status, detail=detail or _EMPTY_BODY), status)

    def _parse_json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("Content-Type", "no content type").split(";")[0]
            body = self._redact(excerpt(response.text)) or _EMPTY_BODY
            raise SearchBadResponse(self.name, self._msg("not_json", kind=kind, body=body)) from None

    def require_key(self, api_key: SecretStr | None) -> SecretStr:
        """The key, or a ConfigError naming ``key_env`` (raised at construction)."""
        if api_key is None or not api_key.get_secret_value().strip():
            raise ConfigError(missing_setting(self.name, self.key_env))
        return api_key

    def results_list(self, data: Any, field: str = "results") -> list[dict[str, Any]]:
        """``data[field]`` as a list of result objects; a missing or malformed list is a typed error,
        a null list is zero results."""
        if not isinstance(data, dict):
            raise self.bad_shape(f"expected an object, got {type(data).__name__}", data)
        if field not in data:
            raise self.bad_shape(f"no '{field}' field", data)
        raw = data[field]
        if raw is None:
            return []
        items = list_of_dicts(raw)
        if items is None:
            raise self.bad_shape(f"'{field}' is {type(raw).__name__}, not a list", data)
        if raw and not items:
            raise self.bad_shape(f"'{field}' holds no objects", data)
        return items
