"""The chat model: any OpenAI-compatible endpoint (found by ``rag.chat_providers``), plus defensive
structured output."""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, SecretStr, ValidationError

from rag import deadline as turn_deadline
from rag.chat_providers import Provider, resolve_endpoint
from rag.config import Settings
from rag.deadline import DeadlineExceeded
from rag.errors import ConfigError, LLMError, LLMOutputError, LLMUnavailable
from rag.i18n import Msg
from rag.logs import redact, url_secrets
from rag.repetition import REPETITION_KEYS, capped, repeated_tail, repetition_options

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class ChatModel(Protocol):
    """What the app calls on a chat model (a LangChain ``BaseChatModel`` such as ``ChatOpenAI``, the
    scripted fake, or ``DeadlineBound`` around one): a call, a stream, and the two ways a structured
    call binds its schema. Anything else (its name, endpoint, metadata) is read defensively."""

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any: ...  # noqa: A002 - LangChain's name

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]: ...  # noqa: A002

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any: ...

    def bind(self, **kwargs: Any) -> Any: ...

def provider_of(settings: Settings) -> Provider:
    """Which model these settings use: a remote endpoint ("openai", also any OpenAI-compatible
    server), a detected Ollama, the embedded model ("local": LLM_PROVIDER=local, or auto with
    nothing else configured or answering), or none. May ask Ollama (a fraction of a second)."""
    provider = settings.llm_provider
    if provider in ("none", "local"):
        return provider
    endpoint = resolve_endpoint(settings)
    if endpoint is not None:
        return "ollama" if endpoint.api_key == "ollama" else "openai"
    return "none" if provider == "ollama" else "local"


def make_chat_model(settings: Settings, local: Any | None = None) -> ChatModel | None:
    """A ``ChatOpenAI`` for the configured endpoint, or None (retrieval-only mode). With the
    embedded model (``provider_of`` "local"), ``local`` (a ``rag.local.LocalModel``) gives it once
    it is ready; before that, and without ``local``, None."""
    endpoint = resolve_endpoint(settings)
    if endpoint is None:
        if local is not None and settings.llm_provider in ("auto", "local"):  # provider_of: "local"
            return local.chat_model()
        return None
    base, key, model = endpoint
    return chat_openai(settings, base, key, model)


def chat_openai(settings: Settings, base: str | None, key: str, model: str, *, local: bool = False) -> ChatModel:
    """A ``ChatOpenAI`` with the app's options (``local``: the embedded model, said in its metadata)."""
    from langchain_openai import ChatOpenAI

    extra_body: dict[str, Any] | None = None
    if not _is_openai(base):
        # The client sends the cap as max_completion_tokens, which llama.cpp's server ignores (a
        # grammar-constrained reply then runs to the context size): other servers also get max_tokens.
        extra_body = {"max_tokens": settings.llm_max_tokens}
        if local or _local_host((urlsplit(base or "").hostname or "").lower()):
            extra_body.update(repetition_options(settings))  # llama.cpp's names: self-hosted servers only
    options: dict[str, Any] = {
        "model": model,
        "base_url": base,
        "api_key": SecretStr(key),
        "temperature": settings.llm_temperature,
        "timeout": settings.llm_timeout,
        "max_retries": 0 if local else settings.llm_max_retries,
        "max_tokens": settings.llm_max_tokens,
        "extra_body": extra_body,
    }
    metadata: dict[str, Any] = {}
    if settings.public_page:  # failures name "the model endpoint" to visitors (``unavailable``)
        metadata[PUBLIC_PAGE] = True
    if local:
        metadata[LOCAL_MODEL] = True
    if metadata:
        options["metadata"] = metadata
    return ChatOpenAI(**options)


def is_local_model(llm: ChatModel) -> bool:
    """Whether ``llm`` is the embedded model (``chat_openai(..., local=True)``)."""
    return bool((getattr(llm, "metadata", None) or {}).get(LOCAL_MODEL))


def _is_openai(base_url: str | None) -> bool:
    return base_url is None or "api.openai.com" in base_url


