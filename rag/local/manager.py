"""The embedded model (``LLM_PROVIDER=local``): one per process, on loopback. ``LocalModel`` finds
the file (``LOCAL_MODEL_PATH``, else ``LOCAL_MODEL`` downloaded into ``DATA_DIR/models``), starts
llama.cpp in-process (``rag.local.runtime``) and gives a chat model for it. The app starts it in
the background (``start``) and keeps answering in retrieval-only mode until it is ready; the CLI
waits for it (``ensure``) with a progress bar. ``state()`` is what the banner shows: waiting,
downloading (share done), loading, ready, failed (one line why; retrieval-only stays)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from rag.config import Settings, for_local_model
from rag.errors import RagError
from rag.i18n import Msg
from rag.local.download import DownloadError, ModelSpec, Progress, download, hub_cache_file, parse_model

logger = logging.getLogger(__name__)

Phase = Literal["waiting", "downloading", "loading", "ready", "failed"]
#: How the embedded model is named to the endpoint (and in logs).
ALIAS = "local"


class LocalModelError(RagError):
    """The embedded model could not be made ready (``.msg`` says why)."""


@dataclass(frozen=True)
class LocalState:
    phase: Phase
    model: str  # the model's short name (the banner shows it)
    done: int = 0  # bytes downloaded
    total: int = 0  # bytes to download (0: not known)
    error: Msg | None = None
    seconds: float = 0.0  # load time, once ready

    @property
    def pct(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def final(self) -> bool:
        return self.phase in ("ready", "failed")


def _spec(settings: Settings) -> ModelSpec:
    return parse_model(settings.local_model)


def model_label(settings: Settings) -> str:
    """The model's name as the banner shows it: the file's name, never its directory."""
    if settings.local_model_path:
        return Path(settings.local_model_path).name.removesuffix(".gguf")
    try:
        return _spec(settings).name
    except DownloadError:
        return "?"


RuntimeFactory = Callable[..., Any]


def _default_runtime(path: Path, *, threads: int, ctx: int, alias: str) -> Any:
    from rag.local.runtime import LocalRuntime

    return LocalRuntime(path, threads=threads, ctx=ctx, alias=alias)


class LocalModel:
    """The process's embedded model. Thread-safe; ``start`` and ``ensure`` may both be called (the
    work runs once)."""

    def __init__(self, settings: Settings, *, runtime_factory: RuntimeFactory | None = None,
                 fetch: Callable[..., Path] = download) -> None:
        self.settings = settings
        self._runtime_factory = runtime_factory or _default_runtime
        self._fetch = fetch
        self._lock = threading.Lock()
        self._state = LocalState("waiting", model_label(settings))
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._runtime: Any = None
        self._listeners: list[Callable[[Any], None]] = []
        self._progress: list[Progress] = []
        self._phases: list[Callable[[str], None]] = []  # told each new phase (``ensure(on_phase=...)``)
        self._closed = False

    # ------------------------------------------------------------------ state
    def state(self) -> LocalState:
        with self._lock:
            return self._state

    def _set(self, **changes: Any) -> None:
        with self._lock:
            before = self._state.phase
            self._state = replace(self._state, **changes)
            phase, listeners = self._state.phase, list(self._phases)
        if phase != before:
            for listener in listeners:
                listener(phase)

    @property
    def ready(self) -> bool:
        return self.state().phase == "ready"

    # ------------------------------------------------------------------ starting
    def start(self, on_ready: Callable[[Any], None] | None = None) -> threading.Thread:
        """Make the model ready in a background thread; ``on_ready(chat_model)`` is called once it
        is (at once when it already is). Never raises; a failure is ``state().error``."""
        with self._lock:
            if on_ready is not None:
                self._listeners.append(on_ready)
            thread = self._thread
            if thread is None:
                thread = self._thread = threading.Thread(target=self._run, name="local-model", daemon=True)
                thread.start()
            ready_now = self._state.phase == "ready"
        if ready_now and on_ready is not None:
            on_ready(self.chat_model())
        return thread

    def ensure(self, progress: Progress | None = None, timeout: float | None = None,
               on_phase: Callable[[str], None] | None = None) -> Any:
        """The chat model, waiting until it is ready (``progress(done, total)`` while the file
        downloads; ``on_phase(phase)`` at the phase it is in and each one after). Raises
        ``LocalModelError`` when it cannot be made ready."""
        with self._lock:
            if progress is not None:
                self._progress.append(progress)
            if on_phase is not None:
                self._phases.append(on_phase)
            phase = self._state.phase
        if on_phase is not None and phase != "waiting":
            on_phase(phase)
        thread = self.start()
        if not self._done.wait(timeout):
            raise LocalModelError(Msg.of("local.not_ready", level="error"))
        thread.join(timeout=1.0)
        state = self.state()
        if state.phase != "ready":
            raise LocalModelError(state.error or Msg.of("local.not_ready", level="error"))
        return self.chat_model()

    def _run(self) -> None:
        try:
            self._make_ready()
            if self.ready:
                model = self.chat_model()
                for listener in list(self._listeners):
                    try:
                        listener(model)
                    except Exception:  # noqa: BLE001 - a listener's failure is not the model's
                        logger.exception("a listener of the embedded model failed")
        finally:
            self._done.set()  # after the listeners: whoever waits (``ensure``) sees the app switched

    def _make_ready(self) -> None:
        started = time.perf_counter()
        try:
            path = self._model_file()
            if self._closed:
                return
            self._set(phase="loading")
            settings = self.settings
            runtime = self._runtime_factory(path, threads=settings.local_threads, ctx=settings.local_ctx, alias=ALIAS)
            runtime.start()
            with self._lock:
                if self._closed:
                    runtime.stop()
                    return
                self._runtime = runtime
            self._set(phase="ready", seconds=time.perf_counter() - started)
            logger.info("embedded model %s ready in %.1f s", self._state.model, self._state.seconds)
        except RagError as exc:
            logger.warning("embedded model not available: %s", exc)
            self._set(phase="failed", error=exc.msg)
        except Exception as exc:  # noqa: BLE001 - a runtime's own error: one line, retrieval-only stays
            logger.warning("embedded model failed to start (%s)", type(exc).__name__, exc_info=True)
            self._set(phase="failed", error=Msg.of("local.start_failed", level="error", kind=type(exc).__name__))

    def _model_file(self) -> Path:
        settings = self.settings
        if settings.local_model_path:
            path = Path(settings.local_model_path).expanduser()
            if not path.is_file():
                raise LocalModelError(Msg.of("local.no_file", level="error", name=path.name))
            return path
        spec = _spec(settings)
        dest = settings.data_dir / "models"
        if (dest / spec.filename).is_file():
            return dest / spec.filename
        cached = hub_cache_file(spec)  # a Space's preload_from_hub, or a download by huggingface-cli
        if cached is not None:
            return cached
        self._set(phase="downloading", total=spec.size or 0)
        logger.info("downloading the embedded model %s (%s)", spec.filename, spec.repo)
        return self._fetch(spec, dest, endpoint=settings.hf_endpoint, progress=self._on_progress,
                           cancelled=lambda: self._closed)

    def _on_progress(self, done: int, total: int) -> None:
        self._set(done=done, total=total)
        for progress in list(self._progress):
            progress(done, total)

    # ------------------------------------------------------------------ using
    def chat_model(self) -> Any | None:
        """A chat model for the running runtime (None until it is ready)."""
        with self._lock:
            runtime = self._runtime
        if runtime is None or runtime.base_url is None:
            return None
        from rag.llm import chat_openai

        key = getattr(runtime, "api_key", None) or "not-needed"  # the runtime's port is guarded by a key
        return chat_openai(for_local_model(self.settings), runtime.base_url, key, ALIAS, local=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.stop()


_shared: LocalModel | None = None
_shared_lock = threading.Lock()


def shared_model(settings: Settings) -> LocalModel:
    """The process's one embedded model (made on first use: one model per process)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalModel(settings)
        return _shared
