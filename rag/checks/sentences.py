"""Answer sentences checked against the sources they cite, the way models cite.

- Sentences end at 。！？!? and line breaks, never inside quoted speech (“…。…” / 「…」); a ；
  does not end one. Citations right after the punctuation ("…。[2]") stay with their sentence.
- A citation closing a paragraph or a run of sentences covers them back to the previous citation;
  a short direct answer ("是的。", "柳条。") followed by a cited sentence is covered by its citation.
  "Uncited" stays the mark for a claim with no citation in reach.
- A cited sentence is supported when its facts (numbers, chapter numbers, quoted speech, names in any
  of their forms) are in its cited sources (chapter headings included) and most of its content is
  (classical and modern forms alike: rag.checks.text), with no run of its content the sources lack
  ("赵云" where the source says 张飞). A sentence that calls the book its source while citing only web
  pages is flagged.
- Supported by code alone only when the sources say it in its words and order (function words apart):
  a sentence whose words are all there but not as it puts them (another person doing the thing,
  another action, a paraphrase) is "not checked"; a model reading the source may confirm it
  (``rag.checks.labels``), code cannot.
Pure: no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Literal

from rag.checks.facts import (
    ASKS,
    CITATION,
    CLAUSES,
    HAN_NUMERALS,
    INDEFINITE,
    LIST_MARKER,
    NUMBER,
    QUOTED,
    SOME,
    WORD_NUMERAL,
    date_in_context,
    fact_in,
    facts_of,
)
from rag.checks.negation import negation_differs
from rag.checks.quotes import Source, source_names
from rag.checks.text import (
    Names,
    contains,
    content,
    found_in,
    is_han,
    latin_words,
    normalize,
    script_of,
    stem,
)
from rag.checks.wording import (
    ATTRIBUTION,
    FOLLOWS,
    LABEL,
    label_known,
    lead_in,
    missing_subject,
    sum_of,
    unaligned,
    unclaimed_quotes,
)
from rag.i18n import Msg

# not_checked: a claim code cannot confirm (never "supported"): in another language than its sources, or
# its words there but not as the sentence puts them
SentenceStatus = Literal["supported", "unsupported", "uncited", "no_claim", "not_checked"]
_TRAILING_CITES = re.compile(rf"[ \t]*(?:{CITATION.pattern}[ \t]*)+")
_BOOK_WORDS = ("书中", "原著", "本书", "原文", "小说中", "导读", "the book", "the novel", "the guide", "book sources")
_HEDGES = ("无法确认", "无法从资料中确认", "不能确认", "未能确认", "没有提到", "未提及", "尚缺", "缺少", "没有找到",
           "没有说明", "未说明", "没有记载", "未记载", "资料中没有", "来源中没有", "无从",
           "cannot confirm", "can't confirm", "could not be confirmed", "cannot be confirmed", "not covered",
           "not mentioned", "no source", "missing", "not stated", "does not say", "do not say")
_LIST_NUMBER = re.compile(r"^\s*(?:[-*+•]\s*)?(?:\*\*)?\d+\.$")  # "1." opening a numbered line is not a sentence
# a point that ends a title or an initial, not the sentence ("Mr. Collins", "J. Smith", "e.g. this")
_ABBREVIATION = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Mme|Mlle|Dr|St|Mt|Jr|Sr|Prof|Rev|Col|Capt|Gen|Lt|Sgt|Hon|Messrs|No|Nos|"
                           r"vs|etc|e\.g|i\.e|cf|ca|approx|vol|ch|pp?|fig)|(?<![A-Za-z])[A-Z])\.$", re.I)
_HEDGE_PATTERN = re.compile(r"(?:无法|不能|未能|没法)[^，。！？]{0,10}(?:确认|确定|证实|判断)|(?:没有|未)[^，。！？]{0,6}(?:提到|提及|说明|记载|写明|出现|写到|写出|交代)")
_OPEN_QUOTES = {"“": "”", "「": "」", "『": "』", "‘": "’"}
_ENDS = "。！？!?"
MIN_COVERAGE = 0.6  # share of a cited sentence's content terms its cited sources state
SHORT_CLAIM = 12  # content characters up to which an uncited sentence before a cited one is covered by it
SHORT_WORDS = 2  # a sentence of a stated fact and at most this many other words is checked by the fact
NOVEL_RUN = 4  # this many adjacent content characters, none in the cited sources: something they do not say
# ...or this many, none in the sentences of the sources that state the rest of the claim (0: not used; 2 and
# 3 flagged a third of the faithful sentences of the dev sets' capable answers, paraphrases mostly)
REGION_RUN = 0
CLAUSE_TERMS = 3  # a clause of this many content terms or more is checked on its own...
CLAUSE_COVERAGE = 0.4  # ...and needs this share of them stated by those sentences (tuned on the dev sets)


@dataclass(frozen=True)
class SentenceCheck:
    """One sentence of the answer checked against the sources it cites: the one record of a checked
    sentence, kept in the graph's state, shown by the page and returned by the script API (its
    fields in this order)."""

    text: str  # the sentence as written (citations included)
    start: int  # offset in the answer
    end: int
    citations: tuple[int, ...]  # its own, or those of the citation that closes its run
    status: SentenceStatus
    reason: Msg | str  # why (codes ``check.sentence_*``; ``str(reason)`` is the English text; plain text from old reports)
    origin: Literal["book", "web", "both"] | None = None  # where its support is


@dataclass(frozen=True)
class AnswerCheck:
    sentences: tuple[SentenceCheck, ...] = field(default_factory=tuple)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence (see the module docstring)."""
    spans: list[tuple[int, int]] = []
    start, i = 0, 0
    closing: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if closing and ch == closing[-1]:
            closing.pop()
        elif ch in _OPEN_QUOTES:
            closing.append(_OPEN_QUOTES[ch])
        elif ch == "\n":
            closing.clear()  # a quote never runs over a line break
            spans.append((start, i))
            start = i + 1
        elif not closing and (ch in _ENDS or (ch == "." and (i + 1 == n or text[i + 1].isspace())
                                              and not _LIST_NUMBER.match(text[text.rfind("\n", 0, i) + 1:i + 1])
                                              and not _ABBREVIATION.search(text, max(0, i - 12), i + 1))):
            end = i + 1
            while end < n and text[end] in _ENDS + "”」』’\"*":
                end += 1
            tail = _TRAILING_CITES.match(text, end)
            if tail and tail.group(0).strip():
                end = tail.end()
            spans.append((start, end))
            start = end
            i = end
            continue
        i += 1
    if start < n:
        spans.append((start, n))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a and normalize(text[a:b], numerals=False).text:
            out.append((a, b))
    return out


