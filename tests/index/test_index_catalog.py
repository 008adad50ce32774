"""The catalog on its own: book directories on disk, typed manifest and chunks, progress file.
No Chroma, no threads."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from index_fakes import write_book

from rag.index.catalog import (
    INDEX_VERSION,
    Catalog,
    ChapterEntry,
    Manifest,
    StoredBook,
    book_id_of,
    plan_book,
)
from rag.index.chunking import Chunk
from rag.index.loaders import load_book
from rag.index.progress import Heartbeat, VectorProgress


def planned(tmp_path: Path, chunk_size: int = 200, chapters: int = 3) -> tuple[Manifest, list[Chunk]]:
    path = write_book(tmp_path / f"book{chapters}.txt", chapters=chapters)
    return plan_book(load_book(path), path, chunk_size, 40, 64)


def test_typed_round_trip(tmp_path: Path) -> None:
    manifest, chunks = planned(tmp_path)
    assert manifest.chapters[0] == ChapterEntry(1, "第一回 青龙出山", manifest.chapters[0].chars)
    assert manifest.chunks == len(chunks) > 6 and manifest.pieces == sum(len(c.pieces) for c in chunks)
    written = Catalog(tmp_path / "keyword").write(manifest, chunks)
    assert written.directory == tmp_path / "keyword" / manifest.id

    book = Catalog(tmp_path / "keyword").books()[manifest.id]  # a fresh catalog reads it back
    assert isinstance(book, StoredBook) and book.manifest == manifest
    assert book.chunks() == chunks and all(isinstance(c, Chunk) for c in book.chunks())
    assert all(isinstance(p, tuple) for c in book.chunks() for p in c.pieces)
    assert book.position(chunks[5].id) == 5 and book.position("nope") is None
    first = chunks[0]
    assert first.piece_text(0) == first.text[: first.pieces[0][1] - first.start]
    top = book.keyword().top("朱雀", 3)
    assert top and all(chunks[pos].chapter_num == 3 for pos, _ in top)


def test_manifest_written_by_the_previous_store_still_reads(tmp_path: Path) -> None:
    manifest, chunks = planned(tmp_path)
    Catalog(tmp_path / "keyword").write(manifest, chunks)
    path = tmp_path / "keyword" / manifest.id / "manifest.json"
    old = {  # the dict the untyped store wrote (key order, no defaults)
        "version": 1, "id": manifest.id, "title": manifest.title, "source": manifest.source,
        "path": manifest.path, "format": "txt", "chars": manifest.chars,
        "chapters": [{"num": c.num, "title": c.title, "chars": c.chars} for c in manifest.chapters],
        "chunks": manifest.chunks, "pieces": manifest.pieces, "created": manifest.created,
        "chunk_size": 200, "chunk_overlap": 40, "piece_chars": 64,
    }
    path.write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    reread = Catalog(tmp_path / "keyword").get(manifest.id)
    assert reread.manifest == replace(manifest, keyword=1, lang="")  # titles not indexed, language unknown
    assert reread.lang() == manifest.lang == "zh"  # read off the chunks
    with pytest.raises(ValueError, match="index version"):
        Manifest.from_json({**old, "version": INDEX_VERSION + 1})
    with pytest.raises(ValueError, match="malformed"):
        Manifest.from_json({k: v for k, v in old.items() if k != "chapters"})


def test_a_crash_mid_write_leaves_the_old_book(tmp_path: Path) -> None:
    root = tmp_path / "keyword"
    manifest, chunks = planned(tmp_path, chunk_size=200)
    Catalog(root).write(manifest, chunks)
    rechunked, more = planned(tmp_path, chunk_size=120)  # same book, new chunk settings
    assert rechunked.id == manifest.id and len(more) > len(chunks)

    def killed(texts: list[str]):
        raise KeyboardInterrupt("killed while building the keyword index")

    with pytest.raises(KeyboardInterrupt):
        Catalog(root, build_keyword=killed).write(rechunked, more)
    assert [p.name for p in root.iterdir()] == [manifest.id]  # no temporary directory left
    book = Catalog(root).get(manifest.id)
    assert book.manifest.chunk_size == 200 and book.chunks() == chunks
    assert book.keyword().top("青龙", 1)

    other, other_chunks = planned(tmp_path, chapters=2)  # a new book: nothing of it stays
    other = Manifest(**{**other.__dict__, "id": "0123456789ab"})
    with pytest.raises(KeyboardInterrupt):
        Catalog(root, build_keyword=killed).write(other, other_chunks)
    assert list(Catalog(root).books()) == [manifest.id]

    swapped = Catalog(root).write(rechunked, more)  # and the real rewrite replaces it in one step
    assert Catalog(root).get(manifest.id).manifest.chunk_size == 120 and swapped.chunks() == more
    assert [p.name for p in root.iterdir()] == [manifest.id]


def test_stale_temporary_directories_are_cleaned_and_odd_ones_ignored(tmp_path: Path) -> None:
    root = tmp_path / "keyword"
    manifest, chunks = planned(tmp_path)
    Catalog(root).write(manifest, chunks)
    stale, fresh = root / f".tmp-{manifest.id}-deadbeef", root / f".tmp-{manifest.id}-cafecafe"
    for leftover in (stale, fresh):
        leftover.mkdir()
        (leftover / "chunks.jsonl").write_text("{broken", encoding="utf-8")
    os.utime(stale, (0, 0))
    (root / "garbage").mkdir()  # no manifest
    moved = root / "0123456789ab"  # a manifest that names another book
    moved.mkdir()
    (moved / "manifest.json").write_text((root / manifest.id / "manifest.json").read_text(), encoding="utf-8")

    assert list(Catalog(root, stale_tmp_seconds=600).books()) == [manifest.id]
    assert not stale.exists() and fresh.exists()  # a write in progress elsewhere is left alone


def test_remove_and_books_in_creation_order(tmp_path: Path) -> None:
    root = tmp_path / "keyword"
    catalog = Catalog(root)
    a, a_chunks = planned(tmp_path, chapters=2)
    b, b_chunks = planned(tmp_path, chapters=3)
    catalog.write(b, b_chunks)
    catalog.write(a, a_chunks)  # planned first, written last: created earlier
    assert list(Catalog(root).books()) == [a.id, b.id]
    catalog.remove(a.id)
    assert list(catalog.books()) == [b.id] and not (root / a.id).exists()
    assert list(Catalog(root).books()) == [b.id]
    assert book_id_of(load_book(write_book(tmp_path / "again.txt", chapters=3))) == b.id  # content, not name


def test_progress_file_keeps_each_vector_space(tmp_path: Path) -> None:
    root = tmp_path / "keyword"
    catalog = Catalog(root)
    manifest, chunks = planned(tmp_path)
    catalog.write(manifest, chunks)
    assert catalog.read_progress(manifest.id, "e5blas") == VectorProgress()
    beat = Heartbeat.now()
    catalog.write_progress(manifest.id, "e5blas", VectorProgress(False, 3, beat))
    catalog.write_progress(manifest.id, "e5blas_punct", VectorProgress(True, manifest.chunks))
    again = Catalog(root)
    assert again.read_progress(manifest.id, "e5blas") == VectorProgress(False, 3, beat)
    assert again.read_progress(manifest.id, "e5blas_punct") == VectorProgress(True, manifest.chunks, None)
    on_disk = json.loads((root / manifest.id / "vectors.json").read_text())
    assert on_disk["e5blas_punct"] == {"complete": True, "embedded": manifest.chunks}
    catalog.remove(manifest.id)
    catalog.write_progress(manifest.id, "e5blas", VectorProgress(True, 1))  # gone: nothing written
    assert not (root / manifest.id).exists()


def test_heartbeat_is_alive_only_while_fresh_and_its_process_runs() -> None:
    here = socket.gethostname()
    assert Heartbeat.now().alive(stale_after=60)
    assert not Heartbeat(os.getpid(), here, time.time() - 120).alive(stale_after=60)  # too old
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    dead = int(finished.stdout)
    assert not Heartbeat(dead, here, time.time()).alive(stale_after=60)  # that process has ended
    assert Heartbeat(dead, "another-host", time.time()).alive(stale_after=60)  # can't tell: trust the time


# -- issue 24: the book's author is kept and shown with its title


def test_the_author_is_kept_in_the_manifest_and_shown(tmp_path: Path) -> None:
    import io
    from argparse import Namespace

    from fixtures_index.embedders import HashEmbedder

    from rag.config import Settings
    from rag.index import open_index
    from rag.index.cli import cmd_books
    from rag.ui.render import render_books

    path = tmp_path / "mill.md"
    path.write_text("---\ntitle: The Quiet Mill\nauthor: Ann <b>Writer</b>\n---\n\n# Chapter 1\n\nThe mill was quiet "
                    "all winter long, and the river froze.\n\n# Chapter 2\n\nIn spring the wheel turned again.\n",
                    encoding="utf-8")
    manifest, chunks = plan_book(load_book(path), path, 200, 40, 64)
    assert manifest.author == "Ann <b>Writer</b>"
    book = Catalog(tmp_path / "data" / "keyword").write(manifest, chunks)
    assert Catalog(tmp_path / "data" / "keyword").get(book.id).manifest.author == "Ann <b>Writer</b>"
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    index = open_index(settings, embedder=HashEmbedder())
    try:
        info = index.book(book.id)
        assert info.author == "Ann <b>Writer</b>" and info.to_dict()["author"] == info.author
        html = render_books(index.books(), "en")
        assert 'The Quiet Mill <span class="book-author muted">· Ann &lt;b&gt;Writer&lt;/b&gt;</span>' in html
    finally:
        index.close()
    out = io.StringIO()
    assert cmd_books(Namespace(open_index=lambda s: open_index(s, embedder=HashEmbedder())), settings, out) == 0
    assert "The Quiet Mill · Ann <b>Writer</b> (mill.md)" in out.getvalue()


def test_a_book_indexed_before_authors_were_kept_gets_its_author_again(tmp_path: Path) -> None:
    from fixtures_index.embedders import HashEmbedder

    from rag.config import Settings
    from rag.index import open_index

    path = tmp_path / "mill.md"
    path.write_text("---\ntitle: Mill\nauthor: A. Writer\n---\n\n# Chapter 1\n\nThe mill was quiet all winter.\n",
                    encoding="utf-8")
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    index = open_index(settings, embedder=HashEmbedder())
    try:
        info = index.ingest(path, embed=False)
        manifest_file = Path(settings.keyword_dir) / info.id / "manifest.json"
        old = json.loads(manifest_file.read_text(encoding="utf-8"))
        del old["author"]  # as the store wrote it before
        manifest_file.write_text(json.dumps(old), encoding="utf-8")
    finally:
        index.close()
    index = open_index(settings, embedder=HashEmbedder())
    try:
        assert index.book(info.id).author == ""
        assert index.ingest(path, embed=False).author == "A. Writer"
        assert json.loads(manifest_file.read_text(encoding="utf-8"))["author"] == "A. Writer"
    finally:
        index.close()


# -- issue 24: the language of the book's text is kept (the rewriter writes its queries in it)


def test_the_books_language_comes_from_its_text_and_old_manifests_read_it_off_their_chunks(tmp_path: Path) -> None:
    zh = tmp_path / "sanguoyanyi.txt"  # a latin file name and no title line: the title says nothing
    zh.write_text("第1章 宴桃园豪杰三结义\n\n" + "刘备、关羽、张飞三人于桃园结义，誓同生死。" * 30 + "\n", encoding="utf-8")
    en = tmp_path / "mill.txt"
    en.write_text("Chapter 1\n\n" + "The mill was quiet all winter long, and the river froze. " * 30 + "\n", encoding="utf-8")
    catalog = Catalog(tmp_path / "data" / "keyword")
    books = {}
    for path, lang in ((zh, "zh"), (en, "en")):
        manifest, chunks = plan_book(load_book(path), path, 200, 40, 64)
        assert manifest.lang == lang
        books[lang] = catalog.write(manifest, chunks)
        assert books[lang].info("ready", 0).lang == lang
    manifest_path = books["zh"].directory / "manifest.json"  # as written before the language was kept
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    del data["lang"]
    manifest_path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    reopened = Catalog(tmp_path / "data" / "keyword").get(books["zh"].id)
    assert reopened.manifest.lang == "" and reopened.lang() == "zh" and reopened.info("ready", 0).lang == "zh"
