"""The onnxruntime engine for multilingual-e5-small (rag.index.e5onnx) against the numpy one: the same
vectors (so both share one index key), pause points between its runs, and how E5Embedder picks it."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest
from conftest import make_settings
from fixtures_index.books import ODD_TEXTS, guide_pieces

from rag.errors import ConfigError
from rag.index import E5Embedder
from rag.index import e5onnx as e5onnx_module
from rag.index.e5blas import E5Blas
from rag.index.e5onnx import E5Onnx
from rag.index.embeddings import make_embedder

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def engines() -> tuple[E5Blas, E5Onnx]:
    return E5Blas(), E5Onnx()


@pytest.fixture(scope="module")
def pieces() -> list[str]:
    return guide_pieces(30)


def test_the_same_vectors_as_the_numpy_engine(engines, pieces) -> None:
    numpy_engine, onnx_engine = engines
    long_text = "".join(pieces[:12])  # several 510-token windows
    texts = pieces + ODD_TEXTS + [long_text]
    for is_query in (False, True):
        a, b = numpy_engine.encode(texts, is_query), onnx_engine.encode(texts, is_query)
        assert a.shape == b.shape == (len(texts), 384) and b.dtype == np.float32
        assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
        assert (a * b).sum(axis=1).min() > 0.99999
    assert float(onnx_engine.query(pieces[0]) @ onnx_engine.query(pieces[1])) < 0.98  # not constant
    # padding inside a batch changes nothing: alone and batched with longer texts
    alone = np.stack([onnx_engine.passage(t) for t in pieces[:5]])
    assert np.allclose(alone, onnx_engine.passage(pieces[:5] + [long_text])[:5], atol=2e-5)


def test_a_pause_point_before_every_run(engines) -> None:
    _, onnx_engine = engines
    calls: list[int] = []
    segments = [[onnx_engine.bos, *range(5, 5 + n), onnx_engine.eos] for n in (300, 40, 100)]
    onnx_engine._forward(segments, pause=lambda: calls.append(1))  # noqa: SLF001
    rows = max(1, e5onnx_module.ROW_TOKENS // 302)  # the widest segment sets the rows per run
    assert len(calls) == onnx_engine.NL * -(-len(segments) // rows) == 36


def test_the_embedder_runs_onnx_by_default_and_numpy_when_asked_or_without_onnxruntime(monkeypatch, caplog) -> None:
    default = make_embedder(make_settings())
    assert isinstance(default, E5Embedder) and default.engine == "onnx"
    assert type(default._get()) is E5Onnx  # noqa: SLF001
    assert default._get().query_int8  # noqa: SLF001 - questions on the int8 copy by default
    numpy_one = make_embedder(make_settings(embed_engine="numpy"))
    assert type(numpy_one._get()) is E5Blas  # noqa: SLF001
    float32 = make_embedder(make_settings(embed_query_int8=False))
    assert not float32._get().query_int8  # noqa: SLF001
    assert np.allclose(float32.embed_query("孙悟空"), numpy_one.embed_query("孙悟空"), atol=1e-5)
    assert 0.98 < float(default.embed_query("孙悟空") @ numpy_one.embed_query("孙悟空")) < 0.99999
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` raises ImportError
    with caplog.at_level(logging.WARNING):
        fallback = E5Embedder()
        assert type(fallback._get()) is E5Blas  # noqa: SLF001
    assert "onnxruntime is not installed" in caplog.text
    with pytest.raises(ValueError, match="unknown e5 engine"):
        E5Embedder(engine="torch")
    with pytest.raises(ValueError):
        make_settings(embed_engine="torch")


def test_layers_that_do_not_load_are_a_clear_error_and_the_embedder_falls_back_to_numpy(monkeypatch, caplog) -> None:
    def broken(e5, i):
        raise RuntimeError("no such op")

    monkeypatch.setattr(e5onnx_module, "layer_model", broken)
    with pytest.raises(ConfigError, match="onnxruntime could not load the e5 layers.*no such op"):
        E5Onnx()
    # the embedder says so and runs the same model on numpy instead of failing the book
    with caplog.at_level(logging.WARNING):
        embedder = E5Embedder()
        assert type(embedder._get()) is E5Blas  # noqa: SLF001
        assert embedder.embed_query("孙悟空").shape == (384,)
    assert "could not load the e5 layers" in caplog.text
    with pytest.raises(ConfigError, match="not readable"):  # bad weights stay an error, whatever the engine
        E5Embedder(model_path="/nonexistent/e5.bin")._get()  # noqa: SLF001


def test_int8_columns_round_trip() -> None:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(64, 32)).astype(np.float32)
    w[:, 3] = 0.0  # an all-zero column must not divide by zero
    wq, scale = e5onnx_module._int8_columns(w)  # noqa: SLF001
    assert wq.dtype == np.int8 and scale.shape == (32,) and int(np.abs(wq).max()) == 127
    assert np.all(np.abs(wq.astype(np.float32) * scale - w) <= scale / 2 + 1e-7)
    assert not wq[:, 3].any()


def test_questions_on_int8_weights_rank_like_float32_and_passages_are_unchanged(engines, pieces) -> None:
    _, float32 = engines
    int8 = E5Onnx(query_int8=True)
    assert int8.query_int8 and not float32.query_int8
    passages = float32.encode(pieces, is_query=False)
    assert np.array_equal(int8.encode(pieces, is_query=False), passages)  # the index's vectors: the same
    questions = [p[:30] for p in pieces] + ["What does the guide say about the journey?", "孙悟空"]
    a, b = float32.encode(questions, is_query=True), int8.encode(questions, is_query=True)
    cosines = (a * b).sum(axis=1)
    assert cosines.min() > 0.98 and cosines.max() < 0.99999  # close, and really the int8 model
    same_best = (np.argmax(a[: len(pieces)] @ passages.T, axis=1) == np.argmax(b[: len(pieces)] @ passages.T, axis=1))
    assert same_best.mean() >= 0.9


def test_an_int8_model_that_does_not_load_leaves_questions_in_float32(monkeypatch, caplog, engines) -> None:
    def broken(e5):
        raise RuntimeError("no QAttention here")

    monkeypatch.setattr(e5onnx_module, "query_model_int8", broken)
    with caplog.at_level(logging.WARNING):
        engine = E5Onnx(query_int8=True)
    assert not engine.query_int8
    assert "could not load the int8 question model" in caplog.text and "no QAttention here" in caplog.text
    assert np.allclose(engine.query("孙悟空"), engines[1].query("孙悟空"), atol=1e-6)