def citations_of(sentence: str) -> tuple[int, ...]:
    found: list[int] = []
    for group in CITATION.findall(sentence):
        for token in re.split(r"\s*[,，、]\s*", group):
            if "-" in token:
                a, _, b = token.partition("-")
                if a.strip().isdigit() and b.strip().isdigit() and int(b) - int(a) < 20:
                    found.extend(range(int(a), int(b) + 1))
            elif token.strip().isdigit():
                found.append(int(token))
    return tuple(dict.fromkeys(found))


def _is_hedge(sentence: str) -> bool:
    low = sentence.lower()
    return any(h in low for h in _HEDGES) or bool(_HEDGE_PATTERN.search(sentence))


_LEAD_IN = re.compile(rf"(?:{FOLLOWS})\s*[:：]?\s*$", re.IGNORECASE)


def _is_heading(sentence: str) -> bool:
    """A heading, or a lead-in that only says a list follows ("该段情节如下[1]："), cited or not."""
    bare = CITATION.sub("", sentence).rstrip()
    stripped = bare.strip().strip("#*>-:： ").strip()
    if not stripped:
        return True
    if len(normalize(stripped).text) > 12 or NUMBER.search(stripped):
        return False
    if not CITATION.search(sentence) and sentence.rstrip().endswith((":", "：", "**")):
        return True
    return bare.endswith((":", "：")) and bool(_LEAD_IN.search(bare))


