"""The README's front matter is a Space that answers with no secrets: the Gradio it names is the one
pinned, the app file exists, and the model it preloads is the embedded model's pinned file (which
the manager then finds in the Hugging Face cache: tests/test_local_manager.py)."""

from __future__ import annotations

import re

import yaml
from conftest import REPO

from rag.local import DEFAULT_MODEL


def _front_matter() -> dict:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md starts with the Space's front matter"
    return yaml.safe_load(match.group(1))


def test_the_front_matter_names_the_pinned_gradio_and_an_app_file():
    meta = _front_matter()
    pinned = re.search(r"^gradio(?:\[[^\]]*\])?==(\S+)", (REPO / "requirements.txt").read_text(), re.M)
    assert meta["sdk"] == "gradio" and pinned and meta["sdk_version"] == pinned.group(1)
    assert (REPO / meta["app_file"]).is_file()
    assert meta["suggested_hardware"] == "cpu-basic"  # the free tier


def test_the_space_preloads_the_embedded_models_pinned_file():
    entries = [str(e).split() for e in _front_matter()["preload_from_hub"]]
    assert [DEFAULT_MODEL.repo, DEFAULT_MODEL.filename, DEFAULT_MODEL.revision] in entries
