"""The sentences of the sources that bear on a question, chosen by code for a small model to read
(``rag.agent.extract``): a small model reads a thousand tokens of chosen sentences in the time it
takes to read a quarter of the passages they come from, and it cannot copy a quote from text it was
not shown, so what it may cite is decided here, with the text model of the checks (``rag.checks.text``).

A sentence scores by the question's content terms it states (in any of their forms: older forms,
the book's other names of its people, numbers as digits), each weighted by how rare it is among the
sentences found (a term every passage repeats tells little), a word of two or more characters above a
single character; the best passage's sentences by a little more. The chosen sentences are the best
ones with the sentence after each (an answer often follows the sentence that names what is asked:
"武松道：'...' 前后共吃了十五碗"), in the sources' order, until ``budget_chars``. A question in
another script than the sources (an English question on a Chinese book) is read in the sources'
words for it (``rag.checks.translated.words_across``).
Pure: no model, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rag.checks.quotes import Source
from rag.checks.sentences import split_sentences
from rag.checks.text import Names, content, found_in, han_pairs, normalize
from rag.checks.translated import words_across

MAX_SENTENCE_CHARS = 240  # a longer sentence (classical dialogue runs on) is cut into pieces of this size
RANK_BONUS = 0.15  # of the score, for each rank a source is above the last one searched
MIN_PIECE_CHARS = 4  # a piece shorter than this (a lone 道：) is not worth a line
KEEP = 0.3  # of the best sentence's score, the least a sentence needs to be chosen


@dataclass(frozen=True)
class Chosen:
    """One chosen sentence: its id as the prompt shows it ("2.3": source 2, sentence 3), its source's
    number, its text as the source writes it, and its score (0: taken as the next sentence of one that scored)."""

    sid: str
    source: int
    text: str
    score: float


def _pieces(text: str) -> list[str]:
    """The sentences of ``text``, a sentence over ``MAX_SENTENCE_CHARS`` cut at its clauses."""
    out: list[str] = []
    for a, b in split_sentences(text):
        sentence = " ".join(text[a:b].split())
        while len(sentence) > MAX_SENTENCE_CHARS:
            cut = max((sentence.rfind(mark, 0, MAX_SENTENCE_CHARS) for mark in "，,；;：:"), default=-1)
            cut = cut + 1 if cut > MAX_SENTENCE_CHARS // 3 else MAX_SENTENCE_CHARS
            out.append(sentence[:cut])
            sentence = sentence[cut:].lstrip()
        if len(sentence) >= MIN_PIECE_CHARS:
            out.append(sentence)
    return out


def all_sentences(sources: Sequence[Source]) -> list[Chosen]:
    """Every sentence of ``sources`` with its id, unscored."""
    return [Chosen(f"{src.number}.{k}", src.number, piece, 0.0)
            for src in sources for k, piece in enumerate(_pieces(src.text), start=1)]


def bearing_sentences(question: str, sources: Sequence[Source], *, budget_chars: int = 700,
                      names: Names | None = None) -> list[Chosen]:
    """The sentences of ``sources`` that bear most on ``question`` (see the module docstring), at most
    ``budget_chars`` characters together, in the sources' order. A question none of whose terms any
    sentence states (a question in another language than the book) gets the best sources' first
    sentences, by rank: code cannot tell which bear on it, and the model may still."""
    sentences = all_sentences(sources)
    if not sentences:
        return []
    terms = {t: forms for t, forms in content(question, names).terms}
    # two Han characters the question writes together (武松, 喝酒) say more than either alone (松 of 松柏)
    pairs = {p: frozenset({p}) for p in han_pairs(normalize(question).text)}
    # a question in another script than the sources: the sources' own words for it, each on its own
    # (no pair across two of them)
    for word in words_across(question, [src.text for src in sources]):
        terms.update((t, forms) for t, forms in content(word, names).terms if t not in terms)
        pairs.update((p, frozenset({p})) for p in han_pairs(normalize(word).text) if p not in pairs)
    norms = [normalize(s.text).text for s in sentences]
    ranks = {src.number: r for r, src in enumerate(sources)}
    last = max(len(sources) - 1, 1)
    scores = [0.0] * len(sentences)
    for group, weight in ((terms, 1.0), (pairs, 2.0)):
        for t, forms in group.items():
            hits = [i for i, n in enumerate(norms) if found_in(forms, n)]
            for i in hits:
                rarity = math.log(1 + len(sentences) / len(hits))
                scores[i] += rarity * weight * (2.0 if len(t) > 1 and not t.isdigit() else 1.0)
    for i, s in enumerate(sentences):
        scores[i] *= 1 + RANK_BONUS * (last - ranks.get(s.source, last)) / last
    best = max(scores)
    # the sentences that state the question's terms nearly as well as the best one (and the sentence
    # after each); when none states any, the best sources' sentences as they come
    order = [i for i in sorted(range(len(sentences)), key=lambda i: (-scores[i], i)) if scores[i] >= KEEP * best > 0]
    if not order:
        order = list(range(len(sentences)))
    seen: set[str] = set()
    picked: dict[int, float] = {}
    used = 0
    for i in order:
        for j in (i, i + 1):
            if j in picked or j >= len(sentences) or (j == i + 1 and sentences[j].source != sentences[i].source):
                continue
            if sentences[j].text in seen:  # a passage that repeats itself is shown once
                continue
            seen.add(sentences[j].text)
            size = len(sentences[j].text)
            if used + size > budget_chars and picked:
                continue
            picked[j] = scores[j] if j == i else 0.0
            used += size
        if used >= budget_chars:
            break
    return [Chosen(sentences[j].sid, sentences[j].source, sentences[j].text, round(picked[j], 3))
            for j in sorted(picked)]