_URL = re.compile(r"https?://[^\s)）>\]]+")


def _claims(sentence: str) -> bool:
    body = CITATION.sub(" ", sentence)
    if _URL.search(body) and len(content(_URL.sub(" ", body)).terms) <= 5 and not facts_of(_URL.sub(" ", body)):
        return False  # a pointer to a page ("分集列表见（URL）"), not a claim
    return not (_is_heading(sentence) or _is_hedge(sentence)
                or (len(content(body).terms) < 3 and not facts_of(sentence)))


def _novel_run(terms: Sequence[tuple[str, frozenset[str]]], haystack: str, size: int = 0) -> str | None:
    """The first run of ``size`` (default ``NOVEL_RUN``) adjacent Han content terms none of which
    ``haystack`` states."""
    size = size or NOVEL_RUN
    run: list[str] = []
    for term, forms in terms:
        if is_han(term[0]) and not found_in(forms, haystack):
            run.append(term)
            if len(run) >= size:
                return "".join(run)
        else:
            run = []
    return None


# --------------------------------------------------------------------------- what a sentence claims
_YES_NO_QUESTION = re.compile(r"吗|是否|是不是|有没有|能否|可否|^\s*(?:did|does|do|is|was|were|are|can|could|has|had|"
                              r"have|will|would)\b", re.I)
ECHO_NEW = 0.2  # share of new content terms up to which a sentence with a question word restates the question
_QUESTION_WORDS = frozenset({"问题", "回答", "本题", "题目", "question", "answer"})
# Words a sentence uses to speak of the text it cites, not of what the text says ("这段材料对此有相关的
# 叙述", "the passage discusses"): beside a question word they add nothing to the question
_TEXT_WORDS = re.compile(r"问题|题目|材料|段落|这段|该段|此段|文中|原文|本文|上文|文字|内容|所涉|涉及|提及|提到|谈到|叙述|"
                         r"记载|介绍|讨论|说明|相关|有关|之一|需要|弄清|事实认定|判决书?|"
                         r"\b(?:passage|text|source|mentions?|discuss(?:es)?|describes?|relevant|concerns?)\b",
                         re.I)


def _units(text: str, script: str) -> int:
    """How much of ``text`` is in ``script``: Han characters, or Latin words of three letters or more
    (not the x of a redacted name, x2)."""
    if script == "han":
        return sum(1 for ch in text if is_han(ch))
    return sum(1 for w in latin_words(text) if len(w) >= 3 and w.isalpha())


OTHER_SCRIPT_FACTOR = 3
# Words that stand where a fact should be (某位姐姐, 若干亩, 一定的方式, 某些方面, "said something"): a sentence that
# answers with one its sources do not use says which one no more than the question did
_PLACEHOLDER = re.compile(SOME.format(more="|方面") + r"|若干|一定的|一些|有关方面|"
                          r"\b(?:something|someone|somebody|somewhere)\b", re.I)


def _placeholder(body: str, cited_text: str) -> str | None:
    hay = normalize(cited_text, numerals=False).text
    for m in _PLACEHOLDER.finditer(body):
        if m.group(0).lower() not in hay:
            return m.group(0)
    return None


# a sentence about the question's own words ("问题中的'治疗'应理解为'处理'", "The question's 'Dy虫' means
# Dyrrachium") reads the question, it says nothing of the sources
_ABOUT_QUESTION = re.compile(r"(?:问题|题目|提问|题)(?:中|里)(?:的|所说的|所问的)?|the question(?:'s|’s)?\s+(?:\w+\s+)?[\"“']",
                             re.I)


