"""BM25 keyword search over CJK characters and character bigrams, and lower-cased words (other scripts).

Overlapping character bigrams rather than words: no segmenter (jieba) to get this older prose wrong,
and any run of two or more characters matches. Single characters as well (keyword index version 3):
many content words of this prose are one character (钯, 封, 压, 重), and a bigram that spans a word
boundary ("把钯", "被封") rarely matches; adding them raised keyword chunk recall@5 on the dev
questions from 0.48 to 0.62 and hybrid from 0.57 to 0.65 (bench/retrieval.py). BM25's IDF keeps
common characters (的, 了) from counting for much. Keyword recall on the dev questions: bench/retrieval.py
(bench/results/retrieval_e5.json). One index per book, saved in the book's directory. English words
are indexed as the book spells them; a query's word meets all the book's words of its Snowball stem
(``KeywordIndex.stems``), so stemming needs no reindex (bench/results/retrieval_books_stems.json).

The index is BM25 as ``bm25s`` computes it (method "lucene", k1 1.5, b 0.75: the same scores), built
and stored here so that a big book fits in memory (bench/ingest_memory.py): ``bm25s``
keeps every chunk's tokens as Python strings and a string vocabulary, then sorts all (chunk, token)
pairs by an int64 key, which made a 50 MB Chinese TXT peak at 5 GB. Here a token is a number (a CJK
character its code point, a bigram two code points, a word its place in a word list), each chunk is
kept as its distinct token numbers and counts, the vocabulary is a sorted array, and the column
order (CSC, by token) is filled block by block by a counting sort. Saved as .npy files that a
search maps instead of reading (``load``); an index saved by ``bm25s`` (older books) still loads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
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

    #: Whether a query word matches every word of the book with its Snowball stem ("blush" finds
    #: "blushed", "meeting" "meet"), a document counting its best-scoring form once.
    stems = True

    def __init__(self, arrays: _Arrays, size: int, characters: bool = True) -> None:
        self._a = arrays
        self.size = size
        self.characters = characters
        self._stem_groups: dict[str, list[int]] | None = None

    @classmethod
    def build(cls, texts: Iterable[str], characters: bool = True) -> KeywordIndex:
        """The index of ``texts``, read once, one at a time (``build_arrays``)."""
        arrays = build_arrays(texts, characters)
        return cls(arrays, arrays.num_docs, characters)

    def save(self, directory: Path) -> None:
        """Write the index's files, each fsynced, then the directory: the caller renames the directory
        into place, and a crash must not leave files of the right size that hold zeroes."""
        directory.mkdir(parents=True, exist_ok=True)
        a = self._a
        for name in ("data", "indices", "indptr", "codes", "cols"):
            with (directory / f"{name}.npy").open("wb") as fh:
                np.save(fh, getattr(a, name))
                _sync(fh)
        params = {"format": _FORMAT, "num_docs": a.num_docs, "k1": a.k1, "b": a.b, "characters": self.characters}
        for file, value in (("words.json", a.words), (_PARAMS, params)):
            with (directory / file).open("w", encoding="utf-8") as fh:
                fh.write(json.dumps(value, ensure_ascii=False))
                _sync(fh)
        fsync_dir(directory)

    @classmethod
    def load(cls, directory: Path, size: int) -> KeywordIndex:
        """A saved index; its large arrays are mapped from the files, not read into memory."""
        params_file = directory / _PARAMS
        if not params_file.exists():
            old = _from_bm25s(directory)  # saved by bm25s (books indexed by an older version)
            _check_size(old.num_docs, size)
            return cls(old, size)
        params = json.loads(params_file.read_text(encoding="utf-8"))
        if params.get("format") != _FORMAT:
            raise ValueError(f"unknown keyword index format {params.get('format')!r}")
        _check_size(int(params["num_docs"]), size)
        arrays = _Arrays(**{name: np.load(directory / f"{name}.npy", mmap_mode="r")
                            for name in ("data", "indices", "indptr", "codes", "cols")},
                         words=json.loads((directory / "words.json").read_text(encoding="utf-8")),
                         num_docs=int(params["num_docs"]), k1=float(params["k1"]), b=float(params["b"]))
        return cls(arrays, size, bool(params.get("characters", True)))

    def finds_itself(self, texts: Sequence[tuple[int, str]], probes: int = 4) -> bool:
        """Whether each ``(position, text)`` document scores above zero for a few of its own tokens
        (bigrams first, spread over the text): an index whose arrays were zeroed or scrambled at
        the right size opens fine and finds nothing."""
        for position, text in texts:
            tokens = tokenize(text, characters=False)
            pairs = [tok for tok in tokens if len(tok) == 2 and _IS_CJK.match(tok)] or tokens
            if not pairs or not 0 <= position < self.size:
                continue
            step = max(1, len(pairs) // probes)
            columns = self._columns_of(pairs[::step][:probes])
            score = 0.0
            for col in columns:
                lo, hi = int(self._a.indptr[col]), int(self._a.indptr[col + 1])
                hits = np.flatnonzero(self._a.indices[lo:hi] == position)
                score += float(self._a.data[lo:hi][hits].sum())
            if score <= 0:
                return False
        return True

    def _columns(self, query: str) -> list[int]:
        """The index's columns of the query's tokens (repeated tokens repeated, unknown ones left out)."""
        return self._columns_of(query_tokens(query, self.characters))

    def _groups(self, query: str) -> list[list[int]]:
        """The query's tokens as groups of columns: a CJK token its column; an English word (with
        ``stems``) the columns of all the book's words of its stem, so a question's "blush" meets the
        book's "blushed" without the index stemming anything (older indexes work as they are)."""
        tokens = query_tokens(query, self.characters)
        if not self.stems or not self._a.words:
            return [[c] for c in self._columns_of(tokens)]
        groups: list[list[int]] = []
        by_stem = self._stem_columns()
        for token in tokens:
            if _IS_CJK.match(token) or not token.isalpha():
                groups.extend([c] for c in self._columns_of([token]))
            else:
                found = by_stem.get(english_stem(token))
                if found:
                    groups.append(found)
        return groups

    def _stem_columns(self) -> dict[str, list[int]]:
        """Stem -> the columns of the index's English words of that stem, built once per index."""
        if self._stem_groups is None:
            words = [w for w in self._a.words if w.isascii() and w.isalpha()]
            stems = _stemmer().stemWords(words)
            columns = self._columns_of(words)  # every listed word is in the index
            out: dict[str, list[int]] = {}
            if len(columns) == len(words):
                for stem, col in zip(stems, columns, strict=True):
                    out.setdefault(stem, []).append(col)
            self._stem_groups = out
        return self._stem_groups

    def _columns_of(self, tokens: Sequence[str]) -> list[int]:
        a = self._a
        codes = [c for c in (token_code(t, a.word_ids) for t in tokens) if c is not None]
        if not codes or not len(a.codes):
            return []
        wanted = np.asarray(codes, dtype=np.int64)
        at = np.minimum(np.searchsorted(a.codes, wanted), len(a.codes) - 1)
        found = a.codes[at] == wanted
        return [int(c) for c in a.cols[at[found]]]

    def scores(self, query: str) -> np.ndarray:
        a = self._a
        out = np.zeros(self.size, dtype=np.float32)
        for group in self._groups(query):
            if len(group) == 1:  # a document appears once per column
                lo, hi = int(a.indptr[group[0]]), int(a.indptr[group[0] + 1])
                out[a.indices[lo:hi]] += a.data[lo:hi]
                continue
            best = np.zeros(self.size, dtype=np.float32)  # a word's forms count once: the best of them
            for col in group:
                lo, hi = int(a.indptr[col]), int(a.indptr[col + 1])
                np.maximum.at(best, a.indices[lo:hi], a.data[lo:hi])
            out += best
        return out

    def ideal(self, query: str) -> float:
        """The score of a document that had every query token at its best score in this index: BM25
        scores of different books' indexes are divided by it before they are merged (their IDF and
        length statistics differ, so raw scores are not comparable; this keeps a strong match in one
        book above a weak one in another, which a per-book max would not)."""
        a = self._a
        return float(sum(max(float(np.max(a.data[int(a.indptr[c]):int(a.indptr[c + 1])], initial=0.0)) for c in group)
                         for group in self._groups(query)))

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


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # pure Python; the Snowball project's English stemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=4096)
def english_stem(word: str) -> str:
    """The Snowball stem of a lower-case English word ("blushed" -> "blush")."""
    return str(_stemmer().stemWord(word))


