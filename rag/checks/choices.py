"""The quotes a judge may choose from: the sources' own text cut into spans the quote checks accept
(``rag.checks.quotes``), for a JSON schema that constrains the judge's quote to them (an ``enum``).

A span is a whole sentence (``split_sentences``) when its content weight is at most
``MAX_QUOTE_WEIGHT``; a longer sentence is cut at its clause marks (，；：、) into runs of clauses of
at most ``CLAUSE_RUN_WEIGHT`` each (a clause longer than that on its own is cut by characters). A span
under ``MIN_QUOTE_WEIGHT`` (a speech tag, "行者道：") is joined to the next one of its sentence. Spans
come in the sources' order (the best passage first) with each book passage's chapter heading (where
a quote may show where something happens), without repeats, until ``MAX_CHOICES`` spans or
``MAX_CHOICE_CHARS`` characters: a long context loses the end of its last sources, never the first.
Pure: no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from rag.checks.quotes import MAX_QUOTE_WEIGHT, MIN_QUOTE_WEIGHT, Source
from rag.checks.sentences import split_sentences
from rag.checks.text import content_weight, normalize

MAX_CHOICES = 240  # spans in one schema (6 passages of 1,200 characters of Chinese prose: ~150-220)
MAX_CHOICE_CHARS = 16_000  # their characters together (the grammar's size, not the prompt's)
CLAUSE_RUN_WEIGHT = 40.0  # a long sentence's pieces: short enough to show which words state the answer
MAX_SPAN_CHARS = 400  # rag.schemas.MAX_FIELD_CHARS: a quote field holds no more
_CLAUSE_END = re.compile(r"[，,；;：:、]")


def _weight(text: str) -> float:
    return content_weight(normalize(text).text)


def _clauses(sentence: str) -> list[str]:
    """The clauses of a sentence, each with its closing mark."""
    pieces, start = [], 0
    for m in _CLAUSE_END.finditer(sentence):
        pieces.append(sentence[start:m.end()])
        start = m.end()
    if start < len(sentence):
        pieces.append(sentence[start:])
    out: list[str] = []
    for piece in pieces:  # a clause too long for one span is cut by characters
        while _weight(piece) > CLAUSE_RUN_WEIGHT and len(piece) > 1:
            cut = _cut_at_weight(piece, CLAUSE_RUN_WEIGHT)
            out.append(piece[:cut])
            piece = piece[cut:]
        out.append(piece)
    return out


def _cut_at_weight(text: str, limit: float) -> int:
    """The longest prefix of ``text`` whose content weight is at most ``limit`` (at least one character)."""
    total = 0.0
    for i, ch in enumerate(text):
        total += content_weight(normalize(ch).text)
        if total > limit:
            return max(1, i)
    return len(text)


def sentence_spans(sentence: str) -> list[str]:
    """A sentence as the spans a quote may be (see the module docstring)."""
    sentence = sentence.strip()
    if not sentence:
        return []
    if _weight(sentence) <= MAX_QUOTE_WEIGHT:
        return [sentence] if _min_weight(sentence) else []
    spans: list[str] = []
    current = ""
    for clause in _clauses(sentence):
        joined = current + clause
        if current and _weight(joined) > CLAUSE_RUN_WEIGHT and _min_weight(current):
            spans.append(current.strip())
            current = clause
        else:
            current = joined
    if current.strip():
        if _min_weight(current) or not spans:
            spans.append(current.strip())
        elif _weight(spans[-1] + current) <= MAX_QUOTE_WEIGHT:
            spans[-1] = (spans[-1] + current).strip()
    return [s for s in spans if _min_weight(s) and _weight(s) <= MAX_QUOTE_WEIGHT]


def _min_weight(text: str) -> bool:
    return content_weight(normalize(text, numerals=False).text) >= MIN_QUOTE_WEIGHT


def _source_spans(source: Source) -> Iterator[str]:
    if source.origin == "book" and source.label.strip():
        yield from sentence_spans(source.label)
    for a, b in split_sentences(source.text):
        yield from sentence_spans(source.text[a:b])


def quote_choices(sources: Sequence[Source], *, max_choices: int = MAX_CHOICES,
                  max_chars: int = MAX_CHOICE_CHARS) -> list[str]:
    """The spans of ``sources`` a constrained quote may be (see the module docstring)."""
    choices: list[str] = []
    seen: set[str] = set()
    chars = 0
    for source in sources:
        for span in _source_spans(source):
            span = span[:MAX_SPAN_CHARS]
            if span in seen:
                continue
            if len(choices) >= max_choices or chars + len(span) > max_chars:
                return choices
            seen.add(span)
            choices.append(span)
            chars += len(span)
    return choices
