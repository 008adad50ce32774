"""Fault suite (issue 22), a damaged book directory: each of its files is corrupted in turn and the
index opened again. A damaged book is listed with the reason, never hidden; what its parts allow
is repaired (the keyword index rebuilt from the chunks, a manifest rebuilt from the chunks); and
the log names the book's side, not the vector store's. Real index (Chroma on disk + BM25, the hash
embedder), embedded in full before the damage."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index

from rag.i18n import text

MONKEY = [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 30),
          ("第二回 学艺", "石猴拜师学艺，得名孙悟空，学会七十二变。" * 30)]
FAN = [("第一回 火焰山", "火焰山八百里火焰，须借铁扇公主的芭蕉扇才能过去。" * 30),
       ("第二回 借扇", "悟空三借芭蕉扇，终于扇灭了火焰。" * 30)]


@pytest.fixture
def library(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Any:
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    monkey = index.ingest(make_epub(tmp_path / "monkey.epub", MONKEY, title="石猴传"), background=False)
    fan = index.ingest(make_epub(tmp_path / "fan.epub", FAN, title="芭蕉扇"), background=False)
    index.close()
    caplog.set_level(logging.INFO)
    return settings, monkey.id, fan.id


def reopened(tmp_path: Path, settings: Any) -> Any:
    return make_index(tmp_path, settings)


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records)


def test_a_corrupt_keyword_index_is_rebuilt_from_the_chunks(tmp_path, library, caplog) -> None:
    settings, monkey, _ = library
    files = [f for f in (settings.keyword_dir / monkey / "bm25").iterdir() if f.is_file()]
    assert files
    for f in files:
        f.write_bytes(b"\x00garbage" * 10)
    index = reopened(tmp_path, settings)
    try:
        book = index.book(monkey)
        assert book.status == "ready" and book.error is None
        found = index.retrieve("仙石 石猴", k=3, book_id=monkey, mode="keyword")
        # before: 0 passages, and the log blamed the vector store
        assert found and "仙石迸裂" in found[0].text
        assert index.retrieve("仙石 石猴", k=3, book_id=monkey)
    finally:
        index.close()
    log = logged(caplog)
    assert f"the keyword index of book {monkey} is unreadable" in log and "vector search failed" not in log
    caplog.clear()
    again = reopened(tmp_path, settings)  # rebuilt on disk: no warning the next time
    try:
        assert again.retrieve("仙石 石猴", k=3, book_id=monkey, mode="keyword")
    finally:
        again.close()
    assert "unreadable" not in logged(caplog)


def test_unreadable_chunks_are_listed_as_damaged_and_the_other_books_answer(tmp_path, library, caplog) -> None:
    settings, monkey, fan = library
    (settings.keyword_dir / monkey / "chunks.jsonl").write_bytes(b"\xff\xfe not json at all\n{broken\n")
    index = reopened(tmp_path, settings)
    try:
        listed = {b.id: b for b in index.books()}
        assert set(listed) == {monkey, fan}
        damaged = listed[monkey]  # before: "ready", with no word of the damage
        assert damaged.status == "error" and "chunks.jsonl" in text("en", damaged.error)
        assert "文本" in text("zh", damaged.error) or "chunks.jsonl" in text("zh", damaged.error)
        outcome = index.search("芭蕉扇 火焰山", k=3)
        assert outcome.passages and all(p.book_id == fan for p in outcome.passages)
        assert any("石猴传" in text("en", n) and "was not searched" in text("en", n) for n in outcome.notes)
    finally:
        index.close()
    log = logged(caplog)
    assert f"book {monkey} is damaged" in log and "vector search failed" not in log


def test_a_few_broken_chunk_lines_leave_the_rest_searchable(tmp_path, library, caplog) -> None:
    settings, monkey, _ = library
    path = settings.keyword_dir / monkey / "chunks.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 3
    lines[0] = lines[0][: len(lines[0]) // 2]  # a torn first line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = reopened(tmp_path, settings)
    try:
        book = index.book(monkey)
        assert book.error is not None and "1 lines of its chunks are unreadable" in text("en", book.error)
        found = index.retrieve("七十二变 孙悟空", k=3, book_id=monkey)
        assert found and "七十二变" in found[0].text  # before: nothing of the book was searched
    finally:
        index.close()


def test_a_corrupt_manifest_is_rebuilt_and_the_book_stays_listed(tmp_path, library, caplog) -> None:
    settings, monkey, _ = library
    for name in ("manifest.json", "manifest.bak.json"):  # and its backup copy (tests/faults/test_store_manifest.py)
        (settings.keyword_dir / monkey / name).write_text("{not json", encoding="utf-8")
    index = reopened(tmp_path, settings)
    try:
        listed = {b.id: b for b in index.books()}  # before: the book vanished, a log warning only
        assert monkey in listed
        book = listed[monkey]
        assert book.chapters == 2 and book.chunks > 0 and "rebuilt from its chunks" in text("en", book.error)
        assert "重建" in text("zh", book.error)
        assert index.retrieve("仙石 石猴", k=3, book_id=monkey)
        assert monkey not in {b.id for b in index.books(owner="visitor")}  # whose it was is unknown
    finally:
        index.close()
    saved = json.loads((settings.keyword_dir / monkey / "manifest.json").read_text(encoding="utf-8"))
    assert saved["rebuilt"] is True and saved["id"] == monkey
    assert f"the manifest of book {monkey} is unreadable" in logged(caplog)
