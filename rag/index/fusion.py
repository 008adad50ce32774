"""Ways to merge a vector ranking and a keyword ranking into one (compared in bench/retrieval.py).

Each input is a list of ``(key, score)`` best first; the output is ``(key, fused score, sources)``
best first, where ``sources`` says which retrievers found the key.

``rrf_many`` is what the index uses: weighted reciprocal rank fusion of any number of rankings
(vector and keyword, for the question and for each rewritten or translated query and other names),
with rrf_k = 10 and a guaranteed place in the first 5 for each retriever's best hit over all its
rankings. Equal-weight RRF with rrf_k = 60 pushes a hit that only one retriever found, even at rank
1 or 2, below every hit several rankings found at middling ranks (measured: a keyword rank 3 fell to
16, an English question's vector rank 2 to 13); bench/retrieval.py --sweep compares the settings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
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


# rrf_many's defaults, chosen with bench/retrieval.py --sweep on the two dev sets (xiyouji, sanguo_aliases):
# hybrid chunk@5 0.683 / 0.909 against 0.633 / 0.818 with (0, False, 60), plain equal-weight RRF
PER_SIDE = 1  # guaranteed hits of each retriever
RRF_K_MANY = 10  # rrf_many's constant: smaller than 60 lets a single ranking's first places count more
BY_SIDE = False  # fuse each retriever's rankings first, then the retrievers (one vote each)
SIDE_WINDOW = 5  # ... within this many first places (or the k asked for, when that is more)
# A second, deeper guarantee: each retriever's best DEEP[0] hits within the first DEEP[1] places. A
# keyword hit at rank 3 that one side alone found fell to 10-17 by RRF (each retriever's best in the
# first 5 kept only the first).
DEEP = (3, 10)
FUSED_BY = ("rank", "score", "blend")  # rrf_many's ``by``: see there
# No hit lower than a * (its best rank on any one side) + b: a keyword hit at rank 7 that the vector side
# missed fell to 14-17 (RRF adds the other side's middling hits above it). None: off.
FLOOR: tuple[float, float] | None = None


def _side_best(rankings: Sequence[Ranking], source: str, depth: int, rrf_k: int) -> list[Hashable]:
    """The best ``depth`` keys of one retriever over all its rankings (the question's, rewritten and
    translated queries', other names'): by their best rank in any of them (a hit one query ranks 2nd
    is among the retriever's best even if no other query finds it), then by RRF within the side, then
    first seen."""
    best: dict[Hashable, int] = {}
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        if ranking.source != source:
            continue
        for rank, (key, _) in enumerate(ranking.items, start=1):
            best[key] = min(best.get(key, rank), rank)
            scores[key] = scores.get(key, 0.0) + ranking.weight / (rrf_k + rank)
    first = {key: i for i, key in enumerate(scores)}
    return sorted(scores, key=lambda key: (best[key], -scores[key], first[key]))[:depth]


def _side_rrf(rankings: Sequence[Ranking], source: str, rrf_k: int) -> list[Hashable]:
    """One retriever's rankings fused by RRF (ties by first seen), for ``by_side``."""
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        if ranking.source == source:
            for rank, (key, _) in enumerate(ranking.items, start=1):
                scores[key] = scores.get(key, 0.0) + ranking.weight / (rrf_k + rank)
    first = {key: i for i, key in enumerate(scores)}
    return sorted(scores, key=lambda key: (-scores[key], first[key]))


def _normalised(ranking: Ranking) -> dict[Hashable, float]:
    """The ranking's scores min-max scaled to 0..1 over its own candidates (1: its best)."""
    values = [score for _, score in ranking.items]
    lo, hi = min(values), max(values)
    return {key: (score - lo) / (hi - lo) if hi > lo else 1.0 for key, score in ranking.items}


def _place(ordered: list[Hashable], must: Sequence[Hashable], kept: set[Hashable], window: int) -> list[Hashable]:
    """``ordered`` with every key of ``must`` among its first ``window``: one that is lower takes the
    place of the lowest key there that is neither in ``must`` nor ``kept`` (never the first), and the
    keys it displaces follow the window, in order."""
    head = ordered[:window]
    protected = kept | set(must)
    for key in must:
        if key in head:
            continue
        place = next((i for i in range(len(head) - 1, 0, -1) if head[i] not in protected), None)
        if place is not None:
            head[place] = key
    # the keys brought up go to the bottom of the window, best first; the rest keep their order
    chosen = set(head)
    rest = [key for key in ordered[:window] if key in chosen]
    brought = [key for key in ordered if key in chosen and key not in rest]
    head = rest + brought
    return head + [key for key in ordered if key not in chosen]


@dataclass(frozen=True)
class RrfOptions:
    """How ``rrf_many`` fuses and what it guarantees (see there). None: the module's default at the
    time of the call (``RRF_K_MANY``, ``PER_SIDE``, ``SIDE_WINDOW``, ``BY_SIDE``, ``DEEP``, ``FLOOR``),
    so that bench/retrieval.py can sweep them."""

    rrf_k: int | None = None
    per_side: int | None = None
    window: int | None = None
    by_side: bool | None = None
    deep: tuple[int, int] | None = None
    by: str = "rank"
    floor: tuple[float, float] | None = None


def rrf_many(rankings: Sequence[Ranking], n: int, k: int | None = None, options: RrfOptions = RrfOptions()) -> Fused:
    """Weighted RRF: sum of ``weight / (rrf_k + rank)``; an exact tie goes to the key whose scores are
    closer to each ranking's best (RRF alone forgets that one retriever was far surer), then to the
    one seen first (deterministic). The best ``n``.

    Guaranteed places, so that a strong hit of one retriever alone is not drowned by hits both found
    at middling ranks (an English question's keyword rank 3 fell to 16 by RRF alone):

    - ``per_side`` = 0: the best hit of every ``guaranteed`` ranking is among the first ``k`` (default
      ``n``) (plain RRF with a guarantee of one);
    - ``per_side`` >= 1 (default ``PER_SIDE``): for each retriever with a guaranteed ranking, its best
      ``per_side`` hits over all its rankings (``_side_best``: the question's, and the translated or
      rewritten queries') are among the first ``max(k, window)`` (``window`` default ``SIDE_WINDOW``),
      at most ``n``.

    - ``deep`` = (d, w) (default ``DEEP``; (0, 0): none), with ``per_side`` >= 1: besides, the first
      ``d`` of each guaranteed ranking (the question's own), then each retriever's best ``d`` over all
      its rankings, are among the first ``w`` (as many as fit below the fused best).

    A guaranteed hit that fusion put lower takes the place of the lowest hit there that is not itself
    guaranteed (never the fused best), and that hit follows them.

    ``by``: "rank" (RRF as above); "score": each ranking's scores min-max scaled over its candidates,
    weighted and summed (a hit far ahead of the next on one side counts for more than its rank);
    "blend": RRF plus the scaled scores worth at most one first place (``weight / (rrf_k + 1)``)."""
    by, window = options.by, options.window
    if by not in FUSED_BY:
        raise ValueError(f"unknown fusion {by!r} ({', '.join(FUSED_BY)})")
    per_side = PER_SIDE if options.per_side is None else options.per_side
    rrf_k = RRF_K_MANY if options.rrf_k is None else options.rrf_k
    by_side = BY_SIDE if options.by_side is None else options.by_side
    scores: dict[Hashable, float] = {}
    strength: dict[Hashable, float] = {}  # breaks exact ties: each ranking's score relative to its best
    found: dict[Hashable, set[str]] = {}
    for ranking in rankings:
        top = max((score for _, score in ranking.items), default=0.0)
        for rank, (key, score) in enumerate(ranking.items, start=1):
            scores[key] = scores.get(key, 0.0) + ranking.weight / (rrf_k + rank)
            strength[key] = strength.get(key, 0.0) + (ranking.weight * score / top if top > 0 else 0.0)
            found.setdefault(key, set()).add(ranking.source)
    if by_side:  # each retriever's rankings fused first, then the retrievers' fused rankings, one vote each
        sources = list(dict.fromkeys(r.source for r in rankings))
        side_scores = {key: 0.0 for key in scores}
        for source in sources:
            for rank, key in enumerate(_side_rrf(rankings, source, rrf_k), start=1):
                side_scores[key] += 1.0 / (rrf_k + rank)
        scores = side_scores
    if by != "rank":
        scaled = {key: 0.0 for key in scores}
        for ranking in rankings:
            if ranking.items:
                for key, value in _normalised(ranking).items():
                    scaled[key] += ranking.weight * value
        unit = 1.0 / (rrf_k + 1) if by == "blend" else 1.0
        scores = {key: (scores[key] if by == "blend" else 0.0) + unit * scaled[key] for key in scores}
    first = {key: i for i, key in enumerate(scores)}
    order = {key: (-round(strength[key], 9), first[key]) for key in scores}
    ordered = sorted(scores, key=lambda key: (-scores[key], order[key]))
    k = n if k is None else min(k, n)
    sides: list[str] = []
    if per_side <= 0:
        must = list(dict.fromkeys(r.items[0][0] for r in rankings if r.guaranteed and r.items))[:k]
    else:
        k = min(n, max(k, SIDE_WINDOW if window is None else window))
        # every retriever once any ranking asks for a guarantee: an English question's own keyword ranking
        # finds nothing (and is not passed), its translation's does
        sides = list(dict.fromkeys(r.source for r in rankings)) if any(r.guaranteed for r in rankings) else []
        best = [_side_best(rankings, side, per_side, rrf_k) for side in sides]
        # alternately: each side's best, then each side's second...
        must = list(dict.fromkeys(key for depth in range(per_side) for keys in best if depth < len(keys)
                                  for key in [keys[depth]]))[: max(k - 1, 1)]
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
    depth, deep_window = DEEP if options.deep is None else options.deep
    if per_side > 0 and sides and depth > 0:
        # the question's own rankings' first places before the other queries' (translated, other names)
        deeper = [[key for key, _ in r.items[:depth]] for r in rankings if r.guaranteed]
        deeper += [_side_best(rankings, side, depth, rrf_k) for side in sides]
        extra = list(dict.fromkeys(key for d in range(depth) for keys in deeper if d < len(keys) for key in [keys[d]]))
        ordered = _place(ordered, extra[: max(min(n, deep_window) - 1, 1)], set(must), min(n, deep_window))
    floor = FLOOR if options.floor is None else options.floor
    if floor and floor[0] > 0:
        ordered = _floored(ordered, rankings, rrf_k, floor)
    return [(key, scores[key], frozenset(found[key])) for key in ordered[:n]]


def _floored(ordered: list[Hashable], rankings: Sequence[Ranking], rrf_k: int,
             floor: tuple[float, float]) -> list[Hashable]:
    """``ordered`` with each key at most at place ``a * r + b``, r its best rank on one retriever
    (``_side_best`` over that retriever's rankings): earliest deadline first whenever one is due, else
    the next key in ``ordered``. Keys only move up; a key that moves down has a later deadline."""
    a, b = floor
    deadline: dict[Hashable, float] = {}
    for side in dict.fromkeys(r.source for r in rankings):
        for rank, key in enumerate(_side_best(rankings, side, len(ordered), rrf_k), start=1):
            deadline[key] = min(deadline.get(key, float("inf")), a * rank + b)
    position = {key: i for i, key in enumerate(ordered)}
    placed: set[Hashable] = set()
    out: list[Hashable] = []
    cursor = 0
    while len(out) < len(ordered):
        place = len(out) + 1
        due = [key for key in ordered if key not in placed and deadline.get(key, float("inf")) <= place]
        if due:
            key = min(due, key=lambda k: (deadline[k], position[k]))
        else:
            while ordered[cursor] in placed:
                cursor += 1
            key = ordered[cursor]
        placed.add(key)
        out.append(key)
    return out
