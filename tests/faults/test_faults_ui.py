"""Fault suite (issue 12), the web app launched on a loopback port (``rag.ui.serve.launch``, as
``python app.py`` serves it): what needs the wire. Server URLs never reach the browser, and uploads
are capped at MAX_BOOK_MB (413, nothing kept). That visitors of a public deployment cannot aim the
server at other endpoints, and that an uploaded book does not stay in Gradio's cache once ingested
or rejected, is checked on the handlers: tests/test_ui_pages_settings.py, tests/test_ui_pages_books.py."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from conftest import make_settings
from fixtures_ui.live import make_index, served_app

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
        info = httpx.get(f"{url}/gradio_api/info", timeout=30).text
    for leak in LEAKS:  # what Reset sends back: tests/test_ui_pages_settings.py
        assert leak not in config_text, leak
        assert leak not in page, leak
        assert leak not in info, leak
    config = httpx.Response(200, content=config_text).json()
    for elem_id in ("rag-s-base-url", "rag-s-searxng"):
        props = component(config, elem_id)
        assert props["value"] == "" and props["visible"] is True
        assert "set on the server" in props["placeholder"] or "已在服务器上设置" in props["placeholder"]
    assert component(config, "rag-s-model")["value"] == "server-model"  # not a secret: still shown


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_uploads_are_capped(tmp_path: Path, monkeypatch) -> None:
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
        # that an ingested or a rejected upload is not kept either: tests/test_ui_pages_books.py
    finally:
        index.close()
