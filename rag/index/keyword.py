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
from collections.abc import Iterable
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
    def build(cls, texts: Iterable[str], characters: bool = True) -> KeywordIndex:
        """The index of ``texts``, read once, one at a time (``build_bm25``)."""
        model, size = build_bm25(texts, characters)
        return cls(model, size, characters)

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


# ------------------------------------------------------------------------------- streaming build

_BLOCK_ENTRIES = 1 << 22  # (document, token) entries placed per step of the column sort (~50 MB of temporaries)


def build_bm25(texts: Iterable[str], characters: bool = True, k1: float = 1.5, b: float = 0.75) -> tuple[Any, int]:
    """A ``bm25s.BM25`` model (method "lucene", as ``bm25s.BM25().index`` builds it, same scores and
    files) of ``texts``, and the number of documents, in memory that grows with the index itself.

    ``bm25s`` keeps every document's token list as Python strings, then three flat arrays of all
    (document, token) pairs, then sorts them by a packed int64 key: a 50 MB Chinese TXT (char and
    bigram tokens, ~1,000 per chunk) peaked at several GB (bench/ingest_memory.py). Here each text is
    tokenized alone and kept as two small arrays (its distinct token ids, their counts); the column
    order (CSC, by token) is then filled block by block by a counting sort into the final arrays.
    Peak: ~6 bytes per pair for the rows, 8 for the result, and the vocabulary."""
    import bm25s

    vocab: dict[str, int] = {}
    rows_ids: list[np.ndarray] = []
    rows_tf: list[np.ndarray] = []
    lengths: list[int] = []
    for text in texts:
        tokens = tokenize(text, characters) or [""]  # an empty document scores through the empty token
        ids = np.fromiter((vocab.setdefault(tok, len(vocab)) for tok in tokens), dtype=np.int32, count=len(tokens))
        unique, counts = np.unique(ids, return_counts=True)
        rows_ids.append(unique.astype(np.int32, copy=False))
        rows_tf.append(counts.astype(np.uint16 if counts.max(initial=0) < 65535 else np.uint32))
        lengths.append(len(tokens))
    n_docs, n_vocab = len(lengths), len(vocab)
    doc_len = np.asarray(lengths, dtype=np.float64)
    avg_len = float(doc_len.mean()) if n_docs else 0.0
    df = np.zeros(n_vocab, dtype=np.int64)
    for ids in rows_ids:
        df[ids] += 1  # ids are distinct within a row
    # lucene idf and tf saturation (bm25s.scoring._score_idf_lucene, _score_tfc_robertson)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)) if n_docs else np.zeros(0)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    nnz = int(indptr[-1])
    data = np.empty(nnz, dtype=np.float32)
    indices = np.empty(nnz, dtype=np.int32)
    heads = indptr[:-1].copy()  # where each token's column is filled next
    doc = 0
    while doc < n_docs:
        end, size = doc, 0
        while end < n_docs and (size == 0 or size + len(rows_ids[end]) <= _BLOCK_ENTRIES):
            size += len(rows_ids[end])
            end += 1
        cols = np.concatenate(rows_ids[doc:end])
        tf = np.concatenate(rows_tf[doc:end]).astype(np.float64)
        row_of = np.repeat(np.arange(doc, end, dtype=np.int32), [len(r) for r in rows_ids[doc:end]])
        norm = k1 * ((1 - b) + b * doc_len[row_of] / avg_len)
        scores = idf[cols] * (tf / (norm + tf))
        order = np.argsort(cols, kind="stable")  # documents stay in order within a column
        cols, row_of, scores = cols[order], row_of[order], scores[order]
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
        runs = np.diff(np.r_[starts, len(cols)])
        pos = heads[cols] + (np.arange(len(cols)) - np.repeat(starts, runs))
        indices[pos] = row_of
        data[pos] = scores
        heads[cols[starts]] += runs
        for k in range(doc, end):  # released as they are placed
            rows_ids[k] = rows_tf[k] = _EMPTY
        doc = end
    if "" not in vocab:
        vocab[""] = n_vocab  # as bm25s adds it: queries of nothing but unknown tokens
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
    model.vocab_dict = vocab
    model.nonoccurrence_array = None
    model.unique_token_ids_set = None  # only bm25s's retrieve() of token ids reads it; scores() does not
    return model, n_docs


_EMPTY = np.zeros(0, dtype=np.int32)