def _is_echo(sentence: str, question: str | None, names: Names) -> bool:
    """A sentence that restates the question instead of answering it: it asks (ends with a question
    mark), or it says nothing the question does not say and reads as a question (a question word:
    几, 什么, how), or restates a question that is not a yes/no one."""
    bare = CITATION.sub(" ", sentence).strip().rstrip("*_ ")
    if bare.endswith(("?", "？")):
        return True
    if not question or not question.strip():
        return False
    q = normalize(question).text
    q_stems = {stem(w) for w in latin_words(question)}
    asks = bool(ASKS.search(bare))
    if INDEFINITE.search(bare):  # a placeholder fills the gap: read it as the question word it stands for
        bare, asks = INDEFINITE.sub(" ", bare), True
    if asks:  # "这段材料谈到了…的问题": the words that speak of the text and the question say nothing
        bare = _TEXT_WORDS.sub(" ", bare)
    terms = content(bare, names).terms
    new = [t for t, forms in terms if not found_in(forms, q) and t not in q_stems]
    if asks:  # "…是否收到了赔偿款，正是要回答的问题": words naming the question add nothing to it
        new = [t for t in new if t not in _QUESTION_WORDS]
    new_facts = [f for f in facts_of(bare) if not contains(q, f)]
    if new_facts or not terms:
        return False
    if not new:
        return asks or not _YES_NO_QUESTION.search(question)
    return len(new) <= ECHO_NEW * len(terms) and asks


_SOURCE_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;\n]*|[^。！？!?；;\n]+$")
_EN_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)]*\s+")
WINDOW_SENTENCES = 3  # a claim is checked against at most this many adjacent sentences of a source...
REGIONS = 2  # ...and at most this many such windows together (a sentence joining two places of a passage)


def _source_sentences(text: str) -> list[str]:
    out = []
    for m in _SOURCE_SENTENCE.finditer(text):
        out += [p for p in _EN_SENTENCE.split(m.group(0)) if p.strip()]
    return out


def _windows(sources: Sequence[Source]) -> list[str]:
    """Runs of 1..``WINDOW_SENTENCES`` adjacent sentences of each source's text (its heading apart)."""
    found: list[str] = []
    for src in sources:
        sentences = _source_sentences(src.text)
        for i in range(len(sentences)):
            for k in range(1, WINDOW_SENTENCES + 1):
                if i + k <= len(sentences):
                    found.append("".join(sentences[i:i + k]))
    return found


def _best_region(terms: Sequence[tuple[str, frozenset[str]]], facts: Sequence[str],
                 windows: Sequence[str], labels: Sequence[str] = ()) -> tuple[str, list[str]]:
    """The window (or two) of the cited sources stating most of a claim's terms and facts: its
    normalised text, and the windows' own text (for the negation check). A chapter heading is a window
    of its own (a sentence may cite a chapter's title), never joined with another: a heading alone
    never supports a detail of the text."""
    normed = [normalize(w).text for w in windows]
    heads = [normalize(w).text for w in labels]

    def score(hay: str) -> int:
        return sum(1 for _, forms in terms if found_in(forms, hay)) + 2 * sum(1 for f in facts if fact_in(f, hay))

    def stated(hay: str) -> tuple[int, int]:
        return score(hay), -len(hay)  # the shorter window of two that state as much

    if heads and normed:
        text_best = max(score(h) for h in normed)
        label_best = max(heads, key=score)
        if score(label_best) > text_best and score(label_best) >= 0.6 * max(1, len(terms) + 2 * len(facts)):
            return label_best, [labels[heads.index(label_best)]]
    if not normed:
        return "", []
    order = sorted(range(len(normed)), key=lambda i: stated(normed[i]), reverse=True)
    chosen = [order[0]]
    for _ in range(REGIONS - 1):
        base = "".join(normed[i] for i in chosen)
        best = max(order[1:40], key=lambda i: stated(base + normed[i]), default=None)
        if best is None or stated(base + normed[best])[0] <= stated(base)[0]:
            break
        chosen.append(best)
    return "".join(normed[i] for i in chosen), [windows[i] for i in chosen]


