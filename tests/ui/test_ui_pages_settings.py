"""The settings and shell pages' handlers called directly (no server): Apply checks the endpoint
first and refuses a dead one with the reason, offers a live one's models; settings survive a reload
(the keys only with consent); a public deployment refuses endpoints; Reset shows no server URL;
the page follows the browser's language and a language switch relabels it, status lines too;
two sessions do not share settings."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_settings
from fixtures_ui.live import free_port
from fixtures_ui.pages import make_pages, new_session, scripted_deps, value

from rag.agent.deps import Deps
from rag.search.registry import VALID_NAMES
from rag.testing.openai_stub import OpenAIStub
from rag.ui.pages.settings import provider_choices

FIELDS = {"base_url": "", "model": "scripted-fake", "key": "", "provider": "fake", "search_key": "", "searxng": "",
          "k": 6, "rounds": 2}


def apply(pages, session, **fields: Any) -> dict[Any, Any]:
    values = {**FIELDS, **fields}
    return pages.settings.on_apply(session, *values.values())


@pytest.fixture
def pages(tmp_path):
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", ui_language="auto")
    deps = scripted_deps(settings)

    def make_deps(session_settings, index=None):
        return Deps(settings=session_settings, llm=deps.llm, retriever=deps.retriever, web_search=deps.web_search)

    return make_pages(deps, make_deps=make_deps)


def test_provider_choices_come_from_the_search_registry():
    values = [value for _, value in provider_choices("none")]
    assert values[0] == "none" and set(values) == set(VALID_NAMES)
    assert provider_choices("bocha,duckduckgo")[-1][1] == "bocha,duckduckgo"


def test_provider_choices_are_labelled_in_the_page_language_and_keep_their_values():
    zh = {value: label for label, value in provider_choices("bocha,duckduckgo", "zh")}
    en = {value: label for label, value in provider_choices("bocha,duckduckgo", "en")}
    assert zh["none"] == "不搜索网络" and en["none"] == "No web search"
    assert "none" not in zh.values() and "博查" in zh["bocha"]
    assert zh["bocha,duckduckgo"].startswith("博查（Bocha） → DuckDuckGo") and "," not in en["bocha,duckduckgo"]


def test_a_language_switch_relabels_the_provider_choices(pages):
    update = pages.settings.labels("en")[pages.layout.settings.provider]
    assert ("No web search", "none") in update["choices"]


def test_applied_settings_survive_a_reload_and_keys_only_with_consent(pages):
    s, sh = pages.layout.settings, pages.layout.shell
    session = new_session(pages, "en")
    out = apply(pages, session, provider="tavily", search_key="tv-secret-123", k=3)
    assert out[s.status].startswith("✅ Settings applied") and "custom settings" in out[sh.banner]
    stored = pages.settings.save_browser(session, False, {"sid": "old"})
    assert stored["settings"] == {"model": "scripted-fake", "provider": "tavily", "k": 3, "rounds": 2}
    assert "keys" not in stored and "tv-secret-123" not in repr(stored)

    fresh = pages.shell.on_load(None, stored | {"sid": "gone"}, None)  # the server forgot the session
    restored = fresh[sh.session]
    assert restored is not session and restored.custom and restored.deps.settings.retrieval_k == 3
    assert value(fresh, s.k) == 3 and value(fresh, s.provider) == "tavily" and value(fresh, s.search_key) == ""
    assert "custom settings" in fresh[sh.banner] and "restored" in fresh[s.status]

    kept = pages.settings.save_browser(session, True, stored)
    assert kept["remember_keys"] is True and kept["keys"] == {"search": "tv-secret-123"}
    again = pages.shell.on_load(None, kept | {"sid": "gone"}, None)
    assert value(again, s.search_key) == "tv-secret-123" and value(again, s.remember) is True
    assert again[sh.session].deps.settings.tavily_api_key.get_secret_value() == "tv-secret-123"
    assert "keys" not in pages.settings.save_browser(session, False, kept)  # unticked: forgotten


def test_the_same_session_is_found_again_after_a_reload(pages):
    session = new_session(pages, "en")
    apply(pages, session, k=4)
    loaded = pages.shell.on_load(None, {"sid": session.id, "lang": "en"}, None)
    assert loaded[pages.layout.shell.session] is session
    assert "Settings applied" in loaded[pages.layout.settings.status]
    assert value(loaded, pages.layout.chat.send) == "Send"  # the language stayed


def test_a_status_line_and_every_label_follow_the_language(pages):
    s, c = pages.layout.settings, pages.layout.chat
    session = new_session(pages, "en")
    apply(pages, session, k=3)
    zh = pages.shell.on_language(session, "zh", {}, None)
    assert zh[s.status] == "✅ 设置已应用。" and value(zh, c.send) == "发送"
    en = pages.shell.on_language(session, "en", {}, None)
    assert value(en, c.send) == "Send" and en[pages.layout.shell.tab_books]["label"] == "Books"
    assert "Model connected" in en[pages.layout.shell.banner]
    assert value(en, c.demo_btn).startswith("💡 In which chapter of the novel")
    assert en[pages.layout.shell.browser]["lang"] == "en"


def test_the_page_follows_the_browser_language(pages):
    send = pages.layout.chat.send
    assert value(pages.shell.on_load(None, {}, None, "en-US,en;q=0.9"), send) == "Send"
    assert value(pages.shell.on_load(None, {}, None, "zh-CN,zh;q=0.9"), send) == "发送"
    assert value(pages.shell.on_load(None, {"lang": "en"}, None, "zh-CN"), send) == "Send"  # the browser's choice


def test_sessions_do_not_share_settings(pages):
    sh = pages.layout.shell
    one, other = new_session(pages, "en"), new_session(pages, "en")
    assert "mode-web-off" in apply(pages, one, rounds=0)[sh.banner]
    loaded = pages.shell.on_load(other, {}, None)
    assert "mode-web-off" not in loaded[sh.banner] and "custom settings" not in loaded[sh.banner]
    assert one.deps.web_search is not None and pages.ctx.deps.settings.max_web_rounds == 2


def test_bad_values_are_refused_in_the_page_language(pages):
    session = new_session(pages, "zh")
    out = apply(pages, session, base_url="ftp://x")
    assert out[pages.layout.settings.status] == "⚠️ 设置无效：模型 Base URL 必须以 http:// 或 https:// 开头"
    assert not session.custom and session.deps is None
    pages.shell.on_language(session, "en", {}, None)
    assert "the LLM base URL must start with http:// or https://" in pages.settings.status(session)[
        pages.layout.settings.status]


def test_apply_checks_the_endpoint_first(tmp_path):
    from rag.agent.wiring import make_deps
    from rag.testing.fakes import FakeRetriever

    settings = make_settings(llm_base_url=f"http://127.0.0.1:{free_port()}/v1", llm_model="some-model",
                             llm_max_retries=0, llm_timeout=5, max_web_rounds=0, data_dir=tmp_path / "data")
    pages = make_pages(make_deps(settings, index=FakeRetriever([])),
                       make_deps=lambda s, index=None: make_deps(s, index=FakeRetriever([])))
    s, session = pages.layout.settings, new_session(pages, "zh")
    fields = {**FIELDS, "model": "some-model", "provider": "none", "rounds": 0}
    other_dead = f"http://127.0.0.1:{free_port()}/v1"
    refused = pages.settings.on_apply(session, *{**fields, "base_url": other_dead}.values())
    assert refused[s.status] == f"⚠️ 无法连接模型：{other_dead}（连接被拒绝或主机不存在）。设置未应用。"
    with OpenAIStub(lambda body: "ok", models=("qwen-a", "qwen-b")) as stub:
        out = pages.settings.on_apply(session, *{**fields, "base_url": stub.base_url, "model": ""}.values())
    assert "设置已应用" in out[s.status] and f"已连接 {stub.base_url}：可选 2 个模型" in out[s.status]
    assert out[s.model]["value"] == "qwen-a" and out[s.model]["choices"] == ["qwen-a", "qwen-b"]
    assert "qwen-a" in out[pages.layout.shell.banner]
    server = pages.settings.on_apply(new_session(pages, "en"), *{**fields, "model": "other"}.values())
    assert "the server&#x27;s model endpoint" in server[s.status] and settings.llm_base_url not in server[s.status]


def test_a_public_deployment_refuses_endpoints(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert make_settings().allow_session_endpoints is True  # default locally
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    assert make_settings(allow_session_endpoints=True).allow_session_endpoints is True  # explicit wins
    settings = make_settings(searxng_url="http://searx.internal.example", llm_model="server-model",
                             search_provider="searxng", data_dir=tmp_path / "data")
    assert settings.allow_session_endpoints is False
    pages = make_pages(Deps(settings=settings), make_deps=lambda s, index=None: Deps(settings=s))
    s, session = pages.layout.settings, new_session(pages, "en")
    assert s.base_url.visible is False and s.searxng.visible is False  # no URL fields at all
    fields = {**FIELDS, "model": "server-model", "provider": "searxng", "rounds": 1}
    llm = pages.settings.on_apply(session, *{**fields, "base_url": "http://127.0.0.1:11434/v1"}.values())
    searx = pages.settings.on_apply(session, *{**fields, "searxng": "http://169.254.169.254/"}.values())
    allowed = pages.settings.on_apply(session, *{**fields, "k": 3}.values())
    assert "ALLOW_SESSION_ENDPOINTS" in llm[s.status] and "ALLOW_SESSION_ENDPOINTS" in searx[s.status]
    assert "✅" in allowed[s.status] and session.deps.settings.retrieval_k == 3


def test_reset_goes_back_to_the_server_settings_without_showing_its_urls(tmp_path):
    secret_url = "http://admin:hunter2-Pa55word@10.20.30.40:8000/v1"
    settings = make_settings(llm_base_url=secret_url, searxng_url="http://searx.internal.example",
                             llm_model="server-model", search_provider="searxng", data_dir=tmp_path / "data",
                             allow_session_endpoints=True)
    pages = make_pages(Deps(settings=settings), make_deps=lambda s, index=None: Deps(settings=s))
    session = new_session(pages, "en")
    session.custom = True
    out = pages.settings.on_reset(session)
    for leak in ("hunter2-Pa55word", "searx.internal.example", "10.20.30.40"):
        assert leak not in repr(out), leak
    assert out[0] is session and not session.custom and "Back to the default settings" in out[2]
    assert out[4]["value"] == "server-model"  # the model's name is no secret: still shown
