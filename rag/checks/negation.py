"""Negations compared between a claim and the source sentences that state it: what a negation denies
is the pair of characters (or the English word) right after it, and a claim differs from its sources
when the one says it only with a negation before it and the other only without; clause by clause as
well. Pure: no model, no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.checks.facts import CLAUSES, QUOTED, SOURCE_NOUN
from rag.checks.text import STOP_EN, Names, contains, content, found_in, is_han, normalize, stem

# Negation words (Chinese and English); words that hold one without negating (不久, 无论, 非常) are
# taken out before looking.
_NEGATION = re.compile(r"没有|没|未|不|非|无|莫|勿|弗|毋|\b(?:not|never|no|nobody|nothing|none|neither|nor|"
                       r"cannot|without)\b|n't", re.I)
_NOT_NEGATION = re.compile(r"不久|不过|不少|不断|不同|不但|不仅|不觉|不住|不禁|不免|不料|不妨|不错|不得不|不一|"
                           r"无论|无数|无不|非常|除非|莫非|未来|无比|别人|别的|分别|告别|辞别|特别|区别|"
                           r"莫名|不可思议|而非|而不是|\bno one\b|\bnot only\b|\brather than\b|\binstead of\b")
NEGATION_MATCH = 2  # content terms a sentence's clause shares with a clause of its source to be compared


def is_negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (not one of the words that only look like one: 不久, 不过)."""
    return bool(_NEGATION.search(_NOT_NEGATION.sub(" ", text)))


# characters between a negation and what it denies (没有被抢夺, 不曾去, 未能成功): skipped to reach it
_NEGATED_SKIP = frozenset("被把将曾能会可得在有是要肯敢去来也都还再就又让使对向给从其予")
_NEGATED_CLOSE = frozenset("有曾能")
_EN_NEGATED_SKIP = frozenset({"be", "been", "being", "have", "has", "had", "to", "a", "an", "the", "any", "at", "all",
                              "ever", "even", "yet", "really", "so", "very", "much", "as", "it", "him", "her", "them"})
NEGATION_REACH = 4  # characters (Han) or words (Latin) before a predicate within which a negation denies it


def _masked(text: str) -> str:
    """``text`` with the words that hold a negation character without negating (不久, 无论) blanked out,
    offsets kept."""
    return _NOT_NEGATION.sub(lambda m: " " * len(m.group(0)), text)


