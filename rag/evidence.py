"""Evidence that code checks: quotes verified against the passages they claim to come from, and
answer sentences checked against the sources they cite.

Everything here is pure (no model, no I/O), so the judge's verdict and the answer's sentence marks
can be tested exactly and cannot be talked into "enough" by a model that claims coverage.

Text is compared after ``normalize``: NFKC (full width -> half width), lower case, Chinese
numerals as digits (五十四 -> 54, 十万八千 -> 108000), and without whitespace or punctuation.
``Norm`` keeps, for every normalised character, the span of the original text it came from, so a
match can be shown highlighted in the passage as written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

# --------------------------------------------------------------------------- normalisation
_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_CN_NUMERAL = re.compile("[零〇一二两三四五六七八九十百千万亿]+")
# Idioms and words in which a numeral character is not a number (kept as written).
_NOT_NUMBERS = ("一起", "一样", "一直", "一定", "一些", "一切", "一般", "统一", "万一", "千万", "一心", "一点")


def cn_to_int(text: str) -> int | None:
    """'五十四' -> 54, '十万八千' -> 108000, '一二三' -> 123 (digit by digit); None if not a number."""
    if not text or any(ch not in _CN_DIGITS and ch not in _CN_SMALL_UNITS and ch not in _CN_BIG_UNITS
                       for ch in text):
        return None
    if all(ch in _CN_DIGITS for ch in text):  # 一九八六 -> 1986
        return int("".join(str(_CN_DIGITS[ch]) for ch in text)) if len(text) > 1 else _CN_DIGITS[text]
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in _CN_SMALL_UNITS:
            section += (1 if digit is None else digit) * _CN_SMALL_UNITS[ch]
            digit = None
        else:  # 万 / 亿
            section += digit or 0
            total += (section or 1) * _CN_BIG_UNITS[ch]
            section, digit = 0, None
    return total + section + (digit or 0)


def _is_content(ch: str) -> bool:
    """Letters, digits and CJK ideographs count; whitespace, punctuation and symbols do not."""
    cat = unicodedata.category(ch)
    return cat[0] in ("L", "N")


def is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"


@dataclass(frozen=True)
class Norm:
    """Normalised text with, per character, the [start, end) span of the original it came from."""

    text: str
    spans: tuple[tuple[int, int], ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span covered by normalised characters [start, end)."""
        if not self.spans or end <= start:
            return (0, 0)
        return (self.spans[start][0], self.spans[end - 1][1])


