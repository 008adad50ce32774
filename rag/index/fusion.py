"""Ways to merge a vector ranking and a keyword ranking into one (compared in bench/retrieval.py).

Each input is a list of ``(key, score)`` best first; the output is ``(key, fused score, sources)``
best first, where ``sources`` says which retrievers found the key.

``rrf_many`` is what the index uses: weighted reciprocal rank fusion of any number of rankings
(vector and keyword, for the question and for each rewritten query), with a guaranteed place in
the top k for the best hit of the rankings that ask for one. Equal-weight RRF of two rankings
pushes a hit that only one retriever found, even at rank 1, below every hit both found at middling
ranks; on the dev questions that lost 5 of 13 misses (bench/retrieval.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

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


class Ranking(NamedTuple):
    """One ranked list for ``rrf_many``: which retriever made it, its weight, and whether its best
    hit is guaranteed a place in the top k."""

    source: str  # "vector" or "keyword"
    weight: float
    items: Ranked
    guaranteed: bool = False


def rrf_many(rankings: Sequence[Ranking], n: int, k: int | None = None, rrf_k: int = RRF_K) -> Fused:
    """Weighted RRF: sum of ``weight / (rrf_k + rank)``; an exact tie goes to the key whose scores are
    closer to each ranking's best (RRF alone forgets that one retriever was far surer), then to the
    one seen first (deterministic). The best ``n``. The best hit of every ``guaranteed`` ranking is among
    the first ``k`` (default ``n``): if fusion put it lower, it takes the place of the lowest hit there
    that is not itself guaranteed (never the fused best), and that hit follows the first ``k``."""
    scores: dict[Hashable, float] = {}
    strength: dict[Hashable, float] = {}  # breaks exact ties: each ranking's score relative to its best
    found: dict[Hashable, set[str]] = {}
    for ranking in rankings:
        top = max((score for _, score in ranking.items), default=0.0)
        for rank, (key, score) in enumerate(ranking.items, start=1):
            scores[key] = scores.get(key, 0.0) + ranking.weight / (rrf_k + rank)
            strength[key] = strength.get(key, 0.0) + (ranking.weight * score / top if top > 0 else 0.0)
            found.setdefault(key, set()).add(ranking.source)
    first = {key: i for i, key in enumerate(scores)}
    order = {key: (-round(strength[key], 9), first[key]) for key in scores}
    ordered = sorted(scores, key=lambda key: (-scores[key], order[key]))
    k = n if k is None else min(k, n)
    must = list(dict.fromkeys(r.items[0][0] for r in rankings if r.guaranteed and r.items))[:k]
    head = ordered[:k]
    for key in must:
        if key in head:
            continue
        place = next((i for i in range(len(head) - 1, 0, -1) if head[i] not in must), None)  # never the best
        if place is not None:
            head[place] = key
    head.sort(key=lambda key: (-scores[key], order[key]))
    chosen = set(head)
    ordered = head + [key for key in ordered if key not in chosen]
    return [(key, scores[key], frozenset(found[key])) for key in ordered[:n]]