def judge_model(llm: ChatModel) -> ChatModel:
    """A copy of ``llm`` for route, rewrite and evaluate: temperature 0, no streaming (the
    structured reply is needed whole; some servers stream tool calls badly), and no repetition
    penalties (the judge copies its quotes from the sources in the prompt: a penalty on repeating
    what the context holds would bend them)."""
    update: dict[str, Any] = {}
    fields = getattr(type(llm), "model_fields", {})
    if "temperature" in fields:
        update["temperature"] = 0.0
    extra = getattr(llm, "extra_body", None)
    if "extra_body" in fields and isinstance(extra, dict) and any(k in extra for k in REPETITION_KEYS):
        update["extra_body"] = {k: v for k, v in extra.items() if k not in REPETITION_KEYS}
    if "disable_streaming" in fields and not is_local_model(llm):  # the embedded model's are streamed
        update["disable_streaming"] = True
    try:
        copied: ChatModel = llm.model_copy(update=update) if update else llm  # type: ignore[attr-defined]
        return copied
    except (AttributeError, TypeError, ValueError):
        return llm


# --------------------------------------------------------------------------- the turn's deadline
#: A client-side request timeout a little longer than the time left, so that the deadline (which
#: names TURN_TIMEOUT) and not the client (which would name LLM_TIMEOUT) ends a call at the deadline.
DEADLINE_SLACK_S = 0.5


def _takes_timeout(model: ChatModel) -> bool:
    """Whether calls to ``model`` accept a per-request ``timeout`` (langchain-openai's ChatOpenAI)."""
    return "request_timeout" in getattr(type(model), "model_fields", {})


def _request_timeout(model: ChatModel, deadline: turn_deadline.Deadline) -> float:
    configured = getattr(model, "request_timeout", None)
    left = deadline.remaining() + DEADLINE_SLACK_S
    return min(float(configured), left) if isinstance(configured, (int, float)) and configured > 0 else left


class DeadlineBound:
    """``model`` (a chat model, or a runnable bound from one by ``bind_tools`` / ``bind``) whose
    calls end by the current turn's deadline (``rag.deadline``): no call starts once it has passed,
    the caller waits at most the time left, and an OpenAI-compatible client is given that time as
    its request timeout (its own timeout and retries would otherwise multiply the wait). Without a
    deadline, calls go straight through. Every other attribute is the model's."""

    def __init__(self, model: ChatModel, *, base: ChatModel | None = None) -> None:
        self._model = model
        self._base = model if base is None else base  # the chat model itself (its timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def __repr__(self) -> str:
        return f"DeadlineBound({self._model!r})"

    def bind_tools(self, *args: Any, **kwargs: Any) -> DeadlineBound:
        return DeadlineBound(self._model.bind_tools(*args, **kwargs), base=self._base)

    def bind(self, **kwargs: Any) -> DeadlineBound:
        return DeadlineBound(self._model.bind(**kwargs), base=self._base)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangChain's name
        deadline = turn_deadline.current()
        if deadline is None and turn_deadline.cancel_event() is None:
            return self._model.invoke(input, config, **kwargs)
        if deadline is not None and _takes_timeout(self._base):
            kwargs["timeout"] = _request_timeout(self._base, deadline)
        # a cancelled turn gives the call up at once (``Cancelled``); a stream is closed at its next piece
        return turn_deadline.call_before(lambda: self._model.invoke(input, config, **kwargs), deadline, "model_call")


Cut = Literal["turn", "idle", "repeat", "length", "cancel"]


@dataclass(frozen=True)
class Streamed:
    """A streamed reply: its text, and why it was cut short (None: it ended normally). ``turn``: the
    turn's deadline; ``idle``: the model went silent; ``repeat``: it looped on one clause (the text
    ends after the clause's first time); ``length``: it reached ``max_chars``; ``cancel``: the turn
    was cancelled (Stop, a closed page)."""

    text: str
    cut: Cut | None = None


def _chunk_text(chunk: Any) -> str:
    content = getattr(chunk, "content", "")
    return content if isinstance(content, str) else ""