def normalize(text: str, *, numerals: bool = True) -> Norm:
    """See the module docstring. Deterministic; ``normalize(normalize(x).text).text == normalize(x).text``."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    protected = _protected_ranges(text) if numerals else []
    i = 0
    n = len(text)
    while i < n:
        if numerals and text[i] in _CN_NUMERAL.pattern:
            m = _CN_NUMERAL.match(text, i)
            if m and not any(a <= i < b for a, b in protected):
                run = m.group(0)
                value = cn_to_int(run)
                # A lone 一 / 万 etc. inside words is common; convert runs that read as numbers.
                if value is not None and (len(run) > 1 or run not in "一万亿"):
                    for digit in str(value):
                        out.append(digit)
                        spans.append((i, m.end()))
                    i = m.end()
                    continue
        for ch in unicodedata.normalize("NFKC", text[i]).lower():
            if _is_content(ch):
                out.append(ch)
                spans.append((i, i + 1))
        i += 1
    return Norm("".join(out), tuple(spans))


def _protected_ranges(text: str) -> list[tuple[int, int]]:
    ranges = []
    for word in _NOT_NUMBERS:
        start = text.find(word)
        while start != -1:
            ranges.append((start, start + len(word)))
            start = text.find(word, start + 1)
    return ranges


def content_weight(norm_text: str) -> float:
    """Han characters count 1, Latin letters and digits 1/3: 4 Han == 12 Latin (the minimum quote)."""
    return sum(1.0 if is_han(ch) else 1 / 3 for ch in norm_text)


# --------------------------------------------------------------------------- quote matching
MIN_QUOTE_WEIGHT = 4.0  # at least 4 Han or 12 Latin characters after normalisation
FUZZY_RATIO = 0.85  # a fuzzy quote needs one contiguous run covering this share of it
_PIECE_SPLIT = re.compile(r"(?:\.\.\.|…+|⋯+|……)")
_CLAUSE_SPLIT = re.compile(r"[，,；;。.!！?？:：、\n]+")


@dataclass(frozen=True)
class QuoteMatch:
    """Where a quote was found: normalised span(s) in the passage and the original-text span."""

    exact: bool
    ratio: float  # 1.0 when exact; share of the quote covered by the matched run(s)
    norm_spans: tuple[tuple[int, int], ...]  # spans in the passage's normalised text
    span: tuple[int, int]  # covering span in the passage's original text

    def region(self, passage: Norm) -> str:
        """The normalised passage text that the quote matched (what the answer is checked against)."""
        return "".join(passage.text[a:b] for a, b in self.norm_spans)


def _find_exact(needle: str, hay: str) -> tuple[int, int] | None:
    pos = hay.find(needle)
    return (pos, pos + len(needle)) if pos >= 0 and needle else None


def match_quote(quote: str, passage: Norm) -> QuoteMatch | None:
    """Find ``quote`` in ``passage``: verbatim after normalisation; or as verbatim pieces (a quote
    joined with … or made of clauses each found in the passage); or as one contiguous run covering
    at least ``FUZZY_RATIO`` of it (copying slips). ``None`` when too short or not found."""
    q = normalize(quote).text
    if content_weight(q) < MIN_QUOTE_WEIGHT or not passage.text:
        return None
    exact = _find_exact(q, passage.text)
    if exact:
        return QuoteMatch(True, 1.0, (exact,), passage.original_span(*exact))
    # Verbatim pieces: every piece with real content found (in any order).
    for splitter in (_PIECE_SPLIT, _CLAUSE_SPLIT):
        pieces = [normalize(p).text for p in splitter.split(quote)]
        pieces = [p for p in pieces if p]
        if len(pieces) < 2 or any(content_weight(p) < 2 for p in pieces):
            continue
        spans = [_find_exact(p, passage.text) for p in pieces]
        if all(spans):
            found = tuple(sorted(s for s in spans if s))
            return QuoteMatch(False, 1.0, found, (passage.original_span(*found[0])[0],
                                                 passage.original_span(*found[-1])[1]))
    # One contiguous fuzzy run.
    matcher = SequenceMatcher(None, q, passage.text, autojunk=False)
    block = matcher.find_longest_match(0, len(q), 0, len(passage.text))
    ratio = block.size / len(q)
    if ratio >= FUZZY_RATIO:
        # Extend the run to the quote's length around it, so the region covers what the quote meant.
        start = max(0, block.b - block.a)
        end = min(len(passage.text), start + len(q))
        return QuoteMatch(False, ratio, ((start, end),), passage.original_span(start, end))
    return None


# --------------------------------------------------------------------------- answers inside a region
_LIST_SPLIT = re.compile(r"\s*(?:[、，,;；/]|\band\b|\bor\b|和|与|及|以及|或)\s*")
_YES_NO = {"是", "否", "对", "不对", "不是", "有", "没有", "无", "会", "不会", "能", "不能", "可以", "不可以",
           "yes", "no", "true", "false", "correct", "incorrect"}
# Function characters and words that do not make two texts "about the same thing".
_STOP_HAN = set("的了是在和有不也就都而及与之其这那个们被把为以于中上下一吗呢吧啊么什怎谁哪几多少")
_STOP_EN = {"the", "a", "an", "of", "in", "on", "at", "to", "is", "are", "was", "were", "be", "and", "or", "for",
            "by", "with", "does", "did", "do", "what", "which", "who", "whom", "how", "when", "where", "why",
            "that", "this", "it", "its", "as", "from", "his", "her", "their", "he", "she", "they",
            "long", "many", "much", "far", "old", "whose", "there", "been", "has", "have", "had", "into"}


def is_yes_no(answer: str) -> bool:
    return normalize(answer, numerals=False).text in _YES_NO


def answer_pieces(answer: str) -> list[str]:
    """A list answer ('马超、庞德、马岱') as normalised pieces; a single fact as one piece."""
    pieces = [normalize(p).text for p in _LIST_SPLIT.split(answer.strip())]
    pieces = [p for p in pieces if p]
    return pieces or ([normalize(answer).text] if normalize(answer).text else [])


def content_terms(text: str) -> set[str]:
    """Han characters (minus function characters) and Latin words (minus stop words), normalised."""
    terms = {ch for ch in normalize(text, numerals=False).text if is_han(ch) and ch not in _STOP_HAN}
    for word in re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", text).lower()):
        if len(word) >= 3 and word not in _STOP_EN:
            terms.add(word)
    return terms


def contains(haystack: str, needle: str) -> bool:
    """``needle`` in ``haystack`` (both normalised), a number only as a whole number: 108 is not in 108000."""
    if not needle:
        return False
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        before_ok = not (needle[0].isdigit() and start > 0 and haystack[start - 1].isdigit())
        after_ok = not (needle[-1].isdigit() and end < len(haystack) and haystack[end].isdigit())
        if before_ok and after_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


def about_the_part(part: str, quoted: str) -> bool:
    """Whether ``quoted`` (passage text) is about ``part``: they share a Han bigram or a content
    word. Parts in another script than the passage (an English question on a Chinese book), or with
    nothing to compare, are not held to it."""
    part_terms = {t for t in overlap_terms(part) if not any(ch in _STOP_HAN for ch in t)}
    if not part_terms:
        return True
    quoted_terms = overlap_terms(quoted)
    same_script = {t for t in part_terms if any(_script(t) == _script(q) for q in quoted_terms)}
    return not same_script or bool(same_script & quoted_terms)


def answer_in_region(answer: str, region: str, *, part: str = "", quote: str = "") -> tuple[bool, str]:
    """Whether the short ``answer`` is stated in ``region`` (normalised passage text the quote matched).
    Every piece of a list answer must be there; a yes/no answer instead needs the quote to share at
    least two content terms with the question part."""
    if is_yes_no(answer):
        shared = content_terms(part) & content_terms(quote)
        return (len(shared) >= 2, f"yes/no answer; {len(shared)} content term(s) shared with the part")
    pieces = answer_pieces(answer)
    if not pieces:
        return (False, "empty answer")
    missing = [p for p in pieces if not contains(region, p)]
    if missing:
        return (False, f"answer not in the quoted passage text: {', '.join(missing)}")
    return (True, "answer found in the quoted passage text")


# --------------------------------------------------------------------------- verifying a judge's parts
PartStatus = Literal["verified", "unverified", "not_found"]
NOT_FOUND = {"notfound", "none", "null", "na", "无", "没有", "未找到", "找不到", "无法找到", "未提及", "没有提到"}


def says_not_found(value: str | None) -> bool:
    return value is None or normalize(value, numerals=False).text in NOT_FOUND


@dataclass(frozen=True)
class Source:
    """One numbered source as the judge saw it: [number] text, from the book or the web."""

    number: int
    text: str
    origin: Literal["book", "web"] = "book"
    label: str = ""  # chapter title or page title: a sentence may cite it too

    @property
    def norm(self) -> Norm:
        return _norm_cached(self.text)


_NORM_CACHE: dict[str, Norm] = {}


def _norm_cached(text: str) -> Norm:
    norm = _NORM_CACHE.get(text)
    if norm is None:
        if len(_NORM_CACHE) > 2048:
            _NORM_CACHE.clear()
        norm = _NORM_CACHE[text] = normalize(text)
    return norm


@dataclass(frozen=True)
class PartCheck:
    """The code's verdict on one part of the question the judge claimed to cover."""

    part: str
    answer: str | None
    source: int | None  # the number the judge cited
    quote: str | None
    status: PartStatus
    detail: str
    matched_source: int | None = None  # where the quote was actually found (may differ from ``source``)
    span: tuple[int, int] | None = None  # the quote's span in that source's text (for highlighting)
    origin: Literal["book", "web"] | None = None