def numbers_missing(facts: Sequence[str], haystack: str, headed: str, raw: str = "") -> list[str]:
    """The numbers of a claim in another script than its sources that the sources' normalised text
    (``haystack``; chapter numbers: ``headed``, with the headings) lacks, whichever way either writes
    them (13岁 / thirteen, a numeral below ten as a Han character; 两人 / "both" in the ``raw`` text)."""
    values = {v for m in _QUANTITY.finditer(haystack) for v in [_value(m)] if v is not None}
    values |= {Decimal(v) for w, v in _COUNTING_WORDS.items() if re.search(rf"\b{w}\b", raw, re.I)}
    missing = []
    for f in facts:
        m = _QUANTITY.match(f)
        if f.startswith("第") or m is None:
            continue
        n = m.group(1)
        if contains(haystack, n) or _value(m) in values or any(contains(haystack, t) for t in _clock_forms(n)):
            continue
        if not (n.isdigit() and int(n) < 10 and any(ch in haystack for ch in HAN_NUMERALS[int(n)])):
            missing.append(n)
    return missing + [f for f in facts if re.fullmatch(r"第\d+", f) and not fact_in(f, headed)]


# a quantity as either language writes it: 190万 and 1900000 are one value (English scale words are
# digits after normalize)
_QUANTITY = re.compile(r"(\d+(?:[.:]\d+)*%?)([万亿])?")
_SCALE = {"万": 10_000, "亿": 100_000_000}
# English words that count without a number word (两人 / "both of them", 两次 / "twice")
_COUNTING_WORDS = {"both": 2, "twice": 2, "pair": 2, "couple": 2, "dozen": 12}


def _value(m: re.Match[str]) -> Decimal | None:
    try:
        return (Decimal(m.group(1)) * _SCALE.get(m.group(2) or "", 1)).normalize()
    except InvalidOperation:  # a time (8:00) or a percentage
        return None


def _clock_forms(n: str) -> list[str]:
    """15:00 as Chinese writes it: 15时, 15点, 15时30分."""
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", n)
    if m is None:
        return []
    hour, minute = str(int(m.group(1))), m.group(2)
    forms = [f"{hour}时{int(minute)}分", f"{hour}点{int(minute)}分", f"{hour}时{minute}分", f"{hour}点{minute}"]
    return forms + ([f"{hour}时", f"{hour}点"] if minute == "00" else [])


def _other_language(body: str, facts: Sequence[str], cited: Sequence[Source],
                    ) -> tuple[SentenceStatus, Msg]:
    """A claim in another script than its sources: its numbers (Arabic, Chinese or English number
    words: 13岁 / thirteen) are checked; what its words say cannot be compared by code."""
    haystack = normalize(" ".join(s.text for s in cited)).text
    everything = normalize(" ".join(f"{s.label} {s.text}" for s in cited)).text
    missing = numbers_missing(facts, haystack, everything, " ".join(s.text for s in cited))
    if missing:
        return "unsupported", Msg.of("check.sentence_not_in_sources", missing=", ".join(dict.fromkeys(missing)))
    return "not_checked", Msg.of("check.sentence_other_language")