# ------------------------------------------------------------------------------------ the arrays

_FORMAT = "rag-bm25/1"
_PARAMS = "rag_params.json"
#: Token numbers: a CJK character is its code point (< 2**21), a bigram ``a << 21 | b`` (< 2**42),
#: a word (any other run of letters or digits, and the empty token of a document without any) ``WORD + i``.
WORD = 1 << 42
_BLOCK_ENTRIES = 1 << 18  # (document, token) entries placed per step of the column sort (~15 MB of temporaries)
_MERGE_DOCS = 4096  # documents whose new tokens join the sorted vocabulary at once


@dataclass
class _Arrays:
    """A BM25 matrix by column (CSC) and its vocabulary: ``codes`` sorted, ``cols[i]`` the column
    of ``codes[i]``; ``words`` the word list (code ``WORD + i``)."""

    data: np.ndarray  # float32 scores
    indices: np.ndarray  # int32 documents, ascending within a column
    indptr: np.ndarray  # int64, one more than the columns
    codes: np.ndarray  # int64, sorted
    cols: np.ndarray  # int64
    words: list[str]
    num_docs: int
    k1: float = 1.5
    b: float = 0.75
    _word_ids: dict[str, int] | None = None

    @property
    def word_ids(self) -> dict[str, int]:
        if self._word_ids is None:
            self._word_ids = {w: i for i, w in enumerate(self.words)}
        return self._word_ids