def verify_part(part: str, answer: str | None, source: int | None, quote: str | None,
                sources: Sequence[Source]) -> PartCheck:
    """Verify one claimed part: the quote must be in a source (the cited one first, then any), long
    enough, and the answer must be stated in the passage text the quote matched."""
    if says_not_found(quote) or says_not_found(answer):
        return PartCheck(part, answer, source, quote, "not_found", "the judge found no evidence for this part")
    assert quote is not None and answer is not None
    ordered = sorted(sources, key=lambda s: (s.number != source, s.number))
    if content_weight(normalize(quote).text) < MIN_QUOTE_WEIGHT:
        return PartCheck(part, answer, source, quote, "unverified", "quote too short to verify")
    reasons = []
    for src in ordered:
        match = match_quote(quote, src.norm)
        if match is None:
            continue
        ok, why = answer_in_region(answer, match.region(src.norm), part=part, quote=quote)
        if ok and not about_the_part(part, f"{src.label} {src.text}"):
            # A verbatim quote that holds the answer can still come from a passage about something
            # else that merely names it: the source must share a term with the part it answers.
            ok, why = False, "its source shares no term with this part of the question"
        if ok and not match.exact and not is_yes_no(answer):
            # A quote that matched only approximately must still carry the answer as written:
            # a slip inside the answer itself is a different fact, not a copying error.
            quote_norm = normalize(quote).text
            if not all(contains(quote_norm, piece) for piece in answer_pieces(answer)):
                ok, why = False, "the answer differs from what the quote says"
        if ok:
            where = "" if src.number == source else f" (cited [{source}], found in [{src.number}])"
            kind = "verbatim" if match.exact else f"matched {match.ratio:.2f}"
            return PartCheck(part, answer, source, quote, "verified", f"quote {kind}; {why}{where}",
                             matched_source=src.number, span=match.span, origin=src.origin)
        reasons.append(f"[{src.number}]: {why}")
    detail = "; ".join(reasons) if reasons else "quote not found in any source"
    return PartCheck(part, answer, source, quote, "unverified", detail)