def _texts(llm: ChatModel, messages: list[Any], kwargs: dict[str, Any]) -> Generator[str, None, None]:
    """The non-empty text pieces of ``llm``'s stream (the stream is closed when this ends)."""
    stream: Iterator[Any] = llm.stream(messages, **kwargs)
    try:
        for chunk in stream:
            text = _chunk_text(chunk)
            if text:
                yield text
    finally:
        close = getattr(stream, "close", None)
        if callable(close):
            close()


def _read(pieces: Iterator[str], max_chars: int | None, stop_repeats: bool) -> Streamed:
    """The pieces joined, up to a loop (``repeated_tail``) or ``max_chars``: then the reading stops
    (the caller closes the stream) and the text is cut there."""
    text = ""
    for piece in pieces:
        text += piece
        if stop_repeats:
            end = repeated_tail(text)
            if end is not None:
                return Streamed(text[:end], "repeat")
        if max_chars and len(text) >= max_chars:
            return Streamed(capped(text, max_chars), "length")
    return Streamed(text)


def stream_text(llm: ChatModel, messages: list[Any], *, idle: float | None = None, max_chars: int | None = None,
                stop_repeats: bool = True) -> Streamed:
    """Stream ``llm``'s reply to ``messages`` (tokens reach LangGraph's stream as they come) within
    the current turn's deadline and, once text has started, with at most ``idle`` seconds between
    two pieces. The reading also stops when the reply starts to loop (``stop_repeats``: the same
    clause three times in a row; cut "repeat", the text ends after its first time), when it reaches
    ``max_chars`` characters (cut "length"; None: no cap) and when the turn is cancelled (cut
    "cancel"). Cut short, it returns the text so far with the reason; a failing model raises as
    before. The stream is read by ``rag.deadline.pump``, so a silent server cannot hold the caller;
    a stream that is given up is closed at its next piece (or by its client timeout): a server that
    streams stops generating when its client hangs up."""
    deadline = turn_deadline.current()
    cancel = turn_deadline.cancel_event()
    if deadline is None and not idle and cancel is None:
        plain = _texts(llm, messages, {})
        try:
            return _read(plain, max_chars, stop_repeats)
        finally:
            plain.close()  # a cut stream is closed here and now
    if deadline is not None and deadline.expired:
        return Streamed("", "turn")
    if cancel is not None and cancel.is_set():
        return Streamed("", "cancel")
    kwargs: dict[str, Any] = {}
    if deadline is not None and _takes_timeout(llm):
        kwargs["timeout"] = _request_timeout(llm, deadline)
    parts: list[str] = []

    def pieces() -> Generator[str, None, None]:  # what was read stays in ``parts`` when the deadline or idle ends it
        for text in turn_deadline.pump(lambda: _texts(llm, messages, kwargs), deadline, cancel, what="answer_stream",
                                       idle=idle or None):
            parts.append(text)
            yield text

    reader = pieces()
    try:
        streamed = _read(reader, max_chars, stop_repeats)
    except turn_deadline.Idle:
        return Streamed("".join(parts), "idle")
    except DeadlineExceeded:
        return Streamed("".join(parts), "turn")
    finally:
        reader.close()  # stops the pump: its worker closes the model's stream
    if streamed.cut is None and cancel is not None and cancel.is_set():
        return Streamed(streamed.text, "cancel")
    return streamed


def model_name(llm: ChatModel) -> str:
    return str(getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__)


