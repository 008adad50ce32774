"""The book index on a real on-disk Chroma store, with a deterministic fake embedder, on books built
from the sample guide (tests/fixtures_index/books.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fixtures_index.books import guide_chapters, make_epub, settings
from fixtures_index.embedders import GatedEmbedder, HashEmbedder

from rag.errors import BookError
from rag.index import BookIndex, IndexConfig, open_index
from rag.index.keyword import KeywordIndex
from rag.schemas import Passage, Retriever

MASTER = "谁在灵台方寸山、斜月三星洞拜须菩提祖师为师？"  # 第一回; some of its words are in other chapters


@pytest.fixture()
def epub(tmp_path: Path) -> Path:
    return make_epub(tmp_path / "guide.epub", guide_chapters(1, 10))


@pytest.fixture()
def index(tmp_path: Path):
    idx = open_index(settings(tmp_path), embedder=HashEmbedder())
    yield idx
    idx.close()


def test_ingest_then_retrieve_in_every_mode(index: BookIndex, epub: Path) -> None:
    stages: list[str] = []
    info = index.ingest(epub, progress=lambda stage, done, total, msg: stages.append(stage), background=False)
    assert info.status == "ready" and info.embedded == info.chunks > 15 and info.chapters == 10
    assert info.title == "西游记导读选段" and info.source == "guide.epub"
    assert stages[0] == "reading" and "keyword" in stages and "embedding" in stages and stages[-1] == "ready"
    assert isinstance(index, Retriever)
    for mode in ("keyword", "vector", "hybrid"):
        passages = index.retrieve(MASTER, k=4, mode=mode)
        assert len(passages) == 4 and all(isinstance(p, Passage) for p in passages)
        assert passages[0].chapter_num == 1, mode
        top = passages[0]
        assert "斜月三星洞" in top.text or mode == "vector"
        assert top.book_id == info.id and top.book_title == "西游记导读选段"
        assert top.chapter_title == "第一回 石猴出世与大闹天宫"
        assert top.end - top.start == len(top.text) <= index.config.context_chars  # the hit and its neighbours
        assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    assert {p.source for p in index.retrieve("灵台方寸山", k=6, mode="keyword")} == {"keyword"}
    assert {p.source for p in index.retrieve("灵台方寸山", k=6, mode="vector")} == {"vector"}
    hybrid = index.retrieve(MASTER, k=6)  # settings default: hybrid
    assert "hybrid" in {p.source for p in hybrid}
    assert len(index.retrieve("灵台方寸山")) == 6  # settings default k
    assert index.retrieve("   ") == []


def test_keyword_search_works_while_embedding_and_hybrid_switches_on_when_done(tmp_path: Path, epub: Path) -> None:
    embedder = GatedEmbedder()
    index = open_index(settings(tmp_path), embedder=embedder)
    try:
        progress: list[tuple[str, int, int, str]] = []
        info = index.ingest(epub, progress=lambda *a: progress.append(a))  # background
        assert info.status == "embedding" and info.embedded == 0
        assert embedder.started.wait(10)
        passages = index.retrieve(MASTER, k=3)  # hybrid requested
        assert passages and {p.source for p in passages} == {"keyword"}  # degraded to keyword
        assert passages[0].chapter_num == 1
        assert index.books()[0].status == "embedding"
        assert index.wait_until_embedded(info.id, timeout=0.2) is False
        embedder.gate.set()
        assert index.wait_until_embedded(info.id, timeout=30) is True
        assert index.books()[0].status == "ready" and index.books()[0].embedded == info.chunks
        assert "hybrid" in {p.source for p in index.retrieve(MASTER, k=6)}
        embedding = [p for p in progress if p[0] == "embedding"]
        # progress chapter by chapter, in order, ending at the total
        assert [p[3] for p in embedding[1:]] == [t for t, _ in guide_chapters(1, 10)]
        assert embedding[-1][1] == embedding[-1][2] == info.chunks
        assert progress[-1][0] == "ready"
    finally:
        embedder.gate.set()
        index.close()


def test_reingest_is_a_no_op_and_reopen_is_cheap(tmp_path: Path, epub: Path) -> None:
    embedder = HashEmbedder()
    index = open_index(settings(tmp_path), embedder=embedder)
    first = index.ingest(epub, background=False)
    calls = embedder.embedded
    assert calls == sum(1 for c in index.iter_chunks(first.id) for _ in c["pieces"]) + first.chapters  # + titles
    again = index.ingest(epub, background=False)
    assert again.id == first.id and embedder.embedded == calls  # nothing embedded again
    copy = epub.with_name("renamed.epub")
    copy.write_bytes(epub.read_bytes())
    assert index.ingest(copy, background=False).id == first.id  # same content, same book
    assert len(index.books()) == 1
    index.close()

    reopened = BookIndex(settings(tmp_path), embedder=HashEmbedder())
    try:
        books = reopened.books()
        assert [(b.id, b.status, b.embedded) for b in books] == [(first.id, "ready", first.chunks)]
        # the keyword side's best hit keeps a place after the fused best and the vector side's best (the
        # hash embedder's ranking is noise)
        assert 1 in [p.chapter_num for p in reopened.retrieve("斜月三星洞", k=3, mode="hybrid")]
    finally:
        reopened.close()


def test_several_books_and_scoped_retrieval(index: BookIndex, tmp_path: Path) -> None:
    a = index.ingest(make_epub(tmp_path / "a.epub", guide_chapters(1, 2), title="甲"), background=False)
    b = index.ingest(make_epub(tmp_path / "b.epub", guide_chapters(4, 5), title="乙"), background=False)
    assert {x.title for x in index.books()} == {"甲", "乙"}
    everywhere = index.retrieve("白骨夫人 贬书", k=5, mode="keyword")
    assert everywhere[0].book_id == b.id and everywhere[0].chapter_num == 4
    assert b.id in {p.book_id for p in index.retrieve("白骨夫人 贬书", k=2)}
    only_a = index.retrieve("白骨夫人 贬书", k=5, book_id=a.id)
    assert only_a and {p.book_id for p in only_a} == {a.id}
    for mode in ("vector", "keyword"):
        assert {p.book_id for p in index.retrieve("美猴王", k=5, book_id=a.id, mode=mode)} == {a.id}
    with pytest.raises(BookError, match="no book with id"):
        index.retrieve("x", book_id="missing")
    assert index.find_book("乙").id == b.id and index.find_book(a.id[:6]).id == a.id
    assert index.find_book("丙") is None

    index.delete_book(a.id)
    assert [x.id for x in index.books()] == [b.id]
    assert {p.book_id for p in index.retrieve("美猴王", k=8, mode="vector")} == {b.id}
    collection = index._chroma()
    assert collection.get(where={"book_id": a.id}, include=[])["ids"] == []  # vectors gone too
    assert not (Path(index.settings.keyword_dir) / a.id).exists()


def test_crash_mid_ingest_leaves_previous_index_usable(tmp_path: Path, epub: Path, monkeypatch) -> None:
    index = open_index(settings(tmp_path), embedder=HashEmbedder())
    first = index.ingest(epub, background=False)
    other = make_epub(tmp_path / "other.epub", guide_chapters(6, 7), title="另一本")

    def boom(*args, **kwargs):
        raise KeyboardInterrupt("upload cancelled")  # like a cancelled upload or a kill

    monkeypatch.setattr(KeywordIndex, "build", boom)
    with pytest.raises(KeyboardInterrupt):
        index.ingest(other)
    monkeypatch.undo()
    assert [b.id for b in index.books()] == [first.id]
    assert 1 in [p.chapter_num for p in index.retrieve("斜月三星洞", k=3)]
    keyword_dir = Path(index.settings.keyword_dir)
    assert sorted(p.name for p in keyword_dir.iterdir()) == [first.id]  # no half-written book left
    index.close()
    # a new process sees the same thing, and can add the book afterwards
    index = open_index(settings(tmp_path), embedder=HashEmbedder())
    assert [b.id for b in index.books()] == [first.id]
    assert index.ingest(other, background=False).status == "ready"
    assert len(index.books()) == 2
    index.close()


def test_leftover_temporary_directories_are_ignored_and_cleaned(tmp_path: Path, epub: Path) -> None:
    s = settings(tmp_path)
    index = open_index(s, embedder=HashEmbedder())
    info = index.ingest(epub, background=False)
    index.close()
    stale = Path(s.keyword_dir) / f".tmp-{info.id}-deadbeef"
    stale.mkdir()
    (stale / "chunks.jsonl").write_text("{broken", encoding="utf-8")
    import os

    os.utime(stale, (0, 0))  # old
    fresh = Path(s.keyword_dir) / "garbage"
    fresh.mkdir()  # a directory without a manifest is not a book
    index = open_index(s, embedder=HashEmbedder())
    assert [b.id for b in index.books()] == [info.id]
    assert not stale.exists()
    index.close()


def test_embedding_stops_on_close_and_resumes_without_redoing_work(tmp_path: Path, epub: Path) -> None:
    embedder = GatedEmbedder(pause_at=3)
    index = open_index(settings(tmp_path, embedding_batch_size=4), embedder=embedder)
    info = index.ingest(epub)
    embedder.gate.set()
    # two batches through, the third in progress: close mid-way
    assert embedder.paused.wait(30)
    closer = threading.Thread(target=index.close)
    closer.start()
    closer.join(timeout=0.5)  # close() cancels at once, then waits for the worker held by the embedder
    embedder.resume.set()
    closer.join(timeout=60)
    assert not closer.is_alive()
    done_before = embedder.embedded
    assert 0 < done_before < sum(len(c["pieces"]) for c in index.iter_chunks(info.id)) + info.chapters
    state = json.loads((Path(index.settings.keyword_dir) / info.id / "vectors.json").read_text())
    assert state["hash64"]["complete"] is False

    second = HashEmbedder()
    index = open_index(settings(tmp_path, embedding_batch_size=4), embedder=second)
    book = index.books()[0]
    assert book.status == "keyword_ready" and book.embedded < book.chunks
    assert index.retrieve("斜月三星洞", k=2)[0].source == "keyword"  # still searchable
    assert index.resume_embedding() == [info.id]
    assert index.wait_until_embedded(info.id, timeout=60)
    total_pieces = sum(len(c["pieces"]) for c in index.iter_chunks(info.id)) + book.chapters  # + chapter titles
    assert second.embedded + done_before >= total_pieces
    assert second.embedded < total_pieces  # stored vectors were reused
    assert index.books()[0].status == "ready"
    index.close()


def test_embedder_failure_is_reported_and_keyword_search_still_works(tmp_path: Path, epub: Path) -> None:
    embedder = GatedEmbedder(fail_after=1)
    embedder.gate.set()
    index = open_index(settings(tmp_path), embedder=embedder)
    try:
        seen: list[str] = []
        info = index.ingest(epub, progress=lambda stage, *_: seen.append(stage))
        assert index.wait_until_embedded(info.id, timeout=30) is False
        book = index.books()[0]
        assert book.status == "error" and "embedder exploded" in (book.error or "")
        assert "error" in seen
        assert index.retrieve("斜月三星洞", k=1)[0].chapter_num == 1
    finally:
        index.close()


def test_changed_chunk_settings_rebuild_the_book(tmp_path: Path, epub: Path) -> None:
    index = open_index(settings(tmp_path, chunk_size=500), embedder=HashEmbedder())
    first = index.ingest(epub, background=False)
    index.close()
    index = open_index(settings(tmp_path, chunk_size=300, chunk_overlap=40), embedder=HashEmbedder(),
                       config=IndexConfig(neighbours=0))  # passages of one chunk
    second = index.ingest(epub, background=False)
    assert second.id == first.id and second.chunks > first.chunks
    ids = set(index._chroma().get(where={"book_id": first.id}, include=[])["ids"])
    wanted = {f"{c['id']}:{j}" for c in index.iter_chunks(first.id) for j in range(len(c["pieces"]))}
    wanted |= {f"{first.id}-title-{i}" for i in range(first.chapters)}  # chapter titles stay
    assert ids == wanted  # old vectors were replaced, none left over
    assert all(len(p.text) <= 300 for p in index.retrieve("斜月三星洞", k=5))
    index.close()


def test_bad_book_raises_and_changes_nothing(index: BookIndex, epub: Path, tmp_path: Path) -> None:
    index.ingest(epub, background=False)
    bad = tmp_path / "bad.epub"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(BookError, match="not a ZIP"):
        index.ingest(bad)
    big = tmp_path / "big.txt"
    big.write_bytes("书".encode() * 400_000)
    small = open_index(settings(tmp_path, max_book_mb=1), embedder=HashEmbedder())
    with pytest.raises(BookError, match="the limit is 1 MB"):
        small.ingest(big)
    small.close()
    assert len(index.books()) == 1


def test_cli_ingest_books_search(tmp_path: Path, epub: Path, capsys, monkeypatch) -> None:
    import argparse
    import io

    from rag.index import cli

    parser = argparse.ArgumentParser()
    cli.add_commands(parser.add_subparsers(dest="command"), open_index=lambda s: open_index(s, embedder=HashEmbedder()))
    s = settings(tmp_path)

    def run(*argv: str) -> tuple[int, str, str]:
        args = parser.parse_args(list(argv))
        out, err = io.StringIO(), io.StringIO()
        code = args.func(args, s, out, err)
        return code, out.getvalue(), err.getvalue()

    code, out, err = run("ingest", str(epub), "--name", "测试书")
    assert code == 0 and "测试书" in out and "status ready" in out and "embedding" in err
    code, out, _ = run("books")
    assert code == 0 and "测试书" in out and "ready" in out
    code, out, _ = run("search", MASTER, "-k", "2", "--mode", "keyword")
    assert code == 0 and out.startswith("1. 测试书 · ") and "[found by keyword; keyword score " in out and "第一回" in out and out.count("\n") == 4
    code, out, _ = run("search", "斜月三星洞", "--book", "测试书")
    assert code == 0 and "测试书" in out
    code, _, err = run("search", "x", "--book", "nothing")
    assert code == 1 and "no book matches" in err
    code, _, err = run("ingest", str(tmp_path / "missing.epub"))
    assert code == 1 and "file not found" in err


class _Recorder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_passages(self, texts: list[str]):
        self.texts.extend(texts)
        return super().embed_passages(texts)


def test_pieces_are_embedded_without_punctuation_unless_switched_off(tmp_path: Path, epub: Path, monkeypatch) -> None:
    recorder = _Recorder()
    index = open_index(settings(tmp_path), embedder=recorder)
    info = index.ingest(epub, background=False)
    assert recorder.texts and not any("，" in t or "。" in t or "\n" in t for t in recorder.texts)
    assert index._chroma().name == "enough_rag_hash64"
    index.close()

    raw = _Recorder()
    index = open_index(settings(tmp_path), embedder=raw, config=IndexConfig(strip_punctuation=False))
    assert index.books()[0].status == "keyword_ready"  # another vector space: not embedded there yet
    index.resume_embedding(info.id, background=False)
    assert index._chroma().name == "enough_rag_hash64_punct"
    assert any("，" in t for t in raw.texts) and len(raw.texts) == len(recorder.texts)
    assert index.books()[0].status == "ready"
    index.close()


def test_a_new_chroma_store_opened_from_several_threads_at_once_opens_once(tmp_path: Path) -> None:
    """A question searched while a new book starts embedding opens the store from two threads at once:
    Chroma's per-path shared system broke under that ("Could not connect to tenant default_tenant")."""
    from rag.index.vectors import ChromaVectors

    vectors = ChromaVectors(settings(tmp_path), "e5blas", HashEmbedder)
    barrier = threading.Barrier(6)
    opened: list[object] = []
    errors: list[Exception] = []

    def open_it() -> None:
        barrier.wait()
        try:
            opened.append(vectors.collection())
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(opened) == 6 and len({id(c) for c in opened}) == 1
    assert vectors.stored_ids("nothing") == set()
