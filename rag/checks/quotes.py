"""Quotes the judge copied, found in the sources, and the parts of the question they answer.

A part is verified when (``verify_part``):
1. it is a part of the user's question (shares a content term with it: an echoed worked example or an
   invented sub-question is refused);
2. its quote is in a source (verbatim after normalisation, as pieces, or one long fuzzy run), in the
   passage's text or its chapter heading (for questions about where something happens);
3. its answer is a short fact and the quote's sentence states it: every name and number of the answer
   is there (in one of its forms: 关羽 / 关公 / 云长, 五百 / 500), a short answer as a whole, and a longer,
   paraphrased answer by most of its content (classical and modern forms alike: 喝 / 饮, 说 / 曰);
4. the quote's sentence is about the part: it shares a content term with the part other than the
   answer's own names and numbers ("孙悟空被压在山下多少年 → 五百年" is not verified by "与五百年前又大不同").
A part that fails 3 or 4 only because code cannot confirm it (a paraphrase stated in part, a quote whose
sentence names the part's subject by a pronoun), with nothing shown wrong (``SHOWN_WRONG``), is
"undecided" rather than "unverified": ``rag.agent.judge.decide`` lets the model's verdict stand on it.
Pure: no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from rag.checks.facts import ASKING, ASKING_EN, CLAUSES, INDEFINITE, fact_in, facts_of
from rag.checks.text import (
    STOP_HAN,
    Content,
    Names,
    Norm,
    contains,
    content,
    content_weight,
    coverage,
    found_in,
    is_han,
    latin_names,
    latin_words,
    name_groups,
    normalize,
    script_of,
    shared_terms,
)
from rag.i18n import Msg, codes, join

# --------------------------------------------------------------------------- quote matching
MIN_QUOTE_WEIGHT = 4.0  # at least 4 Han or 12 Latin characters after normalisation
# The prompt asks for one short span: a long quote does not show which words state the answer (a
# capable model's quotes: at most 37 characters on the dev sets; a 1.5B model's: a median of 28, 10% over 83).
MAX_QUOTE_WEIGHT = 60.0
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
    if content_weight(normalize(quote, numerals=False).text) < MIN_QUOTE_WEIGHT or not passage.text:
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



# --------------------------------------------------------------------------- sources
@dataclass(frozen=True)
class Source:
    """One numbered source as the judge saw it: [number] text, from the book or the web."""

    number: int
    text: str
    origin: Literal["book", "web"] = "book"
    label: str = ""  # chapter title or page title: a sentence may cite it too

    @property
    def norm(self) -> Norm:
        return norm_cached(self.text)

    @property
    def label_norm(self) -> Norm:
        return norm_cached(self.label)


_NORM_CACHE: dict[str, Norm] = {}


def norm_cached(text: str) -> Norm:
    norm = _NORM_CACHE.get(text)
    if norm is None:
        if len(_NORM_CACHE) > 2048:
            _NORM_CACHE.clear()
        norm = _NORM_CACHE[text] = normalize(text)
    return norm


# --------------------------------------------------------------------------- answers and parts
# "undecided": the quote is in a source and nothing shows the answer wrong, but code cannot show that
# the quote states it (its words are not found there by comparing characters: a paraphrase, a pronoun)
PartStatus = Literal["verified", "undecided", "unverified", "not_found"]
# What shows an answer wrong, not merely unconfirmed: it changes the quote's words, differs from the
# book where the quote does, names a number or a name the source does not have, has none of its words
# in the quote's sentence, only repeats the question, or is empty
SHOWN_WRONG = frozenset({"check.answer_changes_copy", "check.answer_differs", "check.answer_not_in_quote",
                         "check.answer_absent", "check.answer_repeats_question", "check.empty_answer"})
NOT_FOUND = {"notfound", "none", "null", "na", "无", "没有", "未找到", "找不到", "无法找到", "未提及", "没有提到",
             "notstated", "notmentioned", "unknown", "不详", "未说明", "没有说明", "原文未提及"}
_LIST_SPLIT = re.compile(r"\s*(?:[、，,;；/]|\band\b|\bor\b|和|与|及|以及|或)\s*")
_YES_NO = ("是的", "是", "否", "对", "不对", "不是", "有", "没有", "没", "无", "会", "不会", "能", "不能", "可以",
           "不可以", "未", "不", "yes", "no", "true", "false", "correct", "incorrect")
_YES_NO_NORM = sorted({normalize(w, numerals=False).text for w in _YES_NO}, key=len, reverse=True)
MAX_ANSWER_WEIGHT = 60.0  # an answer is a short fact, not a copy of the passage (Han chars; Latin 1/3)
SHORT_ANSWER = 6  # content characters up to which an answer (a name, a thing) must be in the quote whole
ANSWER_COVERAGE = 0.5  # share of a longer answer's content terms the quote's sentence must state
_SENTENCE_END = re.compile(r"[。！？!?；;\n]")
_QUESTION_END = re.compile(r"(?<=[？?！!。；;])")
MIN_BEFORE = 20  # characters of context before the quote that its sentence window reaches back to
WINDOW = 60  # the quote's sentence and the one before, at most this many characters before the quote


_HEDGED = ("未说明", "没有说明", "未提及", "没有提到", "未写明", "不详", "未知", "不明", "无法确定", "无从得知",
           "not stated", "not mentioned", "not specified", "not given", "unknown", "unclear")
REPEAT_WEIGHT = 30.0  # a quote weighing more than this is not an answer by itself


def hedged(answer: str) -> bool:
    """An answer that says, in part, that the sources do not give it ("外地（未说明具体地点）", "unknown"),
    or names nothing ("他人" for whom a flat was sold to, "someone")."""
    low = answer.lower()
    return any(h in low for h in _HEDGED) or bool(INDEFINITE.fullmatch(answer.strip(" 。.，,！!")))


def says_not_found(value: str | None) -> bool:
    return value is None or normalize(value, numerals=False).text in NOT_FOUND


def yes_no_rest(answer: str) -> tuple[bool, str]:
    """(whether ``answer`` is a yes/no answer, what follows the yes/no word): "没有喝，他让酒先斟下"
    is (True, "他让酒先斟下"); "是" is (True, ""); "柳条" is (False, "柳条")."""
    norm = normalize(answer, numerals=False).text
    for word in _YES_NO_NORM:
        if norm == word:
            return True, ""
    head = re.split(r"[，,。.;；：:!！]", answer.strip(), maxsplit=1)
    first = normalize(head[0], numerals=False).text
    if len(head) > 1 and first in _YES_NO_NORM:
        return True, head[1]
    return False, answer


def is_yes_no(answer: str) -> bool:
    """A bare yes or no ("是", "没有"), with nothing after it."""
    yes_no, rest = yes_no_rest(answer)
    return yes_no and not rest.strip()


def answer_pieces(answer: str) -> list[str]:
    """A list answer ('马超、庞德、马岱') as normalised pieces; a single fact as one piece."""
    pieces = [normalize(p).text for p in _LIST_SPLIT.split(answer.strip())]
    pieces = [p for p in pieces if p]
    return pieces or ([normalize(answer).text] if normalize(answer).text else [])


def hard_facts(answer: str, names: Names | None = None) -> list[tuple[str, frozenset[str]]]:
    """The terms of an answer that must be in the quote as they are: its numbers (with their unit) and
    the names it uses (each in any of its forms)."""
    names = names or {}
    return [(t, forms) for t, forms in content(answer, names).terms if t[0].isdigit() or t in names]


def _piece_found(piece: str, region: str, names: Names) -> bool:
    """A short answer piece in the region: as written, or as one of its names' other forms."""
    return contains(region, piece) or (piece in names and found_in(names[piece], region))


