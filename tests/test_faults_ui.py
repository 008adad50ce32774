"""Fault suite (issue 12), the web app launched on a loopback port (``rag.ui.serve.launch``, as
``python app.py`` serves it): server URLs never reach the browser, visitors of a public
deployment cannot aim the server at other endpoints, uploads are capped at MAX_BOOK_MB and an
uploaded book does not stay in Gradio's cache once ingested or rejected."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index, served_app
from gradio_client import Client, handle_file

from rag.agent.deps import Deps
from rag.ui.blocks import build_app

SEARXNG = "https://admin:hunter2-Pa55word@searx.internal.example:8443"
LLM_URL = "http://10.20.30.40:8000/v1"
LEAKS = ["hunter2-Pa55word", "searx.internal.example", "10.20.30.40",
         base64.b64encode(b"admin:hunter2-Pa55word").decode()]


@contextmanager
def served(settings: Any, index: Any | None = None) -> Iterator[str]:
    demo = build_app(Deps(settings=settings), index=index, make_deps=lambda s, index=None: Deps(settings=s))
    with served_app(demo, settings) as url:
        yield url


def server_settings(tmp_path: Path, **overrides: Any):
    values = {"searxng_url": SEARXNG, "llm_base_url": LLM_URL, "llm_model": "server-model",
              "search_provider": "searxng", "data_dir": tmp_path / "data"}
    return make_settings(**{**values, **overrides})


def component(config: dict[str, Any], elem_id: str) -> dict[str, Any]:
    return next(c["props"] for c in config["components"] if c.get("props", {}).get("elem_id") == elem_id)


def test_server_urls_never_reach_the_browser(tmp_path: Path) -> None:
    with served(server_settings(tmp_path, allow_session_endpoints=True)) as url:
        config_text = httpx.get(f"{url}/config", timeout=30).text
        page = httpx.get(f"{url}/", timeout=30).text
        client = Client(f"{url}/", verbose=False)
        reset = client.predict(api_name="/on_reset")
        on_load = httpx.get(f"{url}/gradio_api/info", timeout=30).text
    for leak in LEAKS:
        assert leak not in config_text, leak
        assert leak not in page, leak
        assert leak not in repr(reset), leak
        assert leak not in on_load, leak
    config = httpx.Response(200, content=config_text).json()
    for elem_id in ("rag-s-base-url", "rag-s-searxng"):
        props = component(config, elem_id)
        assert props["value"] == "" and props["visible"] is True
        assert "set on the server" in props["placeholder"] or "已在服务器上设置" in props["placeholder"]
    assert component(config, "rag-s-model")["value"] == "server-model"  # not a secret: still shown


def test_public_deployment_offers_no_endpoint_fields_and_refuses_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    settings = server_settings(tmp_path)
    assert settings.allow_session_endpoints is False  # default on a Space
    with served(settings) as url:
        config = httpx.get(f"{url}/config", timeout=30).json()
        client = Client(f"{url}/", verbose=False)
        inputs = {"base_url": "", "model": "server-model", "key": "", "provider": "searxng", "search_key": "",
                  "k": 6, "rounds": 1}

        def apply(**fields: Any) -> str:
            values = {**inputs, "searxng": "", **fields}
            return client.predict(values["base_url"], values["model"], values["key"], values["provider"],
                                  values["search_key"], values["searxng"], values["k"], values["rounds"],
                                  api_name="/on_apply")[1]

        refused_llm = apply(base_url="http://127.0.0.1:11434/v1")
        refused_searx = apply(searxng="http://169.254.169.254/")
        allowed = apply(k=3)  # other per-session settings still work
    assert component(config, "rag-s-base-url")["visible"] is False
    assert component(config, "rag-s-searxng")["visible"] is False
    assert "ALLOW_SESSION_ENDPOINTS" in refused_llm and "ALLOW_SESSION_ENDPOINTS" in refused_searx
    assert "✅" in allowed
    monkeypatch.delenv("SPACE_ID")
    assert server_settings(tmp_path).allow_session_endpoints is True  # default locally
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    assert server_settings(tmp_path, allow_session_endpoints=True).allow_session_endpoints is True  # explicit wins


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_uploads_are_capped_and_an_ingested_book_is_not_kept(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "gradio-cache"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(cache))
    settings = make_settings(data_dir=tmp_path / "data", max_book_mb=1)
    index = make_index(tmp_path, settings)
    try:
        with served(settings, index=index) as url:
            too_big = os.urandom(2 * 1024 * 1024)  # any type, over MAX_BOOK_MB
            refused = httpx.post(f"{url}/gradio_api/upload", files={"files": ("big.bin", too_big)}, timeout=60)
            assert refused.status_code == 413, refused.text
            assert _files_under(cache) == []  # nothing of it kept, not even a partial file

            book = make_epub(tmp_path / "upload.epub", [("第一回 甲", "甲乙丙丁。" * 40),
                                                        ("第二回 乙", "戊己庚辛。" * 40)], title="上传的书")
            bad = tmp_path / "broken.epub"
            bad.write_bytes(b"PK\x03\x04 not really a zip")
            client = Client(f"{url}/", verbose=False)
            # /on_upload is not documented (not in view_api), so the client knows no defaults: every input is given
            ok = client.predict(handle_file(str(book)), "__all__", api_name="/on_upload")
            rejected = client.predict(handle_file(str(bad)), "__all__", api_name="/on_upload")
        assert [b.title for b in index.books()] == ["上传的书"]
        assert "上传的书" in repr(ok) and "ZIP" in repr(rejected)
        leftovers = [p.name for p in _files_under(cache) if p.suffix == ".epub"]
        assert leftovers == []  # neither the ingested nor the rejected upload stays in the cache
    finally:
        index.close()
