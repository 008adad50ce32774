"""Fault suite (issue 22), a public page (SPACE_ID set, or PUBLIC_PAGE=true): when the server's
model or its book store fails, what a visitor reads (the notices, the trace, the answer, the book
list) names the service, "the model endpoint" / "the book store", never LLM_BASE_URL's host, port
or path nor Chroma's directory; the server log keeps the detail. Real client against a closed
loopback port; the real index with its Chroma directory blocked by a file."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import numpy as np
import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import free_port, make_index

from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.agent.wiring import make_deps
from rag.errors import IndexError_
from rag.i18n import text
from rag.schemas import Passage
from rag.testing.fakes import FakeRetriever

PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]
PATH = "internal-gateway/v1"


@pytest.mark.parametrize("how", ["space", "setting"])
def test_a_failing_model_is_the_model_endpoint_to_visitors(monkeypatch, caplog, how: str) -> None:
    if how == "space":
        monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
        extra = {}
    else:
        monkeypatch.delenv("SPACE_ID", raising=False)
        extra = {"public_page": True}
    port = free_port()  # nothing listens there
    settings = make_settings(llm_base_url=f"http://127.0.0.1:{port}/{PATH}", llm_api_key="sk-test",
                             llm_model="m", llm_max_retries=0, search_provider="none", turn_timeout=20.0, **extra)
    assert settings.public_page is True
    caplog.set_level(logging.WARNING)
    graph = build_graph(make_deps(settings, index=FakeRetriever(PASSAGES)))
    final = list(run_turn(graph, "三打白骨精是第几回？", thread_id=uuid.uuid4().hex))[-1]
    assert isinstance(final, TurnFinished)
    seen = " ".join([final.answer, *(text(lang, n["msg"]) for n in final.values["notices"] for lang in ("en", "zh")),
                     repr(final.values.get("notices")), repr(final.values.get("evaluations"))])
    assert "the model endpoint could not be used" in seen, seen
    for leak in (str(port), PATH, "127.0.0.1"):  # before: "model call failed at http://127.0.0.1:…/internal-gateway/v1"
        assert leak not in seen, (leak, seen)
    log = "\n".join(r.getMessage() for r in caplog.records)
    assert f"127.0.0.1:{port}/{PATH}" in log  # the operator still learns where


def test_a_private_page_still_names_its_endpoint(monkeypatch) -> None:
    monkeypatch.delenv("SPACE_ID", raising=False)
    port = free_port()
    settings = make_settings(llm_base_url=f"http://127.0.0.1:{port}/{PATH}", llm_api_key="sk-test",
                             llm_model="m", llm_max_retries=0, search_provider="none")
    assert settings.public_page is False
    final = list(run_turn(build_graph(make_deps(settings, index=FakeRetriever(PASSAGES))), "三打白骨精是第几回？",
                          thread_id=uuid.uuid4().hex))[-1]
    assert PATH in repr(final.values.get("notices"))  # the owner at their own machine sees where


def test_a_broken_book_store_is_the_book_store_to_visitors(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("SPACE_ID", "someone/enough-rag")
    settings = make_settings(data_dir=tmp_path / "secret-data-dir")
    settings.chroma_dir.parent.mkdir(parents=True)
    settings.chroma_dir.write_text("not a directory")  # Chroma cannot open its store
    caplog.set_level(logging.WARNING)
    index = make_index(tmp_path, settings)
    try:
        book = make_epub(tmp_path / "b.epub", [("第一回 石猴", "花果山顶有一块仙石。" * 30)], title="石猴传")
        with pytest.raises(IndexError_) as info:
            index.ingest(book, background=False)
        listed = index.books()
    finally:
        index.close()
    seen = " ".join([text("en", info.value.msg), text("zh", info.value.msg),
                     *(text("en", b.error) for b in listed if b.error)])
    assert "the book store could not be opened" in seen, seen
    assert "secret-data-dir" not in seen and str(tmp_path) not in seen, seen  # before: the Chroma directory
    assert "secret-data-dir" in "\n".join(r.getMessage() for r in caplog.records)


def test_a_failed_vector_search_shows_no_store_text_to_visitors(tmp_path: Path, caplog) -> None:
    from rag.index.vectors import ChromaVectors

    class Broken:
        def count(self) -> int:
            return 1

        def query(self, **_: object) -> None:
            raise RuntimeError(f"cannot read {tmp_path}/chroma/chroma.sqlite3")

    for public in (True, False):
        store = ChromaVectors(make_settings(data_dir=tmp_path, public_page=public), "e5", lambda: None)
        store._collection = Broken()
        with caplog.at_level(logging.WARNING), pytest.raises(IndexError_) as info:
            store.query(np.asarray([0.1, 0.2]), 3, {"b1": None})
        shown = text("zh", info.value.msg) + str(info.value)
        assert (str(tmp_path) in shown) is not public, shown
    assert str(tmp_path) in caplog.text  # the server log keeps what the store said


@pytest.mark.parametrize("public", [True, False])
def test_a_failing_embedding_or_rerank_endpoint_shows_no_address_on_a_public_page(public: bool, caplog) -> None:
    from rag.index.embeddings import OpenAIEmbedder
    from rag.index.rerank import HttpReranker, RerankError

    url = f"http://127.0.0.1:{free_port()}/{PATH}"  # nothing listens there
    failures = []
    with caplog.at_level(logging.WARNING):
        with pytest.raises(IndexError_) as embed:
            OpenAIEmbedder(url, None, "m", timeout=2, public=public).embed_query("q")
        failures.append(embed.value)
        with pytest.raises(RerankError) as rerank:
            HttpReranker(url, timeout=2, public=public).scores("q", ["a", "b"])
        failures.append(rerank.value)
    for exc in failures:
        shown = text("zh", exc.msg) + text("en", exc.msg)
        assert ("127.0.0.1" in shown) is not public, shown
    if public:
        assert "127.0.0.1" in caplog.text  # the server log keeps where
