"""``IndexConfig``: how the book index chunks, embeds and fuses, in one value passed to ``BookIndex``.

The defaults were chosen with the benchmarks (``bench/ingest.py``, ``bench/retrieval.py``); only the
embedding batch comes from ``Settings`` (``EMBEDDING_BATCH_SIZE``). Tests build their own config
instead of patching module globals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.index import fusion
from rag.index.embeddings import LOCAL_EMBEDDER_KEYS


@dataclass(frozen=True)
class IndexConfig:
    piece_chars: int = 256  # embedding unit (see chunking.py and bench/ingest.py)
    embed_batch: int = 32  # pieces per embedder call (EMBEDDING_BATCH_SIZE)
    local_embed_batch: int = 8  # cap for the local models: throughput is flat, small batches stop fast
    # Embed pieces without punctuation (bench/retrieval.py --variants: 18% fewer characters, ~27% less
    # embedding time, recall@5 unchanged). Switching it off is another vector space ("<key>_punct").
    strip_punctuation: bool = True
    fusion: str = "rrf"  # how vector and keyword rankings merge (fusion.METHODS), chosen with bench/retrieval.py
    candidates: int = 30  # candidates taken from each retriever before fusion
    stale_tmp_seconds: float = 600.0  # leftover temporary book directories older than this are removed
    heartbeat_seconds: float = 5.0  # a running embedding rewrites its heartbeat at least this often...
    heartbeat_stale_seconds: float = 120.0  # ...and is taken for dead (resumable) when it is older than this

    def __post_init__(self) -> None:
        if self.fusion not in fusion.METHODS:
            raise ValueError(f"unknown fusion method {self.fusion!r} ({', '.join(fusion.METHODS)})")

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> IndexConfig:
        return cls(**{"embed_batch": settings.embedding_batch_size, **overrides})

    def batch_for(self, embedder_key: str) -> int:
        batch = max(1, self.embed_batch)
        return min(batch, self.local_embed_batch) if embedder_key in LOCAL_EMBEDDER_KEYS else batch