_GLOSS = re.compile(r"[（(][^（）()]*[）)]")


def main_answer(answer: str) -> str:
    """The answer without its glosses in brackets ("观音（菩萨）" -> "观音"), unless that leaves nothing."""
    bare = _GLOSS.sub("", answer).strip()
    return bare if normalize(bare).text else answer


_ALTERNATIVE = re.compile(r"还是|或者是|或是|\bor\b", re.I)
_JOINER = re.compile(r"[与和及、跟同]")
_ASKS_WHO = re.compile(r"谁|哪位|哪一位|\bwho\b", re.I)


def _one_of_named(answer_norm: str, part_norm: str) -> bool:
    """Whether a part asking who names people side by side (阿1某力力与肉某等人成立的组织的头领是谁) and
    the answer is one of them (肉某): it picks one, as one side of a choice does, unless the question
    word is itself one of the joined (谁和林某一起去的)."""
    if not answer_norm or not _ASKS_WHO.search(part_norm):
        return False
    for m in _JOINER.finditer(part_norm):
        before, after = part_norm[:m.start()], part_norm[m.end():]
        if _ASKS_WHO.search(before[-3:]) or _ASKS_WHO.match(after):
            continue
        if before.endswith(answer_norm) or after.startswith(answer_norm):
            return True
    return False


