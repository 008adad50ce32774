"""Test doubles for the book index parts: an in-memory ``VectorStore``, a small deterministic
embedder that can stop on a given call, and synthetic books (no corpus needed)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag.index.vectors import Scope, VectorHit

# (chapter title, the name only that chapter mentions)
CHAPTERS = [("第一回 青龙出山", "青龙"), ("第二回 白虎下山", "白虎"), ("第三回 朱雀南飞", "朱雀"),
            ("第四回 玄武北守", "玄武"), ("第五回 麒麟归来", "麒麟")]
PLACES = ["东海", "西岭", "南山", "北原", "中州", "云台", "石桥", "竹林"]
DEEDS = ["守着城门", "读了三卷书", "走过七座桥", "在江边饮马", "煮茶待客", "观星到天明", "种下一片桃林"]


def chapter_text(n: int, name: str, sentences: int = 24) -> str:
    """A chapter of distinct sentences; every chapter also mentions 长安 (a shared word)."""
    lines = []
    for i in range(sentences):
        place, deed = PLACES[(i + n) % len(PLACES)], DEEDS[(i * 3 + n) % len(DEEDS)]
        lines.append(f"{name}第{i + 1}日到了{place}，{deed}，又说起长安的旧事{n}-{i}。")
    return "\n".join(lines)


def write_book(path: Path, chapters: int = 4, title: str = "四象记", preface: bool = False) -> Path:
    """A TXT book with ``chapters`` numbered chapters (and an unnumbered preface if asked)."""
    parts = [f"《{title}》"]
    if preface:
        parts.append("这是一篇序言，说的是长安城里的一位说书人。\n他每天在长安的茶馆里讲一段四象的故事，听的人很多。")
    for n, (heading, name) in enumerate(CHAPTERS[:chapters], start=1):
        parts.append(f"{heading}\n{chapter_text(n, name)}")
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


class BigramEmbedder:
    """Hashed character bigrams into ``dim`` buckets, normalised: texts sharing bigrams are close.
    ``block_at=n`` makes the n-th passage call set ``reached`` and wait for ``resume``;
    ``fail_at=n`` makes the n-th call raise."""

    def __init__(self, dim: int = 64, block_at: int | None = None, fail_at: int | None = None) -> None:
        self.key = f"bigram{dim}"
        self.dim = dim
        self.block_at, self.fail_at = block_at, fail_at
        self.calls = 0
        self.embedded = 0
        self.reached = threading.Event()
        self.resume = threading.Event()

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        text = "".join(text.split())
        for i in range(max(1, len(text) - 1)):
            h = int.from_bytes(hashlib.blake2b(text[i : i + 2].encode(), digest_size=4).digest(), "little")
            vec[h % self.dim] += 1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("embedder exploded")
        if self.calls == self.block_at:
            self.reached.set()
            if not self.resume.wait(timeout=30):
                raise TimeoutError("the test never resumed the embedder")
        self.embedded += len(texts)
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


class MemoryVectors:
    """The ``VectorStore`` interface over a dict, exact cosine search; records every query's scope."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[np.ndarray, dict[str, Any]]] = {}
        self.scopes: list[dict[str, Any]] = []
        self.broken = False  # True: every read fails, as a corrupt store would

    def stored_ids(self, book_id: str) -> set[str]:
        return {pid for pid, (_, meta) in self.items.items() if meta["book_id"] == book_id}

    def upsert(self, ids: list[str], vectors: Sequence[np.ndarray], metadatas: list[dict[str, Any]]) -> None:
        for pid, vector, meta in zip(ids, vectors, metadatas, strict=True):
            self.items[pid] = (np.asarray(vector, dtype=np.float32), dict(meta))

    def delete(self, ids: list[str]) -> None:
        for pid in ids:
            self.items.pop(pid, None)

    def delete_book(self, book_id: str) -> None:
        self.delete(list(self.stored_ids(book_id)))

    def query(self, vector: np.ndarray, n: int, scope: Scope) -> list[VectorHit]:
        self.scopes.append({k: None if v is None else sorted(v) for k, v in scope.items()})
        if self.broken:
            raise RuntimeError("the vector store is broken")

        def wanted(meta: dict[str, Any]) -> bool:
            if meta["book_id"] not in scope:
                return False
            chapters = scope[meta["book_id"]]
            return chapters is None or meta["chapter_idx"] in chapters

        hits = [VectorHit(m["book_id"], m["chunk_id"], float(np.dot(v, vector)))
                for v, m in self.items.values() if wanted(m)]
        return sorted(hits, key=lambda h: -h.score)[:n]

    def book_vectors(self, book_id: str) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
        self.loads = getattr(self, "loads", 0) + 1
        rows = [(pid, v, m) for pid, (v, m) in self.items.items() if m["book_id"] == book_id]
        if self.broken:
            raise RuntimeError("the vector store is broken")
        matrix = np.stack([v for _, v, _ in rows]) if rows else np.zeros((0, 0), dtype=np.float32)
        return [pid for pid, _, _ in rows], matrix, [dict(m) for _, _, m in rows]

    def close(self) -> None:
        pass