def check_sentence(sentence: str, sources: dict[int, Source], cites: tuple[int, ...] | None = None, *,
                   question: str | None = None, names: Names | None = None,
                   ) -> tuple[SentenceStatus, Msg, Literal["book", "web", "both"] | None]:
    """One sentence against ``cites`` (default: its own citations). ``question``: the question it
    answers (a sentence that restates it claims nothing); ``names``: the book's other names of its
    people (``rag.checks.text.name_groups``)."""
    names = names or {}
    cites = citations_of(sentence) if cites is None else cites
    if _is_hedge(sentence):
        return "no_claim", Msg.of("check.sentence_hedge"), None
    if _is_echo(sentence, question, names):
        return "no_claim", Msg.of("check.sentence_question_echo"), None
    if _ABOUT_QUESTION.match(CITATION.sub(" ", sentence).strip(" -*")):
        return "no_claim", Msg.of("check.sentence_about_question"), None
    if not _claims(sentence):
        return "no_claim", Msg.of("check.sentence_no_claim"), None
    if not cites:
        return "uncited", Msg.of("check.sentence_uncited"), None
    unknown = [c for c in cites if c not in sources]
    if unknown:
        return "unsupported", Msg.of("check.sentence_unknown_source", cites=", ".join(f"[{c}]" for c in unknown)), None
    cited = [sources[c] for c in cites]
    origins = {s.origin for s in cited}
    origin: Literal["book", "web", "both"] = "both" if len(origins) > 1 else next(iter(origins))
    whole = body = CITATION.sub(" ", sentence)
    everything = normalize(" ".join(f"{s.label} {s.text}" for s in cited)).text
    known = f"{normalize(question or '').text} {everything}"
    if lead_in(body, known, names):
        return "no_claim", Msg.of("check.sentence_lead_in"), None
    label = LABEL.match(body)  # "**蒯越说的不吉利之处**：…": the label repeats the question, the rest claims
    if label and content(body[label.end():], names).terms \
            and label_known(body[:label.end()], known, names):
        body = body[label.end():]
    excused = unclaimed_quotes(body, question)
    for q in excused:  # what the sentence says the sources do not call it, or the question's own word
        body = body.replace(q, " ")
    body_norm = normalize(body).text
    named = [n for n in names if len(n) > 1 and n in body_norm]
    facts = [f for f in facts_of(sentence) if not (WORD_NUMERAL.fullmatch(f) and any(f in n for n in named))
             and f not in {normalize(q).text for q in excused}]
    if "web" in origins and "book" not in origins and any(w in whole.lower() for w in _BOOK_WORDS):
        return "unsupported", Msg.of("check.sentence_web_as_book"), origin
    cited_text = " ".join(s.text for s in cited)
    vague = _placeholder(body, cited_text)
    if vague:
        return "no_claim", Msg.of("check.sentence_question_echo"), None
    source_script, own_script = script_of(cited_text), script_of(body)
    # another language unless the sources hold a good deal more of the sentence's own script than it
    # has (a Chinese passage that quotes a long English note is read in English too; one that names
    # ARPANET or codes a party x2 is not)
    if source_script and own_script not in (None, source_script) \
            and _units(cited_text, own_script) < OTHER_SCRIPT_FACTOR * _units(body, own_script):
        status, why = _other_language(body, facts, cited)
        return status, why, origin
    # chapter numbers are checked against the headings and texts; everything else against the
    # sentences of the cited texts that state most of it (a heading alone never supports a detail)
    chapters = [f for f in facts if re.fullmatch(r"第\d+", f)]
    details = [f for f in facts if f not in chapters]
    missing = [f for f in chapters if not fact_in(f, everything)]
    claim = ATTRIBUTION.sub(" ", body)  # "资料只说明…，并指出…": what the sources say, not who says it
    body_terms = content(claim, names).terms
    has_han = source_script == "han"
    terms = [(t, f) for t, f in body_terms if is_han(t[0]) == has_han and not t[0].isdigit()]
    region, windows = _best_region(terms, details, _windows(cited), [s.label for s in cited if s.label])
    quoted = [f for f in details if f in [normalize(q).text for q in QUOTED.findall(body)]]
    # quoted speech and numerals inside words (三调, 五圣) are words of the sources, wherever they are
    absent = [f for f in details if not fact_in(f, everything if f in quoted or WORD_NUMERAL.fullmatch(f) else region)
              and not date_in_context(f, region, everything)
              and (f[0].isdigit() or f.startswith("第") or any(is_han(ch) for ch in f) == has_han)]
    found = [f for f in details if f not in absent]
    missing += [f for f in absent if not sum_of(f, found)]
    missing += [t for t, forms in body_terms if t in names and not found_in(forms, region)]
    if missing:
        return "unsupported", Msg.of("check.sentence_not_in_sources", missing=", ".join(dict.fromkeys(missing))), origin
    negated = negation_differs(body, windows, names)
    if negated:
        return "unsupported", Msg.of("check.sentence_negation", clause=negated), origin
    if facts and len(terms) <= SHORT_WORDS:  # "约七百余里[2]": its number is the claim, and it is there
        return "supported", Msg.of("check.sentence_supported"), origin
    if terms:
        stated = sum(1 for _, forms in terms if found_in(forms, region)) / len(terms)
        if stated < MIN_COVERAGE:
            return "unsupported", Msg.of("check.sentence_few_words", share=stated), origin
        run = _novel_run(body_terms, everything) if has_han else None
        run = run or (_novel_run(body_terms, region, REGION_RUN) if has_han and REGION_RUN else None)
        if run:
            return "unsupported", Msg.of("check.sentence_not_in_sources", missing=run), origin
        subject = missing_subject(body, everything, names, question) if has_han else None
        if subject:
            return "unsupported", Msg.of("check.sentence_not_in_sources", missing=subject), origin
        thin = _thin_clause(claim, region, names, has_han)
        if thin:
            return "unsupported", Msg.of("check.sentence_not_in_sources", missing=thin), origin
        gap = unaligned(normalize(claim).text, region) if has_han else unaligned(claim, " ".join(windows), latin=True)
        if gap:  # its words are there, not what it says: a model reading it (or the reader) must tell
            return "not_checked", Msg.of("check.sentence_unconfirmed", words="、".join(gap[:3])), origin
    return "supported", Msg.of("check.sentence_supported"), origin


