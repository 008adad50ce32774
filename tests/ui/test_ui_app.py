"""App-level pieces without a browser: per-session settings (and key hygiene), sessions, the
Space host switch, the sample-book start-up, and that build_app builds."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import gradio as gr
import pytest
from conftest import make_settings
from fixtures_index.books import guide_chapters, make_epub
from fixtures_index.embedders import HashEmbedder
from pydantic import SecretStr

from rag.agent.deps import Deps
from rag.errors import ConfigError
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.ui.blocks import Session, build_app
from rag.ui.pages.base import mode_of, per_session_deps
from rag.ui.pages.settings import SettingsForm, apply_settings
from rag.ui.serve import server_host, start_sample_ingest

SERVER_KEY = "sk-server-secret-123"


def base_deps(**overrides) -> Deps:
    settings = make_settings(llm_base_url="https://llm.server.example/v1", llm_model="server-model",
                             llm_api_key=SERVER_KEY, search_provider="bocha", bocha_api_key="bocha-secret",
                             max_web_rounds=1, **overrides)
    return Deps(settings=settings, llm=ScriptedChatModel(replies=[]), retriever=FakeRetriever([]),
                web_search=FakeWebSearch([]))


class RecordingMakeDeps:
    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, settings, *, index=None):
        self.calls.append((settings, index))
        return Deps(settings=settings, llm=None, retriever=index, web_search=None)


def apply(deps, make_deps=None, **fields):
    values = {"base_url": deps.settings.llm_base_url, "model": deps.settings.llm_model, "key": "",
              "provider": deps.settings.search_provider, "search_key": "", "searxng": "",
              "k": deps.settings.retrieval_k, "rounds": deps.settings.max_web_rounds}
    values.update(fields)
    return apply_settings(deps, None, make_deps, SettingsForm(**values))


def test_unchanged_settings_keep_the_server_deps():
    deps = base_deps()
    assert apply(deps) is deps


def test_k_and_rounds_change_without_make_deps():
    deps = base_deps()
    new = apply(deps, k=3, rounds=2)
    assert new is not deps and new.settings.retrieval_k == 3 and new.settings.max_web_rounds == 2
    assert new.llm is deps.llm and new.web_search is deps.web_search
    assert deps.settings.retrieval_k == 6  # the server's settings are untouched


def test_model_change_needs_make_deps():
    with pytest.raises(ConfigError, match="cannot change") as refused:
        apply(base_deps(), model="other")
    assert refused.value.msg.code == "settings.no_make_deps"


def test_server_key_is_never_sent_to_a_user_base_url():
    deps, make = base_deps(), RecordingMakeDeps()
    new = apply(deps, make, base_url="https://attacker.example/v1")
    settings = make.calls[-1][0]
    assert settings.llm_base_url == "https://attacker.example/v1" and settings.llm_api_key is None
    assert new.settings is settings
    apply(deps, make, base_url="https://mine.example/v1", key="sk-user")
    assert make.calls[-1][0].llm_api_key.get_secret_value() == "sk-user"
    # same base URL, another model: the server key stays (it only goes to the server's endpoint)
    apply(deps, make, model="bigger")
    assert make.calls[-1][0].llm_api_key.get_secret_value() == SERVER_KEY
    assert make.calls[-1][0].llm_model == "bigger"


def test_search_key_goes_to_the_chosen_provider():
    deps, make = base_deps(), RecordingMakeDeps()
    apply(deps, make, provider="tavily", search_key="tv-key")
    settings = make.calls[-1][0]
    assert settings.search_provider == "tavily" and settings.tavily_api_key.get_secret_value() == "tv-key"
    assert settings.bocha_api_key.get_secret_value() == "bocha-secret"


@pytest.mark.parametrize("field,value,code", [("base_url", "file:///etc/passwd", "settings.base_url_scheme"),
                                              ("searxng", "javascript:x", "settings.searxng_scheme"),
                                              ("k", 0, "settings.k_range"), ("rounds", 9, "settings.rounds_range")])
def test_bad_settings_are_rejected(field, value, code):
    with pytest.raises(ConfigError) as bad:
        apply(base_deps(), RecordingMakeDeps(), **{field: value})
    assert bad.value.msg.code == code and bad.value.msg.level == "error"


def test_with_session_validates_what_model_copy_would_not():
    settings = make_settings(retrieval_k=6)
    assert settings.with_session(retrieval_k=3).retrieval_k == 3 and settings.retrieval_k == 6
    with pytest.raises(ConfigError) as bad:
        settings.with_session(retrieval_k=99)
    assert bad.value.msg.code == "settings.k_range"
    with pytest.raises(ConfigError) as bad:
        settings.with_session(llm_temperature="hot")
    assert bad.value.msg.code == "settings.invalid" and "LLM_TEMPERATURE" in str(bad.value)
    kept = make_settings(llm_api_key="sk-1").with_session(llm_model="m")
    assert kept.llm_api_key.get_secret_value() == "sk-1" and kept.llm_model == "m"


def test_session_repr_and_copy_hold_no_secrets(caplog):
    session = Session("en")
    session.deps = base_deps()
    assert SERVER_KEY not in repr(session) and "secret" not in repr(session)
    assert copy.deepcopy(session) is session
    first = session.thread_id
    session.new_conversation()
    assert session.thread_id != first and session.ui.turns == ()
    other = Session("zh")
    assert other.thread_id != session.thread_id and other.id != session.id


def test_each_session_gets_its_own_search_budget():
    deps = base_deps(search_budget=2)
    a, b = per_session_deps(deps), per_session_deps(deps)
    assert a.web_search is not b.web_search and a.web_search.budget == 2
    assert a.web_search.ws is deps.web_search  # the shared (cached) search underneath
    assert per_session_deps(a) is a
    no_web = Deps(settings=deps.settings, llm=None)
    assert per_session_deps(no_web) is no_web


def test_mode_of_deps():
    deps = base_deps()
    assert mode_of(deps) == {"llm_model": "server-model", "llm_connected": True, "web_provider": "fake"}
    off = Deps(settings=make_settings(max_web_rounds=0), llm=None, web_search=FakeWebSearch([]))
    assert mode_of(off) == {"llm_model": None, "llm_connected": False, "web_provider": None}


def test_build_app_builds_blocks_without_launching(caplog):
    caplog.set_level(logging.DEBUG)
    demo = build_app(base_deps())
    assert isinstance(demo, gr.Blocks)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert {"rag-chat", "rag-trace", "rag-sources", "rag-upload", "rag-banner", "rag-s-key"} <= ids
    keys = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) in {"rag-s-key", "rag-s-search-key"}]
    assert all(k.value in ("", None) for k in keys)  # server keys are never put into the page
    config = str(demo.get_config_file())
    assert SERVER_KEY not in config and "bocha-secret" not in config
    assert SERVER_KEY not in caplog.text


def test_space_listens_on_all_interfaces(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert server_host("127.0.0.1") == "127.0.0.1"
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    assert server_host("127.0.0.1") == "0.0.0.0"


def test_sample_book_is_indexed_in_the_background_once(tmp_path: Path):
    from rag.index import open_index

    index = open_index(make_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder())
    try:
        sample = make_epub(tmp_path / "sample.epub", guide_chapters(1, 2), title="示例书")
        thread = start_sample_ingest(index, sample)
        assert thread is not None and thread.daemon
        thread.join(timeout=60)
        assert [b.title for b in index.books()] == ["示例书"]
        assert start_sample_ingest(index, sample) is None  # library not empty: nothing to do
        assert start_sample_ingest(index, tmp_path / "missing.epub") is None
        assert start_sample_ingest(None, sample) is None
    finally:
        index.close()


def test_secret_fields_are_secretstr():
    deps, make = base_deps(), RecordingMakeDeps()
    apply(deps, make, base_url="https://mine.example/v1", key="sk-user")
    assert isinstance(make.calls[-1][0].llm_api_key, SecretStr)
    assert "sk-user" not in repr(make.calls[-1][0])


def test_an_upload_shows_one_progress_display_and_a_failed_ask_ends_its_turn(tmp_path):
    """Issue 25, items 5 and 1, as wired: the upload's progress is drawn on the upload box only (not
    also on the book list and the active-book picker), and the ask event has a failure handler."""
    from fixtures_ui.live import make_index

    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    try:
        demo = build_app(base_deps(data_dir=tmp_path / "data"), index=index)
        ids = {block._id: getattr(block, "elem_id", None) for block in demo.blocks.values()}
        deps = demo.config["dependencies"]
        upload = [d for d in deps if "rag-upload" in [ids.get(i) for i in d["inputs"]]
                  and "rag-books" in [ids.get(o) for o in d["outputs"]]]
        assert len(upload) == 1 and [ids.get(c) for c in upload[0]["show_progress_on"] or []] == ["rag-upload"]
        asks = {d["id"] for d in deps if "rag-trace" in [ids.get(c) for c in d.get("show_progress_on") or []]}
        assert len(asks) == 2  # from the box (Enter) and from Send
        failed = [d for d in deps if d.get("trigger_only_on_failure") and d.get("trigger_after") in asks]
        assert len(failed) == 2 and all("rag-trace" in [ids.get(o) for o in d["outputs"]] for d in failed)
    finally:
        index.close()
