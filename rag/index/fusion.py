"""Ways to merge a vector ranking and a keyword ranking into one (compared in bench/retrieval.py).

Each input is a list of ``(key, score)`` best first; the output is ``(key, fused score, sources)``
best first, where ``sources`` says which retrievers found the key.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

Ranked = Sequence[tuple[Hashable, float]]
Fused = list[tuple[Hashable, float, frozenset[str]]]

RRF_K = 60
WEIGHT_VECTOR = 0.5


def _sources(vector: Ranked, keyword: Ranked) -> dict[Hashable, set[str]]:
    found: dict[Hashable, set[str]] = {}
    for key, _ in vector:
        found.setdefault(key, set()).add("vector")
    for key, _ in keyword:
        found.setdefault(key, set()).add("keyword")
    return found


def rrf(vector: Ranked, keyword: Ranked, k: int) -> Fused:
    """Reciprocal rank fusion: sum of 1 / (60 + rank)."""
    scores: dict[Hashable, float] = {}
    for ranking in (vector, keyword):
        for rank, (key, _) in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    found = _sources(vector, keyword)
    ordered = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
    return [(key, score, frozenset(found[key])) for key, score in ordered]


def union(vector: Ranked, keyword: Ranked, k: int) -> Fused:
    """Interleave the two rankings (vector first), skipping duplicates, until ``k`` are taken.
    The score is 1 / position so that it still sorts best first."""
    found = _sources(vector, keyword)
    out: Fused = []
    seen: set[Hashable] = set()
    for i in range(max(len(vector), len(keyword))):
        for ranking in (vector, keyword):
            if i < len(ranking) and ranking[i][0] not in seen and len(out) < k:
                key = ranking[i][0]
                seen.add(key)
                out.append((key, 1.0 / (len(out) + 1), frozenset(found[key])))
    return out


def _minmax(ranking: Ranked) -> dict[Hashable, float]:
    if not ranking:
        return {}
    values = [s for _, s in ranking]
    lo, hi = min(values), max(values)
    span = hi - lo
    return {key: (score - lo) / span if span > 0 else 1.0 for key, score in ranking}


def weighted(vector: Ranked, keyword: Ranked, k: int, weight_vector: float = WEIGHT_VECTOR) -> Fused:
    """Min-max normalise each ranking's scores, then ``w * vector + (1 - w) * keyword``."""
    v, kw = _minmax(vector), _minmax(keyword)
    found = _sources(vector, keyword)
    scores = {key: weight_vector * v.get(key, 0.0) + (1 - weight_vector) * kw.get(key, 0.0) for key in found}
    ordered = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
    return [(key, score, frozenset(found[key])) for key, score in ordered]


METHODS: dict[str, Callable[[Ranked, Ranked, int], Fused]] = {"rrf": rrf, "union": union, "weighted": weighted}
