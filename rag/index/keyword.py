"""BM25 keyword search over character bigrams (CJK) and lower-cased words (other scripts).

Overlapping character bigrams rather than words: no segmenter (jieba) to get this older prose wrong,
and any run of two or more characters matches. Keyword recall on the dev questions: bench/retrieval.py
(bench/results/retrieval_e5.json). One ``bm25s`` index per book, saved in the book's directory.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_TOKEN_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_IS_CJK = re.compile(rf"[{_CJK}]")


def tokenize(text: str) -> list[str]:
    """'孙悟空 Monkey King' -> ['孙悟', '悟空', 'monkey', 'king']. Single CJK characters stand alone."""
    tokens: list[str] = []
    for run in _TOKEN_RUN.findall(text.lower()):
        if _IS_CJK.match(run):
            if len(run) == 1:
                tokens.append(run)
            else:
                tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            tokens.append(run)
    return tokens


class KeywordIndex:
    """A BM25 index over a list of documents; scores for every document at once."""

    def __init__(self, model: Any, size: int) -> None:
        self._model = model
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> KeywordIndex:
        import bm25s

        corpus = [tokenize(t) or [""] for t in texts]
        model = bm25s.BM25()
        model.index(corpus, show_progress=False)
        return cls(model, len(texts))

    def save(self, directory: Path) -> None:
        self._model.save(str(directory))

    @classmethod
    def load(cls, directory: Path, size: int) -> KeywordIndex:
        import bm25s

        return cls(bm25s.BM25.load(str(directory)), size)

    def scores(self, query: str) -> np.ndarray:
        tokens = [t for t in tokenize(query) if t in self._model.vocab_dict]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._model.get_scores(tokens), dtype=np.float32)

    def top(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(document position, score) of the best ``k`` documents with a positive score, among the
        ``allowed`` ones (a boolean mask over the documents) if given."""
        s = self.scores(query)
        if allowed is not None:
            s = np.where(allowed, s, 0.0)
        if k <= 0 or not s.size:
            return []
        k = min(k, s.size)
        idx = np.argpartition(-s, k - 1)[:k]
        idx = idx[np.argsort(-s[idx], kind="stable")]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0]