def _predicates(clause: str) -> list[tuple[str, bool]]:
    """What each part of a clause states, and whether a negation just before denies it: every pair of
    adjacent Han characters (and every Latin word's stem), with True when a negation ends at most
    ``NEGATION_REACH`` characters (words) before it in the clause."""
    masked = _masked(clause)
    ends = [m.end() for m in _NEGATION.finditer(masked)]
    out: list[tuple[str, bool]] = []
    for i in range(len(clause) - 1):
        if is_han(clause[i]) and is_han(clause[i + 1]):
            out.append((clause[i:i + 2], any(i - NEGATION_REACH <= e <= i for e in ends)))
    words = [m.group(0).lower() for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", clause)]
    for k, word in enumerate(words):
        if word in STOP_EN or word in _EN_NEGATED_SKIP or _NEGATION.fullmatch(word):
            continue
        before = words[max(0, k - NEGATION_REACH):k]
        denied = any(_NEGATION.fullmatch(w) or w.endswith("n't") for w in before) and "only" not in before
        out.append((stem(word), denied))
    return out


def _denied(clause: str, skip: frozenset[str] = _NEGATED_SKIP) -> list[str]:
    """What the negations of a clause deny: the two Han characters after each (past ``skip``: 被, 有,
    曾…), or the stem of the first content word after an English one."""
    masked = _masked(clause)
    found = []
    for m in _NEGATION.finditer(masked):
        i = m.end()
        if is_han(m.group(0)[0]):
            while i < len(clause) and clause[i] in skip:
                i += 1
            if i + 1 < len(clause) and is_han(clause[i]) and is_han(clause[i + 1]):
                found.append(clause[i:i + 2])
        else:
            for w in re.findall(r"[A-Za-z][A-Za-z'-]*", clause[i:])[:4]:
                w = w.lower()
                if w not in STOP_EN and w not in _EN_NEGATED_SKIP:
                    found.append(stem(w))
                    break
    return found


def _verbatim_quotes(body: str, sources_text: str) -> str:
    """``body`` with quoted speech that the sources have word for word blanked out: a negation inside
    the source's own words is the source's."""
    hay = normalize(sources_text).text
    return QUOTED.sub(lambda m: " " * len(m.group(0)) if contains(hay, normalize(m.group(1)).text) else m.group(0), body)


# a clause saying what the sources themselves do not say ("资料本身没有用…来定性"): about the text, not
# a denial of something the text states
_SOURCES_LACK = re.compile(rf"^\s*{SOURCE_NOUN}(?:并|都|也|均)?(?:没有|没|未|不|无)")


def sources_lack(clause: str) -> bool:
    """Whether a clause says what the sources themselves do not say ("资料并没有说…", "原文未提…")."""
    return bool(_SOURCES_LACK.match(clause))


def negation_differs(body: str, windows: Sequence[str], names: Names) -> str | None:
    """A clause of the sentence that denies what the sentences stating the claim affirm, or affirms
    what they deny ("没有被抢夺" / "被抢夺"; "was not" / "was"): that clause, else None. What a negation
    denies is the pair of characters (the word) right after it; the claim and its sentences differ when
    the one says it only with a negation before it and the other only without."""
    body = _verbatim_quotes(body, " ".join(windows))
    clauses = [c for c in CLAUSES.split(body) if c.strip()]
    source_clauses = [c for w in windows for c in CLAUSES.split(w) if c.strip()]
    source: dict[str, set[bool]] = {}
    for sc in source_clauses:
        for pred, denied in _predicates(sc):
            source.setdefault(pred, set()).add(denied)
    # what the sources deny is read close to the negation: 没 also means "sink" (都没在昏暗里)
    source_denied = {p for sc in source_clauses for p in _denied(sc, _NEGATED_CLOSE)}
    for clause in clauses:
        if len(content(clause, names).terms) < NEGATION_MATCH or sources_lack(clause):
            continue
        mine: dict[str, set[bool]] = {}
        for pred, denied in _predicates(clause):
            mine.setdefault(pred, set()).add(denied)
        for pred in _denied(clause):  # the claim denies it; its sentences only affirm it
            if source.get(pred) == {False}:
                return clause.strip()
        for pred in source_denied:  # its sentences deny it; the claim only affirms it
            if mine.get(pred) == {False} and source.get(pred) == {True}:
                return clause.strip()
        if _clause_negation_differs(clause, source_clauses, names):
            return clause.strip()
    return None


_LONE_WORD = re.compile(r"\s*([\u4e00-\u9fff])(?![\u4e00-\u9fffA-Za-z0-9])")


def _clause_negation_differs(clause: str, source_clauses: Sequence[str], names: Names) -> bool:
    """The clause and the source clause sharing most of its content (at least ``NEGATION_MATCH`` terms)
    differ in a negation that bears on what they share, or the clause denies something while the
    sentences stating the rest of it deny nothing."""
    terms = content(clause, names).terms
    best, best_n = None, 0
    for sc in source_clauses:
        norm = normalize(sc).text
        n = sum(1 for _, forms in terms if found_in(forms, norm))
        if n > best_n:
            best, best_n = sc, n
    if best is None or best_n < NEGATION_MATCH:
        return False
    if is_negated(clause) and not any(is_negated(sc) for sc in source_clauses):
        return True
    if best_n < max(NEGATION_MATCH + 1, 0.6 * len(terms)):
        return False
    negated, other = (clause, best) if is_negated(clause) else (best, clause)
    if is_negated(other) or not is_negated(negated):
        return False
    # the negation must bear on what the two share: a shared term right after it (没有倒拔 / 倒拔); in
    # Han, a word of it (two characters together: 未偿还 does not bear on 赔偿款, which shares 偿)
    shared = {ch for t, forms in terms if found_in(forms, normalize(best).text) for ch in t}
    text = _masked(negated)
    plain = normalize(other).text
    for m in _NEGATION.finditer(text):
        after = normalize(text[m.end():m.end() + 8]).text[:4]
        if any(is_han(ch) for ch in after[:2]):
            lone = _LONE_WORD.match(text, m.end())  # 都没有错，: a word of one character ends the clause
            # a negation the claim adds may bear on any word just after it (并非根据国家…); one of the
            # source's, only on the word right after it, past 被/有/能 (无争议入职: 争议, not 入职)
            starts = [i for i in range(len(after) - 1)
                      if negated is clause or all(ch in _NEGATED_SKIP for ch in after[:i])]
            if any(after[i:i + 2] in plain for i in starts) or (lone and lone.group(1) in plain):
                return True
        elif any(ch in shared for ch in after):
            return True
    return False
