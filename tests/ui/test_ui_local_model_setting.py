"""The settings page's local model file (LOCAL_MODEL_PATH), handlers called directly: locally the
user sets it (a .gguf file that exists, else a clear line in the page's language) and the server
loads it; on a Space (or any public page) a visitor cannot set it and never sees the server's path."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_settings
from fixtures_ui.pages import make_pages, new_session, scripted_deps, value

from rag.agent.deps import Deps
from rag.local import LocalState

SERVER_PATH = "/srv/secret-models/qwen-private.gguf"
FIELDS = {"base_url": "", "model": "scripted-fake", "key": "", "provider": "fake", "search_key": "", "searxng": "",
          "k": 6, "rounds": 2}


class FakeLocal:
    """An embedded model that is ready when the test says so."""

    def __init__(self, settings: Any) -> None:
        self.settings, self.on_ready, self.closed = settings, None, False

    def start(self, on_ready: Any = None) -> None:
        self.on_ready = on_ready

    def state(self) -> LocalState:
        return LocalState("loading", "local")

    def close(self) -> None:
        self.closed = True


def build(tmp_path, **settings_changes: Any):
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", **settings_changes)
    deps = scripted_deps(settings)
    made: list[FakeLocal] = []

    def make_deps(session_settings, index=None, llm=None, web_search=None):
        return Deps(settings=session_settings, llm=llm or deps.llm, retriever=deps.retriever,
                    web_search=web_search or deps.web_search)

    def make_local(s: Any) -> FakeLocal:
        made.append(FakeLocal(s))
        return made[-1]

    return make_pages(deps, make_deps=make_deps, make_local=make_local), made


def apply(pages, session, local_model: str) -> dict[Any, Any]:
    return pages.settings.on_apply(session, *FIELDS.values(), local_model)


@pytest.fixture
def local(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    return build(tmp_path)


@pytest.mark.parametrize("lang,typed,expected", [
    ("zh", "models/qwen.bin", "必须是 .gguf 文件"),
    ("en", "models/qwen.bin", "must be a .gguf file"),
    ("zh", "no/such/model.gguf", "找不到本地模型文件"),
    ("en", "no/such/model.gguf", "No local model file"),
])
def test_a_path_that_is_no_gguf_file_is_refused_in_the_page_language(local, lang, typed, expected):
    pages, made = local
    out = apply(pages, new_session(pages, lang), typed)
    assert expected in out[pages.layout.settings.status] and typed in out[pages.layout.settings.status]
    assert made == [] and pages.ctx.local is None


def test_a_gguf_file_is_loaded_and_answers_once_ready(local, tmp_path):
    pages, made = local
    gguf = tmp_path / "tiny.GGUF"
    gguf.write_bytes(b"GGUF")
    out = apply(pages, new_session(pages, "zh"), str(gguf))
    s, sh = pages.layout.settings, pages.layout.shell
    assert "正在加载本地模型 tiny.GGUF" in out[s.status] and out[sh.banner_timer].active is True
    assert len(made) == 1 and pages.ctx.local is made[0]
    assert made[0].settings.local_model_path == str(gguf.resolve())
    ready_model = object()
    made[0].on_ready(ready_model)
    assert pages.ctx.deps.llm is ready_model and pages.ctx.settings.local_model_path == str(gguf.resolve())


def test_the_field_is_editable_locally_and_an_empty_field_changes_nothing(local):
    pages, made = local
    field = pages.settings.labels("en")[pages.layout.settings.local_model]
    assert field["interactive"] is True and field["label"] == "Local model file (GGUF)"
    out = apply(pages, new_session(pages, "en"), "")
    assert out[pages.layout.settings.status].startswith("✅") and made == []


def test_on_a_space_a_visitor_cannot_set_it_nor_see_the_servers_path(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    pages, made = build(tmp_path, local_model_path=SERVER_PATH, public_page=True)
    s = pages.layout.settings
    for lang, words in (("zh", "访客不能更改"), ("en", "visitors cannot change it")):
        field = pages.settings.labels(lang)[s.local_model]
        assert field["interactive"] is False and words in field["info"]
    session = new_session(pages, "zh")
    loaded = pages.shell.on_load(session, {}, None)
    assert value(loaded, s.local_model) == ""
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    out = apply(pages, session, str(gguf))
    assert "只能在服务器上设置" in out[s.status] and made == []
    shown = repr(loaded) + repr(out) + repr(pages.settings.labels("en")) + repr(pages.settings.on_reset(session))
    assert SERVER_PATH not in shown and "secret-models" not in shown