def _thin_clause(body: str, region: str, names: Names, has_han: bool) -> str | None:
    """A clause of the sentence (of ``CLAUSE_TERMS`` content terms or more) of which the sentences that
    state the claim have under ``CLAUSE_COVERAGE``: a detail added to what they say. Each clause is
    a claim of its own, checked against the same sentences (not the whole passage)."""
    for clause in CLAUSES.split(body):
        terms = [(t, f) for t, f in content(clause, names).terms if is_han(t[0]) == has_han and not t[0].isdigit()]
        if len(terms) >= CLAUSE_TERMS:
            stated = sum(1 for _, forms in terms if found_in(forms, region)) / len(terms)
            if stated < CLAUSE_COVERAGE:
                return clause.strip()
    return None


_HEADING_LINE = re.compile(r"^\s*(?:#+\s*.+|\*\*[^*]+\*\*[:：]?|(?:[一二三四五六七八九十]+、|\d+[.)、])\s*\*\*[^*]+\*\*[:：]?"
                           # "一、入职时间", "（二）旅游合同纠纷中的事故": a numbered section's title line
                           r"|(?:[一二三四五六七八九十]+、|[（(][一二三四五六七八九十]+[)）])[^。！？!?；;，,\[\]]{1,40})\s*$")
_NOTE = re.compile(r"^\s*[（(][^（）()]*[）)]\s*[。.]?\s*$")


