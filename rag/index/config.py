"""``IndexConfig``: how the book index chunks, embeds and fuses, in one value passed to ``BookIndex``.

The defaults were chosen with the benchmarks (``bench/ingest.py``, ``bench/retrieval.py``); the three
that are also settings (``EMBEDDING_BATCH_SIZE``, ``MAX_PASSAGE_CHARS``, ``RERANK_CANDIDATES``) take
their defaults and, in ``from_settings``, their values from the settings' index and retrieval
groups, so each has one default. Tests build their own config instead of patching module globals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.config import IndexSettings, RetrievalSettings, Settings
from rag.index import fusion
from rag.index.embeddings import LOCAL_EMBEDDER_KEYS


@dataclass(frozen=True)
class IndexConfig:
    piece_chars: int = 256  # embedding unit (see chunking.py and bench/ingest.py)
    embed_batch: int = IndexSettings.model_fields["embedding_batch_size"].default  # pieces per embedder call
    local_embed_batch: int = 8  # cap for the local models: throughput is flat, small batches stop fast
    # Embed pieces without punctuation (bench/retrieval.py --variants: 18% fewer characters, ~27% less
    # embedding time, recall@5 unchanged). Switching it off is another vector space ("<key>_punct").
    strip_punctuation: bool = True
    fusion: str = "rrf"  # how vector and keyword rankings merge (fusion.METHODS), chosen with bench/retrieval.py
    candidates: int = 50  # candidates taken from each ranking before fusion
    # Weighted RRF (fusion.rrf_many): each ranking's weight, and a place right after the fused best (in the
    # first 1 + number of retrievers) for the best hit of each retriever on the question itself.
    weight_vector: float = 1.0
    weight_keyword: float = 1.0
    guaranteed: bool = True
    # How rrf_many weighs what each ranking found (fusion.FUSED_BY): "rank" (RRF), "score" (scaled
    # scores), "blend" (RRF plus the scaled scores); chosen with bench/retrieval.py --fusions.
    fused_by: str = "rank"
    rewrite_weight: float = 1.0  # weight of the rankings of a rewritten query (the question's are 1)
    # Exact vector search with numpy over a complete book's stored vectors (deterministic; ~ms for a
    # novel), for books up to this many vectors; larger ones and books still embedding use Chroma.
    exact_search: bool = True
    exact_max_vectors: int = 200_000
    title_weight: float = 0.3  # share of the chapter title's similarity added to a chunk's vector score
    # Small-to-big: a hit's passage takes up to this many neighbouring chunks on each side (same
    # chapter) while its text stays within context_chars.
    neighbours: int = 1
    context_chars: int = RetrievalSettings.model_fields["max_passage_chars"].default  # MAX_PASSAGE_CHARS
    chapter_hint: bool = True  # a question naming a chapter ("第二十七回", "chapter 27") searches it first
    # Weight of the keyword search of the question with the other names the book gives its people
    # (诸葛亮 -> 孔明, from "姓诸葛，名亮，字孔明"; rag.aliases). 0: off.
    alias_weight: float = 1.0
    # Weight of the keyword search of an English question with its words' other forms ("blushed" for
    # "blush"; rag.index.query.word_forms) in books written in Latin script. 0: off.
    forms_weight: float = 1.0
    # An English question on a Chinese book is also searched with the book's words for it: pinyin names
    # matched in the book, other words by CC-CEDICT gloss (rag.crosslingual).
    crosslingual: bool = True
    # hits a configured reranker reorders (at least k; RERANK_CANDIDATES)
    rerank_candidates: int = RetrievalSettings.model_fields["rerank_candidates"].default
    stale_tmp_seconds: float = 600.0  # leftover temporary book directories older than this are removed
    heartbeat_seconds: float = 5.0  # a running embedding rewrites its heartbeat at least this often...
    heartbeat_stale_seconds: float = 120.0  # ...and is taken for dead (resumable) when it is older than this

    def __post_init__(self) -> None:
        if self.fused_by not in fusion.FUSED_BY:
            raise ValueError(f"unknown fused_by {self.fused_by!r} ({', '.join(fusion.FUSED_BY)})")
        if self.fusion not in fusion.METHODS:
            raise ValueError(f"unknown fusion method {self.fusion!r} ({', '.join(fusion.METHODS)})")
        if self.candidates < 1 or self.neighbours < 0 or self.context_chars < 1:
            raise ValueError("candidates and context_chars must be positive, neighbours not negative")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> IndexConfig:
        # a passage longer than MAX_PASSAGE_CHARS would be cut in the prompts: neighbours fill up to it
        index, retrieval = settings.index, settings.retrieval
        return cls(**{"embed_batch": index.embedding_batch_size, "context_chars": retrieval.max_passage_chars,
                      "rerank_candidates": retrieval.rerank_candidates, **overrides})

    def batch_for(self, embedder_key: str) -> int:
        batch = max(1, self.embed_batch)
        return min(batch, self.local_embed_batch) if embedder_key in LOCAL_EMBEDDER_KEYS else batch