def _joined_in(answer_norm: str, part_norm: str) -> bool:
    """Whether the answer's Han characters stand side by side in the part as in the answer (each pair
    of neighbours but two function characters): 被告 is not in 原告要求诉讼费由谁承担, nor 算法分析 in
    特定算法的分析 — the question's characters in another order or joined to others name something it
    asks for, not the question again."""
    pairs = [answer_norm[i:i + 2] for i in range(len(answer_norm) - 1)
             if is_han(answer_norm[i]) and is_han(answer_norm[i + 1])
             and not (answer_norm[i] in STOP_HAN and answer_norm[i + 1] in STOP_HAN)]
    return all(p in part_norm for p in pairs)


def answer_supported(answer: str, region: str, passage: str = "", part: str = "",
                     quoted: str = "", names: Names | None = None) -> tuple[bool, Msg]:
    """Whether the quote states ``answer`` (see the module docstring). ``quoted``: the passage text the
    quote matched; ``region``: the quote's sentence; ``passage``: the source's whole text (all
    normalised). Numbers must be in the quoted text, names in the passage; a short answer in the quoted
    text, or in the passage when the quoted text holds part of it (须菩提祖师 for "祖师便传他筋斗云"); a
    longer one, or a paraphrase, by its content in the quote's sentence."""
    gloss = "".join(_GLOSS.findall(answer))
    if gloss and main_answer(answer) != answer:
        ok, why = answer_supported(main_answer(answer), region, passage, part, quoted, names)
        if ok or not any(is_han(ch) for ch in gloss) or any(is_han(ch) for ch in main_answer(answer)):
            return ok, why
        # an English answer with the book's words in brackets ("burning incense (焚香操琴)"): those words
        return answer_supported(gloss.strip("（）()"), region, passage, part, quoted, names)
    names = names or {}
    passage = passage or region
    quoted = quoted or region
    yes_no, rest = yes_no_rest(answer)
    if yes_no:
        # a yes/no answer is as good as the quote's bearing on the part (about_the_part, strictly);
        # what follows the yes or no ("没有喝，他让酒先斟下") is stated by the quote like any answer
        if not normalize(rest).text:
            return True, Msg.of("check.yes_no")
        ok, why = answer_supported(rest, region, passage, "", quoted, names)
        return ok, join([Msg.of("check.yes_no"), why])
    answer_norm = normalize(answer).text
    # (a yes/no answer returned above); one side of a choice the question offers ("内部还是外部?" ->
    # 外部) repeats the question's words and answers it
    part_norm = normalize(part).text
    if (part and not (_ALTERNATIVE.search(part) and not _ALTERNATIVE.search(answer))
            and not _one_of_named(answer_norm, part_norm)):
        own = content(answer, names).terms
        if own and all(contains(part_norm, t) for t, _ in own) and _joined_in(answer_norm, part_norm):
            return False, Msg.of("check.answer_repeats_question")
    if not answer_norm:
        return False, Msg.of("check.empty_answer")
    if content_weight(answer_norm) > MAX_ANSWER_WEIGHT:
        return False, Msg.of("check.answer_too_long", n=len(answer_norm))
    missing = [t for t, forms in hard_facts(answer, names)
               if not found_in(forms, quoted if t[0].isdigit() else passage)]
    if missing:
        return False, Msg.of("check.answer_not_in_quote", missing=", ".join(missing))
    pieces = answer_pieces(answer)
    terms = content(answer, names).terms
    if all(len(p) <= SHORT_ANSWER for p in pieces):
        absent = [p for p in pieces if not _piece_found(p, quoted, names)
                  and not (_piece_found(p, passage, names) and coverage(content(p, names), quoted) >= ANSWER_COVERAGE / 2)]
        if not absent:
            return True, Msg.of("check.answer_in_quote")
        # a short paraphrase (酒还是温的 for 其酒尚温) is judged by its content like a long one; a name
        # the quote does not hold is not an answer the quote states, whatever the sentence around it says
        if all(t in names for t, _ in terms):
            return False, Msg.of("check.answer_not_in_quote", missing=", ".join(absent))
    copied = _copy_slip(answer_norm, region)
    if copied:
        return False, Msg.of("check.answer_changes_copy", changed=copied)
    stated = coverage(Content(terms), region)
    # a short answer is one fact: every term of it must be stated (金平府的国王 is not 金平府's 大王)
    if stated >= (1.0 if len(answer_norm) <= SHORT_ANSWER else ANSWER_COVERAGE):
        return True, Msg.of("check.quote_states_answer", share=stated)
    if stated < ANSWER_COVERAGE / 2 and terms:
        # so little of the answer in the quote's sentence is no paraphrase of it: another fact
        return False, Msg.of("check.answer_absent", share=stated)
    return False, Msg.of("check.answer_partly_stated", share=stated)


