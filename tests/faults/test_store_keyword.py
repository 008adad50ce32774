"""Faults, a book's keyword index on disk: its files are written and fsynced before the directory
is renamed into place (and the directory fsynced), so a crash cannot leave a complete-looking index
of zeroes; and an index that opens but finds nothing for its own text (arrays zeroed at the same
size) is noticed when the book is opened, rebuilt from the chunks and logged. Real index (Chroma on
disk + BM25, the hash embedder)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index

MONKEY = [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 30),
          ("第二回 学艺", "石猴拜师学艺，得名孙悟空，学会七十二变。" * 30),
          ("第三回 龙宫", "悟空到东海龙宫借兵器，取得如意金箍棒。" * 30)]


@pytest.fixture
def library(tmp_path: Path) -> Any:
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    info = index.ingest(make_epub(tmp_path / "monkey.epub", MONKEY, title="石猴传"), background=False)
    index.close()
    return settings, info.id


def zero_payload(npy: Path) -> None:
    """The array's bytes zeroed, its header and size kept (what a crash before the data reached the disk leaves)."""
    array = np.load(npy)
    size = npy.stat().st_size
    np.save(npy, np.zeros_like(array))
    assert npy.stat().st_size == size


@pytest.mark.parametrize("part", ["data", "indices", "indptr"])
def test_a_zeroed_keyword_index_is_noticed_rebuilt_and_logged(tmp_path: Path, library: Any, part: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    settings, book_id = library
    zero_payload(settings.keyword_dir / book_id / "bm25" / f"{part}.npy")
    caplog.set_level(logging.INFO)
    index = make_index(tmp_path, settings)
    try:
        # before: nothing found, and nothing logged
        for query, words in (("仙石 石猴", "仙石迸裂"), ("如意金箍棒", "金箍棒"), ("七十二变", "七十二变")):
            found = index.retrieve(query, k=3, book_id=book_id, mode="keyword")
            assert found and words in found[0].text, (query, found)
        assert index.book(book_id).status == "ready"
    finally:
        index.close()
    log = "\n".join(r.getMessage() for r in caplog.records)
    assert f"the keyword index of book {book_id} finds nothing for its own text" in log, log
    caplog.clear()
    again = make_index(tmp_path, settings)  # rebuilt on disk: quiet the next time
    try:
        assert again.retrieve("如意金箍棒", k=3, book_id=book_id, mode="keyword")
    finally:
        again.close()
    assert "finds nothing" not in "\n".join(r.getMessage() for r in caplog.records)


def test_keyword_files_are_fsynced_before_the_directory_is_renamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        events.append(("rename", str(src)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    try:
        info = index.ingest(make_epub(tmp_path / "monkey.epub", MONKEY, title="石猴传"), background=False, embed=False)
    finally:
        index.close()
    bm25 = settings.keyword_dir / info.id / "bm25"
    names = sorted(f.name for f in bm25.iterdir())
    assert "data.npy" in names and "rag_params.json" in names
    renamed = next(i for i, (kind, src) in enumerate(events) if kind == "rename" and Path(src).name.startswith(".tmp-"))
    synced = {Path(path).name for kind, path in events[:renamed] if kind == "fsync" and Path(path).parent.name == "bm25"}
    # before: only chunks.jsonl and manifest.json were fsynced; the .npy files and bm25/ were not
    assert set(names) <= synced, (names, synced)
    synced_dirs = {Path(path).name for kind, path in events[:renamed] if kind == "fsync"}
    assert "bm25" in synced_dirs


def test_a_healthy_index_passes_its_self_check() -> None:
    from rag.index.keyword import KeywordIndex

    texts = ["It is a truth universally acknowledged, that a single man in possession of a good fortune.",
             "什么什么为什么，怎么样？", "孙悟空 Monkey King 大闹天宫", "甲", ""]
    index = KeywordIndex.build(texts)
    assert index.finds_itself(list(enumerate(texts)))
    empty = KeywordIndex.build(["x"] * 3)
    empty._a.data[:] = 0  # the same index with its scores zeroed
    assert not empty.finds_itself([(0, "x"), (2, "x")])
