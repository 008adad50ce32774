"""The embedded model's manager and how the app follows it: the provider chosen from the settings,
the states the banner shows (downloading, loading, ready, failed), the switch from retrieval-only
to answering once it is ready (sessions on the server's deps follow, conversations kept), and the
banner telling a slow model from an unreachable one. The runtime here is a stand-in; the real one
(llama.cpp) is tested in tests/test_local_runtime.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings

from rag.agent.deps import Deps
from rag.i18n import Msg, t
from rag.llm import is_local_model, make_chat_model, provider_of
from rag.local import DownloadError, LocalModel, LocalModelError, ModelSpec
from rag.ui.pages.base import AppContext
from rag.ui.render import Banner, render_banner
from rag.ui.session import Session


class FakeRuntime:
    started: list[Path] = []

    def __init__(self, path: Path, *, threads: int, ctx: int, alias: str) -> None:
        self.path, self.threads, self.ctx, self.alias = path, threads, ctx, alias
        self.base_url: str | None = None
        self.stopped = False

    def start(self, timeout: float = 120.0) -> str:
        FakeRuntime.started.append(self.path)
        self.base_url = "http://127.0.0.1:9/v1"
        return self.base_url

    def stop(self) -> None:
        self.stopped = True
        self.base_url = None


def _fetch_into(gate: threading.Event | None = None):
    def fetch(spec: ModelSpec, dest: Path, *, endpoint: str | None, progress: Any, cancelled: Any) -> Path:
        progress(0, 100)
        if gate is not None:
            gate.wait(5)
        progress(100, 100)
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / spec.filename
        path.write_bytes(b"GGUF")
        return path
    return fetch


def test_the_provider_follows_the_settings(monkeypatch):
    assert provider_of(make_settings(llm_provider="none", llm_base_url="http://127.0.0.1:9/v1")) == "none"
    assert provider_of(make_settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m")) == "openai"
    assert provider_of(make_settings()) == "local"  # nothing configured, no Ollama: the embedded model
    assert provider_of(make_settings(llm_provider="local", llm_api_key="sk-x")) == "local"
    assert provider_of(make_settings(llm_provider="ollama")) == "none"  # asked for, but none answers
    assert make_chat_model(make_settings()) is None  # without the manager: retrieval-only
    with pytest.raises(Exception, match="LLM_API_KEY"):
        provider_of(make_settings(llm_provider="openai"))


def test_download_load_ready_and_a_chat_model_marked_local(tmp_path):
    gate = threading.Event()
    settings = make_settings(local_model_path=None, data_dir=tmp_path, local_threads=3, local_ctx=2048)
    model = LocalModel(settings, runtime_factory=FakeRuntime, fetch=_fetch_into(gate))
    assert model.state().phase == "waiting" and model.state().model == "qwen2.5-1.5b-instruct-q4_k_m"
    got: list[Any] = []
    model.start(on_ready=got.append)
    for _ in range(100):
        if model.state().phase == "downloading":
            break
        threading.Event().wait(0.02)
    assert model.state().phase == "downloading" and model.state().total == 100 and model.chat_model() is None
    gate.set()
    llm = model.ensure(timeout=5)
    assert model.state().phase == "ready" and model.state().pct == 100
    assert got and is_local_model(got[0]) and is_local_model(llm)
    assert llm.openai_api_base == "http://127.0.0.1:9/v1" and llm.max_retries == 0
    assert FakeRuntime.started[-1] == tmp_path / "models" / "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    late: list[Any] = []
    model.start(on_ready=late.append)  # a listener after the fact is called at once
    assert late and is_local_model(late[0])
    model.close()
    assert model.chat_model() is None


def test_a_model_file_given_by_path_is_used_as_it_is(tmp_path):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")

    def no_fetch(*args: Any, **kwargs: Any) -> Path:
        raise AssertionError("a given file is not downloaded")

    model = LocalModel(make_settings(local_model_path=str(gguf), data_dir=tmp_path), runtime_factory=FakeRuntime,
                       fetch=no_fetch)
    assert model.state().model == "mine"
    assert is_local_model(model.ensure(timeout=5)) and FakeRuntime.started[-1] == gguf


def test_failures_are_one_line_and_retrieval_only_stays(tmp_path):
    missing = LocalModel(make_settings(local_model_path=str(tmp_path / "gone.gguf"), data_dir=tmp_path),
                         runtime_factory=FakeRuntime)
    with pytest.raises(LocalModelError) as caught:
        missing.ensure(timeout=5)
    assert caught.value.msg.code == "local.no_file" and str(tmp_path) not in str(caught.value)
    assert missing.state().phase == "failed" and missing.chat_model() is None

    def offline(*args: Any, **kwargs: Any) -> Path:
        raise DownloadError(Msg.of("local.offline", level="error"))

    down = LocalModel(make_settings(local_model_path=None, data_dir=tmp_path), runtime_factory=FakeRuntime,
                      fetch=offline)
    with pytest.raises(LocalModelError) as failed:
        down.ensure(timeout=5)
    assert failed.value.msg.code == "local.offline"

    class Broken(FakeRuntime):
        def start(self, timeout: float = 120.0) -> str:
            raise MemoryError("cannot allocate /srv/secret/path")

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    broken = LocalModel(make_settings(local_model_path=str(gguf), data_dir=tmp_path), runtime_factory=Broken)
    with pytest.raises(LocalModelError) as crashed:
        broken.ensure(timeout=5)
    assert crashed.value.msg.code == "local.start_failed" and "/srv/secret" not in str(crashed.value)


def _state(phase: str, **kw: Any) -> Any:
    from rag.local import LocalState

    return LocalState(phase, "qwen-tiny", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_banner_shows_each_state_of_the_embedded_model(lang):
    common = {"web_provider": None, "custom": False}
    down = render_banner(Banner(llm_model=None, llm_connected=False, **common,
                                local=_state("downloading", done=300 << 20, total=1065 << 20)), lang)
    assert "mode-local-downloading" in down and "28%" in down and "300" in down and "1065" in down
    assert "mode-local-loading" in render_banner(Banner(llm_model=None, llm_connected=False, local=_state("loading"), **common), lang)
    failed = render_banner(Banner(llm_model=None, llm_connected=False, **common,
                                  local=_state("failed", error=Msg.of("local.offline", level="error"))), lang)
    assert "mode-retrieval-only" in failed and "HF_ENDPOINT" in failed
    ready = render_banner(Banner(llm_model="local", llm_connected=True, local=_state("ready"), **common), lang)
    assert "mode-local" in ready and "qwen-tiny" in ready
    slow = render_banner(Banner(llm_model="m", llm_connected=True, llm_slow="the server's endpoint", **common), lang)
    assert "mode-model-slow" in slow and "mode-model-unreachable" not in slow
    assert t(lang, "banner_model_slow", model="m", where="the server's endpoint") in slow.replace("&#x27;", "'")


def test_sessions_on_the_servers_deps_switch_to_the_model_once_it_is_ready(tmp_path):
    settings = make_settings(data_dir=tmp_path)
    built: list[Any] = []

    def make_deps(s: Any, *, index: Any = None, llm: Any = None, web_search: Any = None) -> Deps:
        built.append(llm)
        return Deps(settings=s, llm=llm, web_search=web_search)

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    local = LocalModel(make_settings(local_model_path=str(gguf), data_dir=tmp_path), runtime_factory=FakeRuntime)
    ctx = AppContext(Deps(settings=settings), make_deps=make_deps, local=local,
                     graph_factory=lambda deps, checkpointer=None: ("graph", deps.llm, checkpointer))
    waiting, own = Session("zh"), Session("en")
    own.custom, own.deps = True, Deps(settings=settings, llm="their-own-model")
    first = ctx.ensure_graph(waiting)
    assert first[1] is None and ctx.current_deps(waiting).llm is None  # retrieval-only meanwhile
    assert "mode-local-loading" in ctx.banner_html(waiting) or "mode-local" in ctx.banner_html(waiting)
    local.start(on_ready=ctx.use_model)
    local.ensure(timeout=5)
    graph = ctx.ensure_graph(waiting)
    assert is_local_model(graph[1]) and graph[2] is first[2]  # a new graph, the same conversation memory
    assert is_local_model(ctx.current_deps(waiting).llm)
    assert "mode-local" in ctx.banner_html(waiting) and "mode-retrieval-only" not in ctx.banner_html(waiting)
    assert ctx.current_deps(own).llm == "their-own-model"  # custom settings keep their model
    assert "mode-local" not in ctx.banner_html(own)


def test_a_file_in_the_hugging_face_cache_is_used_without_a_download(tmp_path, monkeypatch):
    from rag.local import DEFAULT_MODEL

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    snapshot = (tmp_path / "hub" / "models--Qwen--Qwen2.5-1.5B-Instruct-GGUF" / "snapshots" / DEFAULT_MODEL.revision)
    snapshot.mkdir(parents=True)
    (snapshot / DEFAULT_MODEL.filename).write_bytes(b"GGUF")

    def no_fetch(*args: Any, **kwargs: Any) -> Path:
        raise AssertionError("a preloaded file is not downloaded again")

    model = LocalModel(make_settings(local_model_path=None, data_dir=tmp_path / "data"), runtime_factory=FakeRuntime,
                       fetch=no_fetch)
    model.ensure(timeout=5)
    assert FakeRuntime.started[-1] == snapshot / DEFAULT_MODEL.filename


def test_the_embedded_model_gets_minutes_unless_the_timeouts_are_set(tmp_path):
    from rag.agent.wiring import make_deps
    from rag.config import LOCAL_TURN_TIMEOUT

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    local = LocalModel(make_settings(local_model_path=str(gguf), data_dir=tmp_path), runtime_factory=FakeRuntime)
    llm = local.ensure(timeout=5)
    assert llm.request_timeout == LOCAL_TURN_TIMEOUT
    deps = make_deps(make_settings(data_dir=tmp_path, eval_log_enabled=False), llm=llm)
    assert deps.settings.turn_timeout == LOCAL_TURN_TIMEOUT == deps.settings.llm_timeout
    own = make_deps(make_settings(data_dir=tmp_path, eval_log_enabled=False, turn_timeout=45), llm=llm)
    assert own.settings.turn_timeout == 45 and own.settings.llm_timeout == LOCAL_TURN_TIMEOUT
    remote = make_deps(make_settings(data_dir=tmp_path, eval_log_enabled=False), llm=make_chat_model(
        make_settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m")))
    assert remote.settings.turn_timeout == 90


def test_each_phase_is_told_and_the_cli_says_loading_after_the_download(tmp_path, monkeypatch):
    import io

    import rag.local
    from rag.cli import local_model_for_cli

    settings = make_settings(local_model_path=None, data_dir=tmp_path / "a", llm_provider="local")
    model = LocalModel(settings, runtime_factory=FakeRuntime, fetch=_fetch_into())
    phases: list[str] = []
    try:
        model.ensure(timeout=5, on_phase=phases.append)
        model.ensure(timeout=5, on_phase=phases.append)  # told the phase it is in already
    finally:
        model.close()
    assert phases == ["downloading", "loading", "ready", "ready"]
    settings = make_settings(local_model_path=None, data_dir=tmp_path / "b", llm_provider="local")
    fresh = LocalModel(settings, runtime_factory=FakeRuntime, fetch=_fetch_into())
    monkeypatch.setattr(rag.local, "shared_model", lambda s: fresh)
    err = io.StringIO()
    try:
        assert is_local_model(local_model_for_cli(settings, err))
    finally:
        fresh.close()
    said = err.getvalue()  # was "Loading…" first, then the download's line and bar
    assert 0 <= said.index("Downloading the local model") < said.index("Loading the local model")