def token_code(token: str, words: dict[str, int]) -> int | None:
    """A token's number (see ``WORD``); None for a word the index does not know."""
    if token and _IS_CJK.match(token):
        return ord(token[0]) if len(token) == 1 else (ord(token[0]) << 21) | ord(token[1])
    i = words.get(token)
    return None if i is None else WORD + i


_WORD_RUN = re.compile(rf"[^\W_{_CJK}]+", re.UNICODE)
_CJK_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FFFF))  # as _CJK


def _text_codes(text: str, characters: bool, words: dict[str, int]) -> np.ndarray:
    """The numbers of ``tokenize(text, characters)`` (the same tokens, not in their order: BM25
    needs only their counts); words join ``words``. Whole texts at once in numpy: a CJK run's
    characters are the CJK code points, its bigrams the pairs of neighbours that are both CJK."""
    lowered = text.lower()
    a = np.frombuffer(lowered.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    cjk = np.zeros(len(a), dtype=bool)
    for lo, hi in _CJK_RANGES:
        cjk |= (a >= lo) & (a <= hi)
    parts: list[np.ndarray] = []
    if cjk.any():
        if characters:
            parts.append(a[cjk])
        else:  # a run of one character stands alone
            alone = cjk.copy()
            alone[1:] &= ~cjk[:-1]
            alone[:-1] &= ~cjk[1:]
            parts.append(a[alone])
        pairs = cjk[:-1] & cjk[1:]
        parts.append((a[:-1][pairs] << 21) | a[1:][pairs])
    if not cjk.all():
        found = _WORD_RUN.findall(lowered)
        if found:
            parts.append(np.fromiter((WORD + words.setdefault(w, len(words)) for w in found), dtype=np.int64,
                                     count=len(found)))
    codes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if not len(codes):
        return np.asarray([WORD + words.setdefault("", len(words))], dtype=np.int64)  # as bm25s: the empty token
    return codes


def build_arrays(texts: Iterable[str], characters: bool = True, k1: float = 1.5, b: float = 0.75) -> _Arrays:
    """BM25 (lucene idf and tf saturation, as ``bm25s.scoring``) of ``texts``, read one at a time.
    Memory: ~10 bytes per (document, distinct token) for the rows, 8 for the result, 8 per token of
    the vocabulary; nothing per token occurrence."""
    words: dict[str, int] = {}
    row_codes: list[np.ndarray] = []
    row_tf: list[np.ndarray] = []
    lengths: list[int] = []
    vocab = np.zeros(0, dtype=np.int64)
    pending: list[np.ndarray] = []
    for text in texts:
        codes = _text_codes(text, characters, words)
        unique, counts = np.unique(codes, return_counts=True)
        row_codes.append(unique)
        row_tf.append(counts.astype(np.uint16) if counts.max() < 65535 else counts.astype(np.uint32))
        lengths.append(len(codes))
        pending.append(unique)
        if len(pending) >= _MERGE_DOCS:
            vocab = _sorted_unique(np.concatenate([vocab, *pending]))
            pending = []
    if pending:
        vocab = _sorted_unique(np.concatenate([vocab, *pending]))
    del pending
    n_docs, n_vocab = len(lengths), len(vocab)
    doc_len = np.asarray(lengths, dtype=np.float64)
    avg_len = float(doc_len.mean()) if n_docs else 0.0
    df = np.zeros(n_vocab, dtype=np.int64)
    blocks = list(_blocks([len(r) for r in row_codes]))
    for lo, hi in blocks:
        df += np.bincount(np.searchsorted(vocab, np.concatenate(row_codes[lo:hi])), minlength=n_vocab)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    del df
    nnz = int(indptr[-1])
    data = np.empty(nnz, dtype=np.float32)
    indices = np.empty(nnz, dtype=np.int32)
    heads = indptr[:-1].copy()  # where each column is filled next
    for lo, hi in blocks:
        cols = np.searchsorted(vocab, np.concatenate(row_codes[lo:hi]))
        tf = np.concatenate(row_tf[lo:hi]).astype(np.float64)
        row_of = np.repeat(np.arange(lo, hi, dtype=np.int32), [len(r) for r in row_codes[lo:hi]])
        for k in range(lo, hi):  # placed below: released now
            row_codes[k] = row_tf[k] = _EMPTY
        scores = idf[cols] * (tf / (k1 * ((1 - b) + b * doc_len[row_of] / avg_len) + tf))
        del tf
        order = np.argsort(cols, kind="stable")  # documents stay in order within a column
        cols, row_of, scores = cols[order], row_of[order], scores[order]
        del order
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
        runs = np.diff(np.r_[starts, len(cols)])
        pos = heads[cols] + (np.arange(len(cols)) - np.repeat(starts, runs))
        indices[pos] = row_of
        data[pos] = scores
        heads[cols[starts]] += runs
        del cols, row_of, scores, pos
    del row_codes, row_tf, blocks
    _return_freed_memory()
    ordered = sorted(words, key=words.__getitem__)
    return _Arrays(data, indices, indptr, vocab, np.arange(n_vocab, dtype=np.int64), ordered, n_docs, k1, b, words)


def _return_freed_memory() -> None:
    """Hand the heap the rows were kept in back to the system (glibc keeps freed small blocks, so
    the process would stay as large as at its peak while the book is then embedded)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # another C library: nothing to do
        pass


def _sorted_unique(codes: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (numpy's hash-based unique of int64 was ~10x slower here)."""
    codes.sort()
    return codes[np.r_[True, codes[1:] != codes[:-1]]] if len(codes) else codes


def _sync(fh: Any) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (renames, new files) durable; nothing where directories cannot be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _check_size(num_docs: int, size: int) -> None:
    if num_docs != size:
        raise ValueError(f"the keyword index holds {num_docs} documents, not {size}")


def _blocks(sizes: list[int]) -> Iterator[tuple[int, int]]:
    """Consecutive (first, end) document ranges of about ``_BLOCK_ENTRIES`` entries each."""
    lo = 0
    while lo < len(sizes):
        hi, total = lo, 0
        while hi < len(sizes) and (total == 0 or total + sizes[hi] <= _BLOCK_ENTRIES):
            total += sizes[hi]
            hi += 1
        yield lo, hi
        lo = hi


def _from_bm25s(directory: Path) -> _Arrays:
    """The arrays of an index that ``bm25s`` saved (keyword index version 3, older books)."""
    import bm25s

    model = bm25s.BM25.load(str(directory))
    scores = model.scores
    n_cols = len(scores["indptr"]) - 1
    words: list[str] = []
    word_ids: dict[str, int] = {}
    codes, cols = [], []
    for token, col in model.vocab_dict.items():
        if col >= n_cols:
            continue  # bm25s's empty token, added after the matrix
        if token and _IS_CJK.match(token) and len(token) <= 2:
            code = token_code(token, word_ids)
        else:
            code = WORD + word_ids.setdefault(token, len(words))
            if len(words) < len(word_ids):
                words.append(token)
        codes.append(code)
        cols.append(col)
    code_arr = np.asarray(codes, dtype=np.int64)
    order = np.argsort(code_arr)
    return _Arrays(np.asarray(scores["data"], dtype=np.float32), np.asarray(scores["indices"]),
                   np.asarray(scores["indptr"], dtype=np.int64), code_arr[order],
                   np.asarray(cols, dtype=np.int64)[order], words, int(scores["num_docs"]),
                   float(model.k1), float(model.b), word_ids)


_EMPTY = np.zeros(0, dtype=np.int64)
