"""BM25 keyword search over CJK characters and character bigrams, and lower-cased words (other scripts).

Overlapping character bigrams rather than words: no segmenter (jieba) to get this older prose wrong,
and any run of two or more characters matches. Single characters as well (keyword index version 3):
many content words of this prose are one character (钯, 封, 压, 重), and a bigram that spans a word
boundary ("把钯", "被封") rarely matches; adding them raised keyword chunk recall@5 on the dev
questions from 0.48 to 0.62 and hybrid from 0.57 to 0.65 (bench/retrieval.py). BM25's IDF keeps
common characters (的, 了) from counting for much. Keyword recall on the dev questions: bench/retrieval.py
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


# Question words break a query's runs of characters before its bigrams are taken: "用什么山压住" gives
# 山压 and 压住, not the accidental 用什, 么山, whose rarity in the book made them score high wherever
# they happened to occur (bench/retrieval.py, keyword rows).
QUESTION_WORDS = ("为什么", "什么", "怎么样", "怎么", "怎样", "如何", "哪里", "哪儿", "哪些", "哪", "是谁", "谁",
                  "多少", "几", "是否", "是不是", "有没有", "吗", "呢", "请问")
_QUESTION = re.compile("|".join(map(re.escape, QUESTION_WORDS)))


def query_tokens(query: str, characters: bool = True) -> list[str]:
    """The tokens of a query: ``tokenize`` after question words are cut out."""
    return tokenize(_QUESTION.sub(" ", query), characters)


def tokenize(text: str, characters: bool = True) -> list[str]:
    """'孙悟空 Monkey King' -> ['孙', '悟', '空', '孙悟', '悟空', 'monkey', 'king']: each CJK run's
    characters, then its bigrams; other scripts by word. ``characters=False``: bigrams only, a run
    of one character standing alone (keyword index versions 1 and 2, for the benchmark's rows)."""
    tokens: list[str] = []
    for run in _TOKEN_RUN.findall(text.lower()):
        if _IS_CJK.match(run):
            if characters or len(run) == 1:
                tokens.extend(run)
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            tokens.append(run)
    return tokens


class KeywordIndex:
    """A BM25 index over a list of documents; scores for every document at once."""

    def __init__(self, model: Any, size: int, characters: bool = True) -> None:
        self._model = model
        self.size = size
        self.characters = characters

    @classmethod
    def build(cls, texts: list[str], characters: bool = True) -> KeywordIndex:
        import bm25s

        corpus = [tokenize(t, characters) or [""] for t in texts]
        model = bm25s.BM25()
        model.index(corpus, show_progress=False)
        return cls(model, len(texts), characters)

    def save(self, directory: Path) -> None:
        self._model.save(str(directory))

    @classmethod
    def load(cls, directory: Path, size: int) -> KeywordIndex:
        import bm25s

        return cls(bm25s.BM25.load(str(directory)), size)

    def scores(self, query: str) -> np.ndarray:
        tokens = [t for t in query_tokens(query, self.characters) if t in self._model.vocab_dict]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._model.get_scores(tokens), dtype=np.float32)

    def ideal(self, query: str) -> float:
        """The score of a document that had every query token at its best score in this index: BM25
        scores of different books' indexes are divided by it before they are merged (their IDF and
        length statistics differ, so raw scores are not comparable; this keeps a strong match in one
        book above a weak one in another, which a per-book max would not)."""
        scores = getattr(self._model, "scores", None)
        vocab = self._model.vocab_dict
        ids = [vocab[t] for t in query_tokens(query, self.characters) if t in vocab]
        if not ids or not isinstance(scores, dict):
            return 0.0
        data, indptr = scores["data"], scores["indptr"]
        return float(sum(float(data[indptr[i]:indptr[i + 1]].max(initial=0.0)) for i in ids))

    def top(self, query: str, k: int, allowed: np.ndarray | None = None,
            normalize: bool = False) -> list[tuple[int, float]]:
        """(document position, score) of the best ``k`` documents with a positive score, among the
        ``allowed`` ones (a boolean mask over the documents) if given; ``normalize``: scores divided
        by ``ideal(query)`` (0..1)."""
        s = self.scores(query)
        if normalize and s.size:
            best = self.ideal(query)
            if best > 0:
                s = s / best
        if allowed is not None:
            s = np.where(allowed, s, 0.0)
        if k <= 0 or not s.size:
            return []
        k = min(k, s.size)
        idx = np.argpartition(-s, k - 1)[:k]
        idx = idx[np.argsort(-s[idx], kind="stable")]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0]