def _copy_slip(answer_norm: str, region: str) -> str:
    """An answer copied almost word for word from the quote's sentence (85% or more of it in runs of
    3+ characters) whose other characters are content the sentence does not have: a changed fact, not
    a paraphrase. Returns those characters ("" when the answer is not such a copy)."""
    if len(answer_norm) < 8:
        return ""
    matcher = SequenceMatcher(None, answer_norm, region, autojunk=False)
    covered = [False] * len(answer_norm)
    for block in matcher.get_matching_blocks():
        if block.size >= 3:
            for k in range(block.a, block.a + block.size):
                covered[k] = True
    if sum(covered) < 0.85 * len(answer_norm) or all(covered):
        return ""
    extra = "".join(ch for ch, ok in zip(answer_norm, covered, strict=True)
                    if not ok and is_han(ch) and ch not in STOP_HAN and ch not in region)
    return extra


def about_the_part(part: str, answer: str, region: str, question: str = "", passage: str = "",
                   quoted: str = "", names: Names | None = None) -> tuple[bool, list[str]]:
    """Whether the quote's sentence (``region``) speaks of ``part``: it states a term of what the part
    asks (other than its names, and other than the answer's own names and numbers), and more than one
    character's worth of the part (山 of 落伽山 alone for 五行山, 王 of 大王 for 国王, is too little),
    unless it states half of what the part asks. A part that asks nothing but a name is held to the
    name. An English part on a Chinese passage must name something the quote's sentence says, as the
    book writes it (rag.crosslingual); a part with nothing to compare is not held to it."""
    names = names or {}
    # what the part quotes ("设计方案二" 实际占多少) is what it asks about: a sentence of another ("设计方案一")
    named = [t for t in named_terms(part) if any(is_han(ch) for ch in t)]
    if any(is_han(ch) for ch in region) and any(not _named_in(t, region) for t in named):
        return False, []
    # a quote that names another of the series and not the part's own is about the other, however
    # the sentence goes on ("“设计方案一”占…25%，“设计方案二”建议…": 25% is the first's)
    if quoted and any(t not in quoted and _one_changed(t, quoted) for t in named):
        return False, []
    facts = "".join(t for t, _ in hard_facts(answer, names))
    # a part asks what its sentence of the question asks ("多远" is "一个筋斗能翻多远"): the sentence of the
    # question that shares most with the part
    asked = max(_QUESTION_END.split(question), key=lambda q: len(shared_terms(content(part, names), normalize(q).text)),
                default="") if question else ""
    terms = [(t, forms) for t, forms in content(f"{part} {asked}", names).terms if not (facts and t in facts)]
    if not any(is_han(ch) for ch in region) or not terms:
        return True, []
    if not any(is_han(t[0]) for t, _ in terms):
        # an English part on a Chinese book: its words as the book writes them (CC-CEDICT, pinyin names
        # found in the passage, with their other names: Guan Yu -> 关羽 -> 云长)
        from rag.crosslingual import BookText, chinese_terms, glossary

        words = chinese_terms(part, BookText([passage or region]), glossary())
        forms = {f for w in words for f in names.get(normalize(w).text, frozenset({normalize(w).text}))}
        found = sorted(f for f in forms if f in region and (len(f) >= 2 or f not in STOP_HAN))
        return bool(found), found
    shared = shared_terms(Content(tuple(terms)), region)
    asks = [(t, forms) for t, forms in terms if t not in names]
    if not asks:
        return bool(shared), shared
    asked = [t for t in shared if t not in names]
    if is_yes_no(answer):  # a bare yes or no says nothing itself: the quote itself must speak of the part
        own = shared_terms(Content(tuple(terms)), quoted or region)
        return len(own) >= 2 and any(t not in names for t in own), own
    enough_of_it = sum(len(t) for t in shared) >= 2 or coverage(Content(tuple(asks)), region) >= 0.5
    return bool(asked) and enough_of_it, shared