# --------------------------------------------------------------------------- answer sentences
SentenceStatus = Literal["supported", "unsupported", "uncited", "no_claim"]
_CITATION = re.compile(r"\[(\d+(?:\s*[,，、-]\s*\d+)*)\]")
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=[.])(?=\s)|\n+")
_TRAILING_CITES = re.compile(r"[ \t]*(?:\[\d+(?:\s*[,，、-]\s*\d+)*\][ \t]*)+")
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)、]|[-*+•])\s*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUOTED = re.compile(r"[“\"「『《]([^”\"」』》]{2,40})[”\"」』》]")
_CHAPTER = re.compile(r"第\s*([0-9零〇一二两三四五六七八九十百千]+)\s*[回章节集]|\b(?:chapter|episode)\s+(\d+)", re.I)
_BOOK_WORDS = ("书中", "原著", "本书", "原文", "小说中", "导读", "the book", "the novel", "the guide", "book sources")
_HEDGES = ("无法确认", "无法从资料中确认", "不能确认", "未能确认", "没有提到", "未提及", "尚缺", "缺少", "没有找到",
           "cannot confirm", "can't confirm", "could not be confirmed", "cannot be confirmed", "not covered",
           "not mentioned", "no source", "missing", "not stated", "does not say", "do not say")
MIN_OVERLAP = 0.5  # share of a cited sentence's content terms found in its cited sources


@dataclass(frozen=True)
class SentenceCheck:
    text: str  # the sentence as written (citations included)
    start: int  # offset in the answer
    end: int
    citations: tuple[int, ...]
    status: SentenceStatus
    reason: str
    origin: Literal["book", "web", "both"] | None = None  # where its support is


@dataclass(frozen=True)
class AnswerCheck:
    sentences: tuple[SentenceCheck, ...] = field(default_factory=tuple)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: ends at Chinese and English sentence punctuation (citations
    right after the punctuation, as in "…。[2]", stay with their sentence) and at line breaks."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() < start:  # inside citations already given to the previous sentence
            continue
        end = m.start()
        tail = _TRAILING_CITES.match(text, end)
        if tail and tail.group(0).strip():
            end = tail.end()
        if end > start:
            spans.append((start, end))
        start = max(end, m.end())
    if start < len(text):
        spans.append((start, len(text)))
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
    for group in _CITATION.findall(sentence):
        for token in re.split(r"\s*[,，、]\s*", group):
            if "-" in token:
                a, _, b = token.partition("-")
                if a.strip().isdigit() and b.strip().isdigit() and int(b) - int(a) < 20:
                    found.extend(range(int(a), int(b) + 1))
            elif token.strip().isdigit():
                found.append(int(token))
    return tuple(dict.fromkeys(found))


