"""Settings: documented, secret-safe, no import-time work."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO, make_settings

from rag.config import Settings
from rag.logs import RedactingFilter, redact, secrets_of


def test_every_setting_is_documented_in_env_example():
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", (REPO / ".env.example").read_text(encoding="utf-8"), re.M))
    assert {name.upper() for name in Settings.model_fields} == documented


def test_keys_are_secret_and_never_in_repr():
    s = make_settings(llm_api_key="sk-abcdef123456", bocha_api_key="bocha-xyz-987654")
    assert "sk-abcdef123456" not in repr(s) and "bocha-xyz-987654" not in str(s.model_dump())
    assert sorted(secrets_of(s)) == ["bocha-xyz-987654", "sk-abcdef123456"]


def test_blank_values_mean_unset(monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", " ")
    monkeypatch.setenv("LLM_API_KEY", "")
    s = Settings(_env_file=None)
    assert s.llm_base_url is None and s.llm_api_key is None
    assert not s.web_enabled


def test_redaction_of_secrets_and_bearer_tokens(caplog):
    import logging

    assert redact("key sk-abcdef123456 used", ["sk-abcdef123456"]) == "key *** used"
    assert "tok_123456789" not in redact("Authorization: Bearer tok_123456789", [])
    logger = logging.getLogger("test.redact")
    caplog.handler.addFilter(RedactingFilter(["sk-abcdef123456"]))
    logger.warning("calling with %s", "sk-abcdef123456")
    assert "sk-abcdef123456" not in caplog.text and "***" in caplog.text


def test_importing_the_package_does_no_io_and_creates_no_clients():
    code = (
        "import sys, socket\n"
        "def deny(*a, **k): raise AssertionError('network at import')\n"
        "socket.socket.connect = deny\n"
        "import rag, rag.agent.graph, rag.agent.nodes, rag.cli, rag.agent.wiring, rag.agent.events, rag.config\n"
        "assert 'chromadb' not in sys.modules and 'gradio' not in sys.modules and 'openai' not in sys.modules, "
        "[m for m in ('chromadb','gradio','openai') if m in sys.modules]\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_every_setting_is_defined_in_exactly_one_group_and_read_under_its_own_name(monkeypatch):
    from rag.config import (
        IndexSettings,
        JudgeSettings,
        LimitsSettings,
        LlmSettings,
        RetrievalSettings,
        UiSettings,
        WebSettings,
    )

    groups = {"llm": LlmSettings, "judge": JudgeSettings, "retrieval": RetrievalSettings, "index": IndexSettings,
              "web": WebSettings, "limits": LimitsSettings, "ui": UiSettings}
    names = [name for group in groups.values() for name in group.model_fields]
    assert len(names) == len(set(names)) and set(names) == set(Settings.model_fields)  # none outside a group
    monkeypatch.setenv("RETRIEVAL_K", "4")
    monkeypatch.setenv("SEARCH_PROVIDER", "duckduckgo")
    monkeypatch.setenv("RERANK_BASE_URL", " ")
    settings = Settings(_env_file=None, turn_timeout=7)
    for attr, group in groups.items():
        view = getattr(settings, attr)
        assert type(view) is group and view.model_dump() == {n: getattr(settings, n) for n in group.model_fields}
    assert settings.retrieval.retrieval_k == 4 and settings.web.search_provider == "duckduckgo"
    assert settings.limits.turn_timeout == 7 and settings.retrieval.rerank_base_url is None


def test_the_index_config_takes_its_settings_defaults_from_the_settings():
    from rag.index.config import IndexConfig

    default, settings = IndexConfig(), make_settings()
    assert (default.embed_batch, default.context_chars, default.rerank_candidates) == (
        settings.embedding_batch_size, settings.max_passage_chars, settings.rerank_candidates)
    custom = IndexConfig.from_settings(make_settings(embedding_batch_size=4, max_passage_chars=600, rerank_candidates=9))
    assert (custom.embed_batch, custom.context_chars, custom.rerank_candidates) == (4, 600, 9)


def test_a_setting_unset_depends_on_where_the_app_runs(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    local = Settings(_env_file=None)
    assert local.ui.public_page is False and local.shared_library and local.allow_session_endpoints
    monkeypatch.setenv("SPACE_ID", "someone/space")
    space = Settings(_env_file=None, shared_library=" ")
    assert space.public_page and not space.shared_library and not space.allow_session_endpoints
    assert Settings(_env_file=None, public_page=False).public_page is False