_NAMED = re.compile(r"[“\"「《]([^”\"」》]{2,30})[”\"」》]")


def named_terms(text: str) -> list[str]:
    """What a text quotes or names as a title (“设计方案二”, 《保证反担保合同》), normalised."""
    return [t for t in (normalize(m.group(1)).text for m in _NAMED.finditer(text)) if t]


def part_facts_missing(part: str, sources: Sequence[Source]) -> str:
    """The facts a part asks about that no source states: its numbers with two digits or a unit of time
    (在1975年写了什么: the source's paper is of 1965) and what it quotes or names as a title. A source
    that has none of them does not speak of what the part asks, whatever it says of the rest."""
    text = " ".join(f"{s.label_norm.text} {s.norm.text}" for s in sources)  # (normalised once per source)
    numbers = [f for f in facts_of(part) if f[0].isdigit() and (len(f) - len(f.lstrip("0123456789")) >= 2
                                                               or any(u in f for u in "年月日%"))]
    missing = [f for f in numbers if not fact_in(f, text)] + [t for t in named_terms(part) if not _named_in(t, text)]
    return "、".join(dict.fromkeys(missing))


def _named_in(term: str, text: str) -> bool:
    """A quoted term or title in ``text``: as written, or (a title the asker words otherwise: “在弗雷斯诺散步”
    for 《走进弗雷斯诺》) half of its pairs of Han characters, unless the text has it with one character
    changed: another of a series."""
    if term in text:
        return True
    if _one_changed(term, text):
        return False
    n = len(term)
    pairs = [term[i:i + 2] for i in range(n - 1) if is_han(term[i]) and is_han(term[i + 1])]
    return bool(pairs) and sum(p in text for p in pairs) >= 0.5 * len(pairs)


def _one_changed(term: str, text: str) -> bool:
    """Whether ``text`` has ``term`` with one character changed: another of a series ("设计方案二" beside
    "设计方案一", 第二条 / 第三条)."""
    n = len(term)
    return any(sum(a != b for a, b in zip(term, text[i:i + n], strict=True)) == 1 for i in range(len(text) - n + 1))


def part_of_question(part: str, question: str) -> bool:
    """Whether ``part`` is a part of ``question``: it shares a content term with it (any script, any
    form), or has no content of its own to compare."""
    terms = content(part)
    if not terms.terms or not question.strip():
        return True
    # a Chinese question's name in Latin letters is its own: a part naming another (USGS for the
    # question's UGSS) is about something the question does not ask of; one written out whole
    # (Dyrachium for a question's cut-off "Dy") is the same
    if script_of(question) == "han":
        asked = set(latin_words(question)) | latin_names(question)
        if any(not any(n.startswith(a) or a.startswith(n) for a in asked) for n in latin_names(part)):
            return False
    return bool(shared_terms(terms, normalize(question).text))


