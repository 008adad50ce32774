"""The quotes a judge may choose from: the sources' own text cut into spans the quote checks accept
(``rag.checks.quotes``), for a JSON schema that constrains the judge's quote to them (an ``enum``).

A grammar-constrained model writes a quote from its first token and must stop where a span stops,
so a span must start where the words that state the answer start, and may end at any clause. The
spans are the runs of consecutive clauses of a sentence (``split_sentences``; clauses end at ，；：、
and at 。！？ inside quoted speech; a clause over ``CLAUSE_RUN_WEIGHT`` is cut by characters), each
also without the quotation marks that open or close it, each with a content weight between
``MIN_QUOTE_WEIGHT`` and ``MAX_QUOTE_WEIGHT``, plus a whole sentence that fits. When those of all
sources are too many: runs of up to ``MAX_RUN`` clauses, then every clause (with the next while it
is too short), then whole sentences (a long one cut into runs of clauses). (Whole sentences, then
runs of up to three clauses, then runs keeping their quotation marks were tried first with the 1.5B
model: it chose a span beside the answer when none began, or ended, as the words it meant;
bench/README.md.) Spans come in the sources' order (the best passage first) with each book
passage's chapter heading (where a quote may show where something happens), without repeats, until
``MAX_CHOICES`` spans or ``MAX_CHOICE_CHARS`` characters: a long context loses the end of its last
sources, never the first.
Pure: no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from rag.checks.quotes import MAX_QUOTE_WEIGHT, MIN_QUOTE_WEIGHT, Source
from rag.checks.sentences import split_sentences
from rag.checks.text import content_weight, normalize

# Spans in one schema, and their characters together (the grammar's size, not the prompt's): a
# self-hosted server (llama.cpp, the embedded runtime, vLLM) compiles a few thousand into its grammar
# in milliseconds; a hosted API gets the smaller caps (OpenAI documents 500 enum values and 15,000
# characters for strict schemas). A 400-character passage of the novel gives ~250-700 spans of any
# length, ~130-290 of up to three clauses.
MAX_CHOICES = 1200
MAX_CHOICE_CHARS = 48_000
HOSTED_MAX_CHOICES = 480
HOSTED_MAX_CHOICE_CHARS = 15_000
ANY_RUN = 99  # a span of any number of clauses (within MAX_QUOTE_WEIGHT)
MAX_RUN = 3  # clauses in one span at the next level
CLAUSE_RUN_WEIGHT = 40.0  # a clause longer than this is cut by characters
MAX_SPAN_CHARS = 400  # rag.schemas.MAX_FIELD_CHARS: a quote field holds no more
_OPENING = "“「『‘\"'"
_CLOSING = "”」』’\"'"
_CLAUSE_END = re.compile(r"[，,；;：:、。！？!?]+[”」』’\"]*")


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


def sentence_spans(sentence: str, max_run: int = MAX_RUN) -> list[str]:
    """A sentence as the spans a quote may be (see the module docstring), by where they start: runs
    of 1 to ``max_run`` clauses (a run under ``MIN_QUOTE_WEIGHT`` takes the next clause too);
    ``max_run=0``: the sentence alone, or, too long for a quote, its clauses packed into runs."""
    sentence = sentence.strip()
    if not sentence:
        return []
    fits = _weight(sentence) <= MAX_QUOTE_WEIGHT and _min_weight(sentence)
    if max_run == 0:
        return [sentence] if fits else _packed(_clauses(sentence)) if _weight(sentence) > MAX_QUOTE_WEIGHT else []
    clauses = _clauses(sentence)
    spans: list[str] = _bare(sentence) if fits else []
    for i in range(len(clauses)):
        size = 0
        for j in range(i + 1, len(clauses) + 1):
            run = "".join(clauses[i:j]).strip()
            if _weight(run) > MAX_QUOTE_WEIGHT:
                break
            if not _min_weight(run):
                continue
            size += 1
            spans += [v for v in _bare(run) if v not in spans]
            if size >= max_run:
                break
    return spans


def _bare(span: str) -> list[str]:
    """A span, and the same without the quotation marks that open or close it (a model copying
    speech often leaves them out: “这朵云… is written 这朵云…, …路哩！” as …路哩！)."""
    variants = [span, span.lstrip(_OPENING), span.rstrip(_CLOSING), span.lstrip(_OPENING).rstrip(_CLOSING)]
    return [v for v in dict.fromkeys(variants) if v and _min_weight(v)]


def _packed(clauses: list[str]) -> list[str]:
    """Consecutive clauses packed into runs of at most ``CLAUSE_RUN_WEIGHT`` (a short one joins the next)."""
    spans: list[str] = []
    current = ""
    for clause in clauses:
        if current and _weight(current + clause) > CLAUSE_RUN_WEIGHT and _min_weight(current):
            spans.append(current.strip())
            current = clause
        else:
            current += clause
    if current.strip():
        if _min_weight(current) or not spans:
            spans.append(current.strip())
        elif _weight(spans[-1] + current) <= MAX_QUOTE_WEIGHT:
            spans[-1] = (spans[-1] + current).strip()
    return [s for s in spans if _min_weight(s) and _weight(s) <= MAX_QUOTE_WEIGHT]


def _min_weight(text: str) -> bool:
    return content_weight(normalize(text, numerals=False).text) >= MIN_QUOTE_WEIGHT


def _source_spans(source: Source, max_run: int) -> Iterator[str]:
    if source.origin == "book" and source.label.strip():
        yield from sentence_spans(source.label, 0)
    for a, b in split_sentences(source.text):
        yield from sentence_spans(source.text[a:b], max_run)


#: From finest to coarsest: every run of clauses, runs of up to 3, every clause, whole sentences.
LEVELS = (ANY_RUN, MAX_RUN, 1, 0)


def quote_choices(sources: Sequence[Source], *, max_choices: int = MAX_CHOICES,
                  max_chars: int = MAX_CHOICE_CHARS) -> list[str]:
    """The spans of ``sources`` a constrained quote may be (see the module docstring): the finest
    level of ``LEVELS`` whose spans of every source fit ``max_choices`` and ``max_chars``; when not
    even whole sentences fit, those of the first sources that do."""
    for level in LEVELS:
        choices, complete = _collect(sources, level, max_choices, max_chars)
        if complete:
            return choices
    return choices


def _collect(sources: Sequence[Source], level: int, max_choices: int, max_chars: int) -> tuple[list[str], bool]:
    choices: list[str] = []
    seen: set[str] = set()
    chars = 0
    for source in sources:
        for span in _source_spans(source, level):
            span = span[:MAX_SPAN_CHARS]
            if span in seen:
                continue
            if len(choices) >= max_choices or chars + len(span) > max_chars:
                return choices, False
            seen.add(span)
            choices.append(span)
            chars += len(span)
    return choices, True