def _facts(sentence: str) -> list[str]:
    """Checkable facts in a sentence, normalised: chapter numbers, other numbers (Chinese numerals
    included) with the Han character that follows them (三百六十岁 -> 360岁, so a number that occurs
    elsewhere in the source for something else does not count), and quoted strings."""
    body = _LIST_MARKER.sub("", _CITATION.sub(" ", sentence))
    facts = []
    for m in _CHAPTER.finditer(body):
        raw = m.group(1) or m.group(2)
        value = cn_to_int(raw)
        facts.append(str(value if value is not None else raw))
    chapters = set(facts)
    norm_body = normalize(body).text
    for m in _NUMBER.finditer(norm_body):
        if m.group(0) in chapters:
            continue
        nxt = norm_body[m.end():m.end() + 1]
        facts.append(m.group(0) + nxt if nxt and is_han(nxt) else m.group(0))
    facts += [normalize(q).text for q in _QUOTED.findall(body)]
    return [f for f in facts if f]


def overlap_terms(text: str) -> set[str]:
    """Han character bigrams and Latin words: what "the sentence says what the source says" is measured on."""
    norm = normalize(text, numerals=False).text
    terms = {norm[i:i + 2] for i in range(len(norm) - 1) if is_han(norm[i]) and is_han(norm[i + 1])}
    for word in re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", text).lower()):
        if len(word) >= 3 and word not in _STOP_EN:
            terms.add(word)
    return terms


def _is_hedge(sentence: str) -> bool:
    low = sentence.lower()
    return any(h in low for h in _HEDGES)


def _is_heading(sentence: str) -> bool:
    stripped = sentence.strip().strip("#*>-:： ").strip()
    return not stripped or (len(normalize(stripped).text) <= 12 and not _NUMBER.search(stripped)
                            and not _CITATION.search(sentence) and sentence.rstrip().endswith((":", "：", "**")))


def _script(term: str) -> str:
    return "han" if is_han(term[0]) else "latin"


def check_sentence(sentence: str, sources: dict[int, Source]) -> tuple[SentenceStatus, str, str | None]:
    cites = citations_of(sentence)
    body = _CITATION.sub(" ", sentence)
    terms = overlap_terms(body)
    if not cites:
        if _is_heading(sentence) or _is_hedge(sentence) or (len(terms) < 3 and not _facts(sentence)):
            return "no_claim", "no factual claim", None
        return "uncited", "states facts without citing a source", None
    unknown = [c for c in cites if c not in sources]
    if unknown:
        return "unsupported", f"cites a source that does not exist: {', '.join(f'[{c}]' for c in unknown)}", None
    cited = [sources[c] for c in cites]
    origins = {s.origin for s in cited}
    origin = "both" if len(origins) > 1 else next(iter(origins))
    haystack = normalize(" ".join(f"{s.label} {s.text}" for s in cited)).text
    missing = [f for f in _facts(sentence) if not contains(haystack, f)]
    if missing:
        return "unsupported", f"not in the cited sources: {', '.join(missing)}", origin
    if "web" in origins and "book" not in origins and any(w in body.lower() for w in _BOOK_WORDS):
        return "unsupported", "attributes to the book what only a web source says", origin
    cited_terms = overlap_terms(" ".join(f"{s.label} {s.text}" for s in cited))
    # Compare words within one script: a Chinese sentence citing an English page is checked by its facts.
    terms = {t for t in terms if _script(t) in {_script(c) for c in cited_terms}}
    if terms:
        overlap = len(terms & cited_terms) / len(terms)
        if overlap < MIN_OVERLAP and not _is_hedge(sentence):
            return "unsupported", f"only {overlap:.0%} of its words are in the cited sources", origin
    return "supported", "its facts are in the cited sources", origin


def check_answer(answer: str, sources: Sequence[Source]) -> AnswerCheck:
    """Mark every sentence of ``answer`` against the sources it cites (numbers as in the prompt)."""
    by_number = {s.number: s for s in sources}
    checks = []
    for a, b in split_sentences(answer):
        sentence = answer[a:b]
        status, reason, origin = check_sentence(sentence, by_number)
        checks.append(SentenceCheck(sentence, a, b, citations_of(sentence), status, reason, origin))  # type: ignore[arg-type]
    return AnswerCheck(tuple(checks))