@dataclass(frozen=True)
class PartCheck:
    """The code's verdict on one part of the question the judge claimed to cover: the one record of a
    checked part, kept in the evaluation (``rag.schemas.Evaluation.parts``), the graph's state, the
    page and the script API's JSON (its fields in this order)."""

    part: str
    answer: str | None = ""
    source: int | None = None  # the number the judge cited
    quote: str | None = ""
    status: PartStatus = "not_found"  # (the defaults: a part a reply or an old report names without a check)
    detail: Msg | str = ""  # why (codes ``check.*``; ``str(detail)`` is the English text; plain text from old reports)
    matched_source: int | None = None  # where the quote was actually found (may differ from ``source``)
    span: tuple[int, int] | None = None  # the quote's span in that source's text (for highlighting)
    origin: Literal["book", "web"] | None = None


def sentence_around(norm: Norm, text: str, match: QuoteMatch) -> str:
    """The normalised text of the sentence the quote lies in and the one before it (where its "he" and
    "it" are named), at most ``WINDOW`` characters before the quote and ``WINDOW // 2`` after it."""
    start, end = sentence_span(text, match)
    return normalize(text[start:end]).text


def sentence_span(text: str, match: QuoteMatch) -> tuple[int, int]:
    """Where in ``text`` the sentences of ``sentence_around`` lie."""
    a, b = match.span
    start = max(0, a - WINDOW)
    before = [m.end() for m in _SENTENCE_END.finditer(text, start, a)]
    # back to the sentence before the quote's, further when those are short (a list of one-line items)
    earlier = [p for p in before[:-1] if a - p >= MIN_BEFORE] if len(before) >= 2 else []
    start = earlier[-1] if earlier else (before[0] if before and a - before[0] >= MIN_BEFORE else start)
    after = _SENTENCE_END.search(text, b, min(len(text), b + WINDOW // 2))
    end = after.start() if after else min(len(text), b + WINDOW // 2)
    return start, end


def source_names(sources: Sequence[Source], aliases: Mapping[str, Sequence[str]] | None = None) -> Names:
    """The other names of the people the sources speak of: the book's own (``aliases``, from
    ``rag.aliases`` over the whole book, when the caller has it) and those the sources introduce."""
    from rag.aliases import build_aliases

    found = dict(build_aliases(s.text for s in sources))
    for name, others in (aliases or {}).items():
        found[name] = tuple(dict.fromkeys([*found.get(name, ()), *others]))
    return name_groups(found)


def _figures(quote: str) -> bool:
    """Whether every clause of ``quote`` states a figure ("假冒…数额共人民币4899324元，侵犯…数额共人民币
    121716元"): such a quote, copied whole, is the answer's figures with what each counts."""
    clauses = [c for c in CLAUSES.split(quote) if normalize(c).text]
    return len(clauses) > 1 and all(any(t[0].isdigit() for t, _ in content(c).terms) for c in clauses)


def verify_part(part: str, answer: str | None, source: int | None, quote: str | None,
                sources: Sequence[Source], *, question: str = "",
                aliases: Mapping[str, Sequence[str]] | None = None) -> PartCheck:
    """Verify one claimed part (see the module docstring): the cited source first, then any other.
    ``aliases``: the book's other names of its people (``rag.aliases``), when the caller has them."""
    names = source_names(sources, aliases)
    if says_not_found(quote) or says_not_found(answer):
        return PartCheck(part, answer, source, quote, "not_found", Msg.of("check.no_evidence"))
    assert quote is not None and answer is not None
    if question and not part_of_question(part, question):
        return PartCheck(part, answer, source, quote, "unverified", Msg.of("check.not_a_part"))
    absent = part_facts_missing(part, sources)
    if absent:  # the sources do not speak of what the part asks about (its 1975, its 《保证反担保合同》)
        return PartCheck(part, answer, source, quote, "unverified", Msg.of("check.part_not_in_sources", missing=absent))
    quote_norm = normalize(quote).text
    if content_weight(normalize(quote, numerals=False).text) < MIN_QUOTE_WEIGHT:  # 重八十二斤 is five characters
        return PartCheck(part, answer, source, quote, "unverified", Msg.of("check.quote_too_short"))
    if content_weight(quote_norm) > MAX_QUOTE_WEIGHT:
        return PartCheck(part, answer, source, quote, "unverified", Msg.of("check.quote_too_long", n=len(quote_norm)))
    if hedged(answer):  # "外地（未说明具体地点）": the answer says the sources do not give it
        return PartCheck(part, answer, source, quote, "unverified", Msg.of("check.answer_hedged"))
    # an answer that is its whole quote shows nothing of which words state it, unless the quote is short
    # (a figure: "4765.82万元"); digits and Latin letters weigh a third of a Han character
    if (content_weight(quote_norm) > REPEAT_WEIGHT and normalize(main_answer(answer)).text == quote_norm
            and not _figures(quote)):
        return PartCheck(part, answer, source, quote, "unverified", Msg.of("check.answer_repeats_quote"))
    ordered = sorted(sources, key=lambda s: (s.number != source, s.number))
    reasons: list[Msg] = []
    wrong = False
    for src in ordered:
        for norm, text, in_label in ((src.norm, src.text, False), (src.label_norm, src.label, True)):
            match = match_quote(quote, norm)
            if match is None:
                continue
            # a quote from the chapter heading: the heading and the chapter's passage say where it happens
            region = f"{norm.text}{src.norm.text}" if in_label else sentence_around(norm, text, match)
            ok, why = answer_supported(answer, region, f"{src.label_norm.text}{src.norm.text}", question or part,
                                       match.region(norm), names)
            if not match.exact:
                # A quote that matched only approximately must carry the answer as the book writes it: an
                # answer copied into the quote but not in the book, or an answer the book states that the
                # quote changed, is a different fact, not a copying slip.
                pieces = answer_pieces(main_answer(answer))
                if any(contains(quote_norm, p) != contains(region, p) for p in pieces):
                    ok, why = False, Msg.of("check.answer_differs")
            if ok:
                about, _ = about_the_part(part, answer, region, question, f"{src.label}\n{src.text}",
                                          match.region(norm), names)
                if not about:
                    ok, why = False, Msg.of("check.not_about_part")
                    # a bare yes or no says nothing code could compare: its quote is all its evidence
                    wrong = wrong or is_yes_no(answer)
            if ok:
                if src.number != source:
                    why = Msg.of("check.found_elsewhere", detail=why, cited=str(source), found=src.number)
                heading = "_heading" if in_label else ""
                kind = (Msg.of(f"check.quote_verbatim{heading}") if match.exact
                        else Msg.of(f"check.quote_matched{heading}", ratio=match.ratio))
                return PartCheck(part, answer, source, quote, "verified", join([kind, why]),
                                 matched_source=src.number, span=None if in_label else match.span,
                                 origin=src.origin)
            wrong = wrong or bool(codes(why) & SHOWN_WRONG)
            reasons.append(Msg.of("check.in_source", n=src.number, detail=why))
            break
    detail = (reasons[0] if len(reasons) == 1 else join([*reasons])) if reasons else Msg.of("check.quote_not_found")
    # a quote found in a source whose answer nothing there contradicts is not shown wrong: undecided
    return PartCheck(part, answer, source, quote, "unverified" if wrong or not reasons else "undecided", detail)


_CLAUSE = re.compile(r"[，,；;：:]")
_ASKS = re.compile(rf"{ASKING}|么|何|\?|？|\b(?:{ASKING_EN}|did|does|is|was|were)\b", re.I)
QUESTION_SHARE = 0.25  # of each sentence of the question, the share of content terms the parts must mention


def question_left_out(question: str, parts: Sequence[str]) -> list[str]:
    """The sentences of ``question`` (a two-part question is often two) whose content the judge's
    ``parts`` hardly mention (under ``QUESTION_SHARE`` of their terms, in any form): a judge that names
    only the parts it can answer has not shown that the rest is covered."""
    if not parts:
        return []
    said = normalize(" ".join(parts)).text
    left = []
    for sentence in _QUESTION_END.split(question):
        # what a sentence asks is in its clauses that ask (a question word); the rest sets the scene
        clauses = [c for c in _CLAUSE.split(sentence) if _ASKS.search(c)] or [sentence]
        terms = content(" ".join(clauses)).terms
        if terms and coverage(Content(terms), said) < QUESTION_SHARE:
            left.append(sentence.strip())
    return left
