"""Faults, a full disk and what it leaves behind: an upload or an embedding that runs out of space
ends with one clear line in the visitor's language (not "OSError: 925431 requested and 798688
written" or Chroma's "InternalError: Error in compaction…"), and loses nothing; a vector store
left broken (a 0-byte ``index_metadata.pickle``) is noticed when it is opened and rebuilt from the
books' stored chunks, so after space is freed and the app restarted every book answers with hybrid
search again. The disk is filled by patching the write that fails (no tmpfs here); the store is
broken by truncating its files. Real index (Chroma on disk + BM25, the hash embedder)."""

from __future__ import annotations

import errno
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index
from fixtures_ui.pages import make_pages, new_session

from rag import errors as errors_module
from rag.agent.deps import Deps
from rag.i18n import Msg, text
from rag.index.keyword import KeywordIndex
from rag.index.vectors import ChromaVectors

MONKEY = [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 30),
          ("第二回 学艺", "石猴拜师学艺，得名孙悟空，学会七十二变。" * 30)]


def long_book(title: str, seed: str, days: int = 9000) -> list[tuple[str, str]]:
    """Chapters whose pieces all differ (Chroma writes its HNSW files, pickle included, past ~1,000 vectors)."""
    return [(f"第{n}回 {seed}{n}", "".join(f"{seed}第{n}回第{d}天走了{d * 7 + n}里路，遇见第{d % 13}座山。"
                                              for d in range(days // 3))) for n in range(1, 4)]


def restart_chroma() -> None:
    """What a new process would find: Chroma keeps each store it opened in memory for the process."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


@pytest.fixture
def space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    return make_settings(data_dir=tmp_path / "data")


def no_space(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def short_write(*args: Any, **kwargs: Any) -> None:
    raise OSError("925431 requested and 798688 written")  # numpy's words for it: no errno


@pytest.mark.parametrize("fault", [no_space, short_write])
def test_a_full_disk_during_an_upload_is_one_clear_line(tmp_path: Path, space: Any, fault: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    settings = space
    index = make_index(tmp_path, settings)
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    monkeypatch.setattr(KeywordIndex, "save", fault)
    monkeypatch.setattr(errors_module, "free_bytes", lambda path: 4096)  # what the disk has left
    try:
        for lang in ("en", "zh"):
            path = make_epub(tmp_path / f"monkey-{lang}.epub", MONKEY, title="石猴传")
            html = str(pages.books.on_upload(new_session(pages, lang), str(path), "__all__")[pages.layout.books.books_html])
            # before: "Could not index this book: OSError: [Errno 28] No space left on device" (or numpy's words)
            assert text(lang, Msg.of("index.disk_full")) in html, html
            assert "OSError" not in html and "Errno" not in html and "written" not in html
        assert index.books() == []
        assert not [p for p in settings.keyword_dir.iterdir() if p.name.startswith(".tmp-")]
    finally:
        index.close()


def test_a_full_disk_while_embedding_is_one_clear_line_and_resumes_after_a_restart(
        tmp_path: Path, space: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = space
    index = make_index(tmp_path, settings)
    real_upsert = ChromaVectors.upsert

    def compaction_fails(self: Any, *args: Any, **kwargs: Any) -> None:
        import chromadb.errors

        raise chromadb.errors.InternalError("Error in compaction: Failed to apply logs to the hnsw segment writer")

    with monkeypatch.context() as patch:
        patch.setattr(ChromaVectors, "upsert", compaction_fails)
        patch.setattr(errors_module, "free_bytes", lambda path: 0)
        try:
            info = index.ingest(make_epub(tmp_path / "monkey.epub", MONKEY, title="石猴传"))
            assert not index.wait_until_embedded(info.id, 30)
            book = index.book(info.id)
            # before: "InternalError: Error in compaction: …"
            assert book.status == "error" and isinstance(book.error, Msg), book.error
            for lang in ("en", "zh"):
                assert text(lang, Msg.of("index.disk_full")) in text(lang, book.error)
                assert "InternalError" not in text(lang, book.error)
            assert index.retrieve("仙石 石猴", k=3, mode="keyword")  # the book is still searchable
        finally:
            index.close()
    assert ChromaVectors.upsert is real_upsert
    again = make_index(tmp_path, settings)  # space freed, the app restarted
    try:
        assert again.resume_embedding(background=False) == [info.id]
        found = again.search("仙石 石猴", k=3, mode="hybrid")
        assert again.book(info.id).status == "ready" and found.passages and not found.notes
        assert any(p.source in ("hybrid", "vector") for p in found.passages)
    finally:
        again.close()


@pytest.mark.parametrize("damage", ["empty pickle", "segment gone"])
def test_a_broken_vector_store_is_rebuilt_from_the_chunks(tmp_path: Path, space: Any, damage: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    settings = space
    index = make_index(tmp_path, settings)
    try:
        ids = [index.ingest(make_epub(tmp_path / f"{name}.epub", long_book(name, seed), title=name),
                            background=False).id for name, seed in (("甲书", "悟空"), ("乙书", "八戒"))]
    finally:
        index.close()
    restart_chroma()
    pickles = list(Path(settings.chroma_dir).glob("*/index_metadata.pickle"))
    assert pickles, "Chroma wrote no HNSW pickle: the book is too small to test this"
    for pickle in pickles:
        if damage == "empty pickle":
            pickle.write_bytes(b"")  # what a full disk left in one of the runs
        else:
            shutil.rmtree(pickle.parent)
    caplog.set_level(logging.INFO)
    again = make_index(tmp_path, settings)  # space freed, the app restarted
    try:
        assert sorted(again.resume_embedding(background=False)) == sorted(ids)
        for book_id, words in zip(ids, ("悟空 走了 里路", "八戒 遇见 座山"), strict=True):
            assert again.book(book_id).status == "ready"
            found = again.search(words, k=3, book_id=book_id, mode="hybrid")
            # before: "vector search failed (InternalError: … Error deserializing pickle file …)", keywords only
            assert found.passages and not [n for n in found.notes if n.level != "info"], found.notes
            assert any(p.source in ("hybrid", "vector") for p in found.passages)
            assert again.search(words, k=3, book_id=book_id, mode="vector").passages
    finally:
        again.close()
    assert "the vector store" in caplog.text and "rebuilt from" in caplog.text


def test_a_search_on_a_full_disk_says_so_in_its_note(tmp_path: Path, space: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import chromadb.errors
    from chromadb.api.models.Collection import Collection

    settings = space
    index = make_index(tmp_path, settings)
    try:
        info = index.ingest(make_epub(tmp_path / "monkey.epub", MONKEY, title="石猴传"), background=False)
        assert index.book(info.id).status == "ready"

        def compaction_fails(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise chromadb.errors.InternalError("Error in compaction: Failed to apply logs to the hnsw segment writer")

        monkeypatch.setattr(Collection, "get", compaction_fails)
        monkeypatch.setattr(Collection, "query", compaction_fails)
        monkeypatch.setattr(errors_module, "free_bytes", lambda path: 0)
        found = index.search("仙石 石猴", k=3, mode="hybrid")
        assert found.passages  # keywords still answer
        notes = " ".join(text("en", n) for n in found.notes)
        # before: "vector search failed (InternalError: Error in compaction: …)"
        assert text("en", Msg.of("index.disk_full")) in notes and "InternalError" not in notes, notes
    finally:
        monkeypatch.undo()
        index.close()
