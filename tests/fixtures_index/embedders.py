"""Test doubles for the embedder: instant, deterministic, and observable."""

from __future__ import annotations

import hashlib
import threading

import numpy as np


def _normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


class HashEmbedder:
    """Deterministic, instant embedder: hashed character bigrams into ``dim`` buckets. Texts sharing
    bigrams get similar vectors, so retrieval tests are meaningful. ``calls`` counts passage calls,
    ``embedded`` the passages embedded."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.key = f"hash{dim}"
        self.calls = 0
        self.embedded = 0

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        text = "".join(text.split()).lower()
        grams = [text[i : i + 2] for i in range(max(1, len(text) - 1))]
        for gram in grams:
            h = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=4).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 31) & 1 else 0.5
        return vec

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.embedded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalize(np.stack([self._one(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalize(self._one(text)[None, :])[0]


class GatedEmbedder(HashEmbedder):
    """A HashEmbedder whose passage calls block until ``gate`` is set (to observe the index while
    embedding is in progress); ``fail_after`` makes the call after that many raise; the call number
    ``pause_at`` (1-based) sets ``paused`` and waits for ``resume`` (to act in the middle of a book)."""

    def __init__(self, fail_after: int | None = None, pause_at: int | None = None) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Event()
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.fail_after = fail_after
        self.pause_at = pause_at

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.started.set()
        if not self.gate.wait(timeout=30):
            raise TimeoutError("test gate never opened")
        if self.pause_at is not None and self.calls + 1 == self.pause_at:
            self.paused.set()
            if not self.resume.wait(timeout=30):
                raise TimeoutError("test never resumed the embedder")
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("embedder exploded")
        return super().embed_passages(texts)
