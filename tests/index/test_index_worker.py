"""The embedding worker against an in-memory vector store: cancel, resume, failure, and the status
that another index (standing in for another process) reads from the progress file."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from conftest import make_settings
from index_fakes import BigramEmbedder, MemoryVectors, write_book

from rag.errors import IndexError_
from rag.index import BookIndex, IndexConfig
from rag.index.catalog import Catalog, StoredBook, plan_book
from rag.index.loaders import load_book
from rag.index.progress import Heartbeat, VectorProgress
from rag.index.worker import EmbeddingWorker, title_pieces

SPACE = "bigram64"


def stored_book(tmp_path: Path, chapters: int = 4) -> tuple[Catalog, StoredBook]:
    path = write_book(tmp_path / "book.txt", chapters=chapters)
    catalog = Catalog(tmp_path / "keyword")
    return catalog, catalog.write(*plan_book(load_book(path), path, 200, 40, 64))


def worker(catalog: Catalog, vectors: MemoryVectors, embedder: BigramEmbedder, batch: int = 2) -> EmbeddingWorker:
    return EmbeddingWorker(catalog, vectors, lambda: embedder, SPACE, IndexConfig(embed_batch=batch))


def test_cancel_keeps_what_was_stored_and_resume_embeds_only_the_rest(tmp_path: Path) -> None:
    catalog, book = stored_book(tmp_path)
    pieces = {c.piece_id(j) for c in book.chunks() for j in range(len(c.pieces))} | set(title_pieces(book))
    vectors, first = MemoryVectors(), BigramEmbedder(block_at=3)
    w1 = worker(catalog, vectors, first)
    stages: list[tuple[str, int]] = []
    w1.embed(book, [lambda stage, done, total, msg: stages.append((stage, done))])  # background
    assert first.reached.wait(10)
    assert w1.state(book).status == "embedding"
    running = catalog.read_progress(book.id, SPACE)
    assert running.worker is not None and running.worker.pid == os.getpid() and not running.complete

    w1.cancel(book.id, timeout=0)  # the third batch is in flight: it finishes, nothing after it
    first.resume.set()
    assert w1.wait(book, timeout=10) is False
    assert len(vectors.items) == 3 * 2 and set(vectors.items) <= pieces
    stopped = catalog.read_progress(book.id, SPACE)
    assert stopped.worker is None and not stopped.complete  # no heartbeat: resumable
    assert w1.state(book).status == "keyword_ready" and "ready" not in {s for s, _ in stages}
    w1.close()

    second = BigramEmbedder()
    w2 = worker(catalog, vectors, second)
    assert w2.state(book).status == "keyword_ready"
    w2.embed(book, [], background=False)
    assert w2.state(book).status == "ready" and w2.state(book).embedded == len(book.chunks())
    assert second.embedded == len(pieces) - 6  # stored vectors were reused
    assert set(vectors.items) == pieces
    assert catalog.read_progress(book.id, SPACE) == VectorProgress(True, len(book.chunks()), None)
    w2.close()


def test_progress_is_per_chapter_and_a_foreground_call_joins_a_running_job(tmp_path: Path) -> None:
    catalog, book = stored_book(tmp_path)
    embedder = BigramEmbedder(block_at=1)
    w = worker(catalog, MemoryVectors(), embedder, batch=4)
    seen: list[tuple[str, int, int, str]] = []
    w.embed(book, [lambda *a: seen.append(a)])
    assert embedder.reached.wait(10)
    embedder.resume.set()
    later: list[str] = []
    w.embed(book, [lambda stage, *_: later.append(stage)], background=False)  # waits for the same job
    assert w.state(book).status == "ready"
    embedding = [s for s in seen if s[0] == "embedding"]
    assert [s[3] for s in embedding] == ["starting"] + [c.title for c in book.manifest.chapters]
    assert embedding[-1][1] == embedding[-1][2] == len(book.chunks()) and seen[-1][0] == "ready"
    assert later[-1] == "ready"  # the joined callback heard the end too
    w.close()


def test_a_failing_embedder_is_an_error_state_and_a_retry_recovers(tmp_path: Path) -> None:
    catalog, book = stored_book(tmp_path)
    vectors = MemoryVectors()
    w = worker(catalog, vectors, BigramEmbedder(fail_at=2))
    errors: list[str] = []
    w.embed(book, [lambda stage, done, total, msg: errors.append(msg) if stage == "error" else None],
            background=False)
    state = w.state(book)
    assert state.status == "error" and "embedder exploded" in (state.error or "") and errors == [state.error]
    assert catalog.read_progress(book.id, SPACE).worker is None
    w.embed(book, [], background=False)  # a retry (the embedder fails only once)
    assert w.state(book).status == "ready"
    w.close()


def test_another_index_sees_embedding_follows_it_and_leaves_the_book_to_it(tmp_path: Path) -> None:
    settings = make_settings(data_dir=tmp_path / "data", embedding_batch_size=2)
    path = write_book(tmp_path / "book.txt")
    vectors = MemoryVectors()  # the store both "processes" share
    busy = BigramEmbedder(block_at=2)
    app = BookIndex(settings, embedder=busy, vectors=vectors)
    cli = BookIndex(settings, embedder=BigramEmbedder(), vectors=vectors)
    try:
        info = app.ingest(path)  # background
        assert busy.reached.wait(10)
        assert [(b.id, b.status) for b in cli.books()] == [(info.id, "embedding")]
        assert cli.resume_embedding() == []  # somebody is on it
        assert cli.wait_until_embedded(info.id, timeout=0.1) is False
        busy.resume.set()
        assert cli.wait_until_embedded(info.id, timeout=30) is True  # followed through the file
        assert cli.book(info.id).status == "ready" and cli.book(info.id).embedded == info.chunks
        assert [p.source for p in cli.retrieve("青龙出山", k=3, mode="vector")] == ["vector"] * 3
    finally:
        busy.resume.set()
        app.close()
        cli.close()


def test_a_stale_heartbeat_reads_as_resumable(tmp_path: Path) -> None:
    settings = make_settings(data_dir=tmp_path / "data")
    index = BookIndex(settings, embedder=BigramEmbedder(), vectors=MemoryVectors(),
                      config=IndexConfig(heartbeat_stale_seconds=60))
    try:
        info = index.ingest(write_book(tmp_path / "book.txt"), embed=False)
        catalog = Catalog(Path(settings.keyword_dir))
        catalog.write_progress(info.id, SPACE, VectorProgress(False, 2, Heartbeat(os.getpid(), socket.gethostname(),
                                                                                  time.time() - 3600)))
        assert index.book(info.id).status == "keyword_ready" and index.book(info.id).embedded == 2
        catalog.write_progress(info.id, SPACE, VectorProgress(False, 2, Heartbeat.now()))
        assert index.book(info.id).status == "embedding"  # fresh: another process is at it
        assert index.resume_embedding() == []
        catalog.write_progress(info.id, SPACE, VectorProgress(False, 2, Heartbeat(os.getpid(), "h", 0.0)))
        assert index.resume_embedding(background=False) == [info.id]
        assert index.book(info.id).status == "ready"
    finally:
        index.close()


def test_closed_index_refuses_new_books(tmp_path: Path) -> None:
    index = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors())
    index.close()
    with pytest.raises(IndexError_, match="closed"):
        index.ingest(write_book(tmp_path / "book.txt"))