def _kind(answer: str, a: int, b: int) -> str:
    """heading (a line that is only a title), leadin (ends with a colon), note (a whole sentence in
    brackets: "（见第五十九回）"), item (a list item) or text."""
    line_start = answer.rfind("\n", 0, a) + 1
    line_end = answer.find("\n", b)
    line = answer[line_start:len(answer) if line_end < 0 else line_end]
    sentence = CITATION.sub("", answer[a:b]).strip()
    if line.strip() == answer[a:b].strip() and _HEADING_LINE.match(sentence):
        return "heading"
    if sentence.rstrip("*").endswith((":", "：")):
        return "leadin"
    if _NOTE.match(sentence):
        return "note"
    if LIST_MARKER.match(answer[line_start:a + 3]) and line_start <= a <= line_start + 4:
        return "item"
    return "text"


def _covering(answer: str, spans: list[tuple[int, int]], own: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The citations each sentence is checked against: its own; else those of the citation that closes
    its run in its paragraph; a lead-in's, those of what it leads into; a list item's, its lead-in's; a
    note's, its neighbour's; a short first sentence (a direct answer), those of the sentence after it."""
    kinds = [_kind(answer, a, b) for a, b in spans]
    covering = list(own)
    n = len(spans)

    def same_paragraph(i: int, j: int) -> bool:
        return "\n" not in answer[spans[i][1]:spans[j][0]]

    for i in range(n - 1, -1, -1):  # runs closed by a citation, back to the previous one
        if (not own[i] and i + 1 < n and covering[i + 1] and kinds[i] in ("text", "item")
                and kinds[i + 1] in ("text", "note") and same_paragraph(i, i + 1)):
            covering[i] = covering[i + 1]
    leadin: tuple[int, ...] = ()
    for i in range(n):
        if kinds[i] == "heading":
            leadin = ()
        elif kinds[i] == "leadin":
            leadin = own[i]
            if not own[i]:
                nxt = next((j for j in range(i + 1, n) if kinds[j] == "heading" or own[j]), None)
                if nxt is not None and kinds[nxt] != "heading":
                    covering[i] = own[nxt]
        elif kinds[i] == "item":
            if not covering[i] and leadin:
                covering[i] = leadin
        elif kinds[i] == "note" and not own[i]:
            before = next((covering[j] for j in range(i - 1, -1, -1) if covering[j]), ())
            after = next((covering[j] for j in range(i + 1, n) if covering[j]), ())
            covering[i] = before or after
        else:
            leadin = ()
    first = next((i for i in range(n) if kinds[i] not in ("heading",)), None)
    if (first is not None and not covering[first] and first + 1 < n and covering[first + 1]
            and len(content(CITATION.sub(" ", answer[spans[first][0]:spans[first][1]])).terms) <= SHORT_CLAIM):
        covering[first] = covering[first + 1]
    return [() if k == "heading" else c for k, c in zip(kinds, covering, strict=True)]


def check_answer(answer: str, sources: Sequence[Source], *, question: str | None = None,
                 aliases: Mapping[str, Sequence[str]] | None = None) -> AnswerCheck:
    """Mark every sentence of ``answer`` against the sources it cites (numbers as in the prompt).
    ``question``: the question answered (a sentence restating it is no claim); ``aliases``: the book's
    other names of its people (``rag.aliases``), when the caller has them."""
    by_number = {s.number: s for s in sources}
    names = source_names(sources, aliases)
    spans = split_sentences(answer)
    texts = [answer[a:b] for a, b in spans]
    own = [citations_of(t) for t in texts]
    covering = _covering(answer, spans, own)
    checks = []
    for (a, b), text, cites, mine in zip(spans, texts, covering, own, strict=True):
        if not cites and _HEADING_LINE.match(CITATION.sub("", text).strip()):
            checks.append(SentenceCheck(text, a, b, mine, "no_claim", Msg.of("check.sentence_no_claim")))
            continue
        status, reason, origin = check_sentence(text, by_number, cites, question=question, names=names)
        if cites and not mine and status != "no_claim":
            reason = Msg.of("check.sentence_covered", detail=reason)
        checks.append(SentenceCheck(text, a, b, cites if status != "no_claim" else mine, status, reason, origin))
    return AnswerCheck(tuple(checks))
