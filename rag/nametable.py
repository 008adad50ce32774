"""The book's own name table (``rag.crosslingual.NameTable``), built from its text: the strings of
2-5 Han characters it uses often and that stand on their own (many different characters before and
after them: "孙悟空" yes, "孙悟" no, by n-gram counts and the entropy of their neighbours), with the
English names CC-CEDICT gives them and the book's own other names for its people (``rag.aliases``).
``rag.crosslingual.BookText.names`` builds it when an English or pinyin question first meets the book."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def _pinyin(term: str, readings: Iterable[str] = ()) -> set[str]:
    """Toneless pinyin of ``term`` without spaces ('孙悟空' -> {'sunwukong'}), from pypinyin (phrase-aware)
    when it is installed and from CC-CEDICT's readings of the word; ü is written both v and u."""
    found = set(readings)
    try:
        from pypinyin import Style, lazy_pinyin
    except ImportError:  # pragma: no cover - pypinyin is in requirements.txt; CC-CEDICT's readings remain
        pass
    else:
        found.add("".join(lazy_pinyin(term, style=Style.NORMAL, errors="ignore")))
    return {p for r in found if r for p in (r, r.replace("v", "u"))}


@dataclass
class NameTable:
    """One book's names and terms: how often it uses each, and the pinyin and English keys naming them."""

    counts: dict[str, int] = field(default_factory=dict)
    by_english: dict[str, list[str]] = field(default_factory=dict)
    prefixes: frozenset[str] = frozenset()
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rag.aliases
    _readings: dict[str, set[str]] = field(default_factory=dict)

    def add(self, key: str, term: str) -> None:
        terms = self.by_english.setdefault(key, [])
        if term not in terms:
            terms.append(term)
            terms.sort(key=lambda t: -self.counts.get(t, 0))

    def readings(self, term: str, glossary: Any) -> set[str]:
        """The term's toneless pinyin (``_pinyin``), worked out when first asked for."""
        found = self._readings.get(term)
        if found is None:
            found = self._readings[term] = _pinyin(term, glossary.spelled_as.get(term, ()))
        return found

    def __len__(self) -> int:
        return len(self.counts)


NAME_MIN_COUNT = 3  # occurrences of a string before it can be a name
NAME_MAX_CHARS = 5
NAME_MIN_ENTROPY = 1.0  # nats of variety of the characters on each side of it
_HAN_BASE = 0x4E00
_HAN_SPAN = 0x9FFF - 0x4E00 + 2  # Han characters as 1.._HAN_SPAN-1, everything else 0


def discover_terms(text: str, min_count: int = NAME_MIN_COUNT, max_chars: int = NAME_MAX_CHARS,
                   min_entropy: float = NAME_MIN_ENTROPY) -> dict[str, int]:
    """Strings of 2..``max_chars`` Han characters that ``text`` uses at least ``min_count`` times and that
    stand on their own: the characters right before and right after them vary (entropy of each side
    at least ``min_entropy``; a punctuation mark or line break counts as a new character every time).
    Counting is by numpy over the text's codes: an n-gram is counted only where its (n-1)-gram is frequent."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    han = np.where((codes >= _HAN_BASE) & (codes <= 0x9FFF), codes - _HAN_BASE + 1, 0)
    size = len(han)
    found: dict[str, int] = {}
    positions = np.flatnonzero(han > 0)
    ids = han[positions]  # the id of the (n-1)-gram starting at each position (first: the character)
    for n in range(2, max_chars + 1):
        ok = positions + n - 1 < size
        positions, ids = positions[ok], ids[ok]
        nxt = han[positions + n - 1]
        ok = nxt > 0
        positions, ids, nxt = positions[ok], ids[ok], nxt[ok]
        if not len(positions):
            break
        uniq, inverse, counts = np.unique(ids * _HAN_SPAN + nxt, return_inverse=True, return_counts=True)
        frequent = counts[inverse] >= min_count
        positions, ids = positions[frequent], inverse[frequent]  # dense n-gram ids
        if not len(positions):
            break
        left = np.where(positions > 0, han[np.maximum(positions - 1, 0)], 0)
        right_at = positions + n
        right = np.where(right_at < size, han[np.minimum(right_at, size - 1)], 0)
        entropy_left = _side_entropy(ids, left, len(uniq))
        entropy_right = _side_entropy(ids, right, len(uniq))
        good = np.flatnonzero((counts >= min_count) & (entropy_left >= min_entropy) & (entropy_right >= min_entropy))
        if len(good):
            first = np.full(len(uniq), -1, dtype=np.int64)
            first[ids[::-1]] = positions[::-1]  # a position of each n-gram
            for g in good.tolist():
                p = int(first[g])
                if p >= 0:
                    found[text[p : p + n]] = int(counts[g])
    return found


def _side_entropy(ids: np.ndarray, side: np.ndarray, groups: int) -> np.ndarray:
    """Entropy (nats) of the characters on one side of each n-gram id's occurrences; a non-Han
    neighbour (0) counts as a different character every time."""
    total = np.bincount(ids, minlength=groups).astype(np.float64)
    out = np.zeros(groups, dtype=np.float64)
    han = side > 0
    if han.any():
        pair, pair_counts = np.unique(ids[han] * _HAN_SPAN + side[han], return_counts=True)
        owner = pair // _HAN_SPAN
        p = pair_counts / total[owner]
        np.add.at(out, owner, -p * np.log(p))
    other = np.bincount(ids[~han], minlength=groups).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out += np.where(other > 0, other / np.maximum(total, 1) * np.log(np.maximum(total, 1)), 0.0)
    return out


def build_name_table(text: str, glossary: Any) -> NameTable:
    """The book's name table (``NameTable``): its frequent standalone strings, with their pinyin and the
    English names CC-CEDICT gives them."""
    table = NameTable(counts=discover_terms(text))
    for term in table.counts:
        for key in glossary.names_of.get(term, ()):
            owners = glossary.primary.get(key)
            if owners is None or term in owners:  # "Hubei" names 湖北 first, so it is not a name of 赤壁
                table.add(key, term)
    table.prefixes = frozenset(t[:i] for t in table.counts for i in range(1, len(t) + 1))
    from rag.aliases import build_aliases  # the book's own 姓X，名Y，字Z

    table.aliases = build_aliases([text])
    return table
