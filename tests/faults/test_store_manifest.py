"""Faults, a corrupt manifest on a public deployment (SPACE_ID set, a private library): the book
keeps its owners (a visitor's book stays theirs, the sample guide stays everyone's), and the sample
guide is indexed again at start when no visitor would see it. Real index (Chroma on disk + BM25,
the hash embedder)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_index.books import guide_chapters, make_epub
from fixtures_ui.live import make_index

from rag.ui.serve import start_sample_ingest

ALICE = [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 30),
         ("第二回 学艺", "石猴拜师学艺，得名孙悟空，学会七十二变。" * 30)]


@pytest.fixture
def space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    settings = make_settings(data_dir=tmp_path / "data")
    assert settings.shared_library is False
    sample = make_epub(tmp_path / "guide.epub", guide_chapters(1, 2), title="示例导读")
    index = make_index(tmp_path, settings)
    thread = start_sample_ingest(index, sample)
    assert thread is not None
    thread.join(60)
    guide = index.books()[0]
    alice = index.ingest(make_epub(tmp_path / "alice.epub", ALICE, title="甲的书"), background=False, owner="alice")
    assert index.wait_until_embedded(guide.id, 60)
    index.close()
    return settings, sample, guide.id, alice.id


def titles(index: Any, owner: str) -> set[str]:
    return {b.title for b in index.books(owner=owner)}


def test_a_visitors_book_keeps_its_owner_and_title(tmp_path: Path, space: Any,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    settings, _, _, alice = space
    (settings.keyword_dir / alice / "manifest.json").write_bytes(b"\x00" * 300)
    caplog.set_level(logging.INFO)
    index = make_index(tmp_path, settings)
    try:
        # before: the owner became "(unknown)": the book left alice's list for good
        assert titles(index, "alice") == {"示例导读", "甲的书"}
        assert titles(index, "bob") == {"示例导读"}
        assert index.book(alice, owner="alice").error is None
        assert index.retrieve("仙石 石猴", k=3, owner="alice")
    finally:
        index.close()
    assert f"the manifest of book {alice} is unreadable" in caplog.text and "backup" in caplog.text


def test_the_sample_guide_is_everyones_again_after_its_manifest_is_lost(tmp_path: Path, space: Any,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    settings, sample, guide, _ = space
    for name in ("manifest.json", "manifest.bak.json"):  # no copy to restore it from
        path = settings.keyword_dir / guide / name
        if path.exists():
            path.write_text("{not json", encoding="utf-8")
    index = make_index(tmp_path, settings)
    try:
        assert "示例导读" not in titles(index, "bob")  # rebuilt from the chunks: whose it was is unknown
        thread = start_sample_ingest(index, sample)  # at the app's start
        # before: None ("the library is not empty"), and the guide was gone for every visitor
        assert thread is not None
        thread.join(60)
        assert titles(index, "bob") == {"示例导读"} and titles(index, "alice") == {"示例导读", "甲的书"}
        book = index.book(guide, owner="bob")
        assert book.error is None and book.title == "示例导读"
        assert index.wait_until_embedded(guide, 60)
        assert index.search("石猴", k=3, owner="bob").passages
        assert start_sample_ingest(index, sample) is None  # everyone sees it: nothing to do
    finally:
        index.close()