# --------------------------------------------------------------------------- structured output
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_json_text(text: str) -> dict[str, Any]:
    """Defensively pull one JSON object out of a model's text (code fences, prose around it,
    control characters inside strings). Raises ValueError when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty reply")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                obj, _ = json.JSONDecoder(strict=False).raw_decode(candidate[start:])
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(obj, dict):
                return obj
            start = candidate.find("{", start + 1)
    raise ValueError(f"no JSON object in reply: {text[:120]!r}")


def _content_text(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def _args_from_message(message: Any, schema_name: str) -> dict[str, Any]:
    for call in getattr(message, "tool_calls", None) or []:
        if call.get("name") in (schema_name, None, "") or len(message.tool_calls) == 1:
            args = call.get("args")
            if isinstance(args, dict):
                return args
    for call in getattr(message, "invalid_tool_calls", None) or []:
        raw = call.get("args")
        if isinstance(raw, str):
            return parse_json_text(raw)
    return parse_json_text(_content_text(message))


OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
#: The chat model's metadata key that says the page is public (``Settings.public_page``).
PUBLIC_PAGE = "rag_public_page"
#: The chat model's metadata key that says it is the embedded model (``rag.local``).
LOCAL_MODEL = "rag_local_model"
FailureKind = Literal["transport", "invalid_output"]
_TRANSPORT_ERRORS = {"APIConnectionError", "APITimeoutError", "APIStatusError", "ConnectError", "ConnectTimeout"}


def endpoint_of(llm: ChatModel) -> str:
    """The endpoint a chat model talks to, without credentials (the model's class for fakes)."""
    base = getattr(llm, "openai_api_base", None)
    if not base:
        return OPENAI_DEFAULT_BASE if hasattr(llm, "openai_api_key") else type(llm).__name__
    try:
        parts = urlsplit(str(base))
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")
    except ValueError:
        return "the configured LLM_BASE_URL"


def _secrets_of_llm(llm: ChatModel) -> list[str]:
    key = getattr(llm, "openai_api_key", None)
    value = key.get_secret_value() if isinstance(key, SecretStr) else (key if isinstance(key, str) else "")
    return [v for v in [value, *url_secrets(str(getattr(llm, "openai_api_base", "") or ""))] if len(v) >= 4]


def _is_transport(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & _TRANSPORT_ERRORS) or isinstance(exc, (httpx.HTTPError, OSError, TimeoutError))


def _what_failed(exc: BaseException) -> Msg:
    """What went wrong with a call, in a few words (an HTTP status, a timeout, no connection)."""
    status = getattr(exc, "status_code", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(status, int):
        code = {401: "llm.key_rejected", 403: "llm.key_rejected", 404: "llm.check_url_model"}.get(status,
                                                                                                "llm.http_status")
        return Msg.of(code, status=status)
    if isinstance(exc, DeadlineExceeded):
        return Msg.of("llm.out_of_time")
    if "APITimeoutError" in names or isinstance(exc, (TimeoutError, httpx.TimeoutException)):
        return Msg.of("llm.no_answer_in_time")
    if "APIConnectionError" in names or isinstance(exc, (httpx.TransportError, OSError)):
        return Msg.of("llm.cannot_connect")
    return Msg.of("text", value=type(exc).__name__)


def unavailable(llm: ChatModel, exc: BaseException) -> LLMUnavailable:
    """An ``LLMUnavailable`` for a failed call: what went wrong and where, never the key. On a
    public page (``PUBLIC_PAGE``) it names "the model endpoint" and gives no detail (an address or
    path may be in it); the server log keeps both, redacted."""
    endpoint = endpoint_of(llm)
    detail: Msg | str = exc.msg if isinstance(exc, DeadlineExceeded) else redact(_short(exc), _secrets_of_llm(llm))
    if (getattr(llm, "metadata", None) or {}).get(PUBLIC_PAGE):
        logger.warning("model call to %s failed (%s): %s", endpoint, type(exc).__name__, detail)
        return LLMUnavailable("the model endpoint", Msg.of("llm.call_failed_public", level="error",
                                                           what=_what_failed(exc), kind=type(exc).__name__))
    return LLMUnavailable(endpoint, Msg.of("llm.call_failed", level="error", endpoint=endpoint,
                                           what=_what_failed(exc), kind=type(exc).__name__, detail=detail))


def model_failure(llm: Any, exc: BaseException) -> BaseException:
    """A failed call to ``llm`` as the error a reader may see: the package's own errors and the
    deadline as they are, anything else (a client's exception, which carries the endpoint's own
    body) as ``unavailable`` says it, like the router's and the judge's failures."""
    return exc if isinstance(exc, (LLMError, DeadlineExceeded)) else unavailable(llm, exc)


def failure_kind(error: BaseException) -> FailureKind:
    """"transport" when the model could not be used at all (refused connection, 401, timeout, 5xx),
    "invalid_output" when it answered with something unusable; read from the exception's type."""
    if isinstance(error, LLMUnavailable):
        return "transport"
    if isinstance(error, LLMError):
        return "invalid_output"
    return "transport" if _is_transport(error) else "invalid_output"


# --------------------------------------------------------------------------- choosing the method
#: Methods a caller may name; "auto" is resolved per endpoint by ``MethodCache.resolve``.
METHODS = ("auto", "function_calling", "json_mode", "json_schema")
#: The chat model's metadata key that pins the structured method for it (e.g. the embedded runtime).
STRUCTURED_METHOD = "rag_structured_method"
# Cloud endpoints known to accept ``response_format`` json_schema; other named hosts get function_calling.
_SCHEMA_HOSTS = ("api.openai.com", ".openai.azure.com")
_SCHEMA_HOST_HINTS = ("vllm", "llama", "llamacpp", "sglang")  # hosts named after a self-hosted server


def _local_host(host: str) -> bool:
    """Loopback, private-network or single-label hosts: a self-hosted server (llama.cpp, vLLM, Ollama)."""
    if not host or host == "localhost" or host.endswith((".local", ".internal", ".lan")) or "." not in host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def endpoint_host(llm: ChatModel) -> str | None:
    """The host of an OpenAI-compatible client's base URL ("" for the OpenAI API itself, which has
    none set); None for a chat model that is not such a client, or an unreadable URL."""
    if not hasattr(llm, "openai_api_base"):
        return None
    base = getattr(llm, "openai_api_base", None)
    if not base:
        return ""
    try:
        return (urlsplit(str(base)).hostname or "").lower()
    except ValueError:
        return None


def self_hosted(llm: ChatModel) -> bool:
    """Whether ``llm`` talks to a self-hosted server (loopback, private or single-label host: llama.cpp,
    the embedded runtime, vLLM, Ollama) rather than a hosted API; False for models that are not an
    OpenAI-compatible client."""
    host = endpoint_host(llm)
    return bool(host) and _local_host(host or "")


def method_for_endpoint(llm: ChatModel) -> str:
    """The method ``auto`` starts with for ``llm``'s endpoint, by its base URL's shape (no call):
    json_schema for OpenAI and self-hosted servers (llama.cpp's server and the embedded runtime,
    vLLM, SGLang, Ollama: loopback, private or single-label hosts), function_calling for other hosted
    APIs (DeepSeek, DashScope... accept tools but not json_schema) and for chat models that are not
    an OpenAI-compatible client (fakes, wrappers). A model's metadata may pin it (``STRUCTURED_METHOD``)."""
    pinned = (getattr(llm, "metadata", None) or {}).get(STRUCTURED_METHOD)
    if pinned in METHODS and pinned != "auto":
        return str(pinned)
    host = endpoint_host(llm)
    if host is None:
        return "function_calling"
    if not host:
        return "json_schema"  # the OpenAI API itself
    if host.endswith(_SCHEMA_HOSTS) or _local_host(host) or any(h in host for h in _SCHEMA_HOST_HINTS):
        return "json_schema"
    return "function_calling"


@dataclass
class MethodCache:
    """The structured-output method ``auto`` settled on for each endpoint and model, decided once
    (``method_for_endpoint``) and changed once when the endpoint refuses json_schema. Injected
    (``rag.agent.deps.Deps.methods``): one per app or session, none kept by this module."""

    _methods: dict[tuple[str, str], str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def _key(llm: ChatModel) -> tuple[str, str]:
        return endpoint_of(llm), model_name(llm)

    def resolve(self, llm: ChatModel, method: str) -> str:
        """The method a structured call to ``llm`` uses: ``method`` itself unless it is "auto"; for
        "auto" the endpoint's method, remembered (with a fallback after a refusal)."""
        if method != "auto":
            return method
        key = self._key(llm)
        with self._lock:
            chosen = self._methods.get(key)
            if chosen is None:
                chosen = self._methods[key] = method_for_endpoint(llm)
        return chosen

    def remember_refusal(self, llm: ChatModel) -> None:
        """The endpoint refused json_schema: "auto" uses function_calling for it from now on."""
        with self._lock:
            self._methods[self._key(llm)] = "function_calling"
        # the endpoint's address stays out of the log (it may name a private server)
        logger.info("the model endpoint refused response_format json_schema; structured calls use function "
                    "calling from now on")


_REFUSAL_WORDS = ("response_format", "json_schema", "response format", "json schema")


def refuses_json_schema(exc: BaseException) -> bool:
    """Whether a failed call is the endpoint saying it does not take ``response_format`` json_schema
    (an HTTP 400/422/500/501 naming it), not a transport failure or another bad request."""
    status = getattr(exc, "status_code", None)
    if status not in (400, 422, 500, 501):
        return False
    body = getattr(exc, "body", None)
    text = f"{exc} {json.dumps(body) if isinstance(body, (dict, list)) else body or ''}".lower()
    return any(word in text for word in _REFUSAL_WORDS)


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def structured_invoke(llm: ChatModel, schema: type[T], messages: list[Any], method: str, *,
                      response_schema: dict[str, Any] | None = None, methods: MethodCache | None = None) -> T:
    """One structured call with the chosen method ("auto": see ``MethodCache.resolve``). Raises
    ``LLMUnavailable`` when the call fails (refused connection, timeout, HTTP error status) and
    ``LLMOutputError`` when the reply is not valid JSON for ``schema``; both are ``LLMError``.
    ``response_schema``: the JSON schema sent with json_schema instead of ``schema``'s own (a
    narrower one, e.g. the judge's quotes constrained to the sources' text); the reply is still
    validated by ``schema``. With "auto", an endpoint that refuses json_schema is asked again at once
    with function calling, and remembered in ``methods`` (without one, for this call only)."""
    name = schema.__name__
    methods = methods if methods is not None else MethodCache()
    chosen = methods.resolve(llm, method)
    try:
        try:
            message = _call(llm, _bind(llm, schema, chosen, response_schema), chosen, messages)
        except Exception as exc:
            if not (method == "auto" and chosen == "json_schema" and refuses_json_schema(exc)):
                raise
            methods.remember_refusal(llm)
            message = _bind(llm, schema, "function_calling", None).invoke(messages)
    except ConfigError:
        raise
    except Exception as exc:  # provider errors come in many types
        raise unavailable(llm, exc) from exc
    try:
        return schema.model_validate(_args_from_message(message, name))
    except (ValueError, ValidationError) as exc:
        raise LLMOutputError(Msg.of("llm.invalid_output", level="error", schema=name,
                                    detail=redact(_short(exc), _secrets_of_llm(llm)))) from exc


def _call(llm: ChatModel, runnable: Any, method: str, messages: list[Any]) -> Any:
    """The structured call. The embedded model's JSON-schema replies are streamed: llama.cpp stops
    generating only when a streamed reply's connection closes, so a call that the turn's deadline
    (or Stop) ends must be one (a plain request would keep the model busy to ``max_tokens``, and
    the next call would wait behind it)."""
    if method != "json_schema" or not is_local_model(llm):
        return runnable.invoke(messages)
    from langchain_core.messages import AIMessage

    deadline = turn_deadline.current()
    streamed = stream_text(runnable, messages, stop_repeats=False)  # JSON may repeat itself legitimately
    if streamed.cut == "cancel":
        raise turn_deadline.Cancelled("model_call")
    if streamed.cut is not None and deadline is not None:  # otherwise a stream is only cut by a deadline
        raise deadline.exceeded("model_call")
    return AIMessage(content=streamed.text)


def _bind(llm: ChatModel, schema: type[BaseModel], method: str, response_schema: dict[str, Any] | None) -> Any:
    name = schema.__name__
    if method == "function_calling":
        return llm.bind_tools([schema], tool_choice=name)
    if method == "json_mode":
        return llm.bind(response_format={"type": "json_object"})
    if method == "json_schema":
        return llm.bind(response_format=json_schema_format(name, response_schema or schema.model_json_schema()))
    raise ConfigError(f"unknown LLM_STRUCTURED_METHOD {method!r}")


def _short(exc: BaseException, limit: int = 240) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
