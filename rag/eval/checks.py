"""Model-free checks of the evidence code on labelled cases (``rag eval tamper``, ``rag eval seeded``).

- Tamper: for every answerable case, evidence is built from the case's own answer strings (the
  clause of the passage that holds each one, quoted verbatim) and must verify; then each tampering
  (the answer changed by one character in answer and quote, the quote changed inside the answer,
  the answer swapped for another case's answer, a number changed) must flip the case to "not enough".
- Seeded: a faithful cited answer is built from the same clauses; then errors are seeded (an
  unsupported sentence inserted, citation numbers swapped, a number changed) and the sentence
  checker must flag them, while flagging as few sentences of the unmodified answers as possible.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rag.agent.judge import sources_of
from rag.checks import Source, check_answer, citations_of, normalize, verify_part
from rag.checks.quotes import main_answer
from rag.eval.cases import Case
from rag.eval.metrics import ratio

_CLAUSE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]?")
_DIGIT_RUN = re.compile(r"\d+")


def _clause_with(text: str, needle: str) -> str | None:
    """The sentence of ``text`` that holds ``needle`` (exactly as written)."""
    for m in _CLAUSE.finditer(text):
        if needle in m.group(0):
            return m.group(0).strip()
    return None


@dataclass(frozen=True)
class Evidence:
    case: Case
    parts: tuple[tuple[str, str, int, str], ...]  # (part, answer, source number, quote)
    sources: tuple[Source, ...]


def evidence_of(case: Case, max_chars: int = 1200) -> Evidence | None:
    """Verbatim evidence for each answer string of an answerable case; None if one has no clause."""
    if not case.label_enough or not case.answer_strings:
        return None
    sources = tuple(sources_of(case.passages(), (), max_chars))
    parts = []
    for answer in case.answer_strings:
        for src in sources:
            clause = _clause_with(src.text, answer)
            if clause:
                parts.append((case.question, answer, src.number, clause))
                break
        else:
            return None
    return Evidence(case, tuple(parts), sources)


def _all_verified(parts: Sequence[tuple[str, str, int, str]], sources: Sequence[Source]) -> bool:
    return all(verify_part(p, a, s, q, sources).status == "verified" for p, a, s, q in parts)


def _forge_char(answer: str) -> str:
    """The answer with one content character changed (the last one, so numbers change value)."""
    for i in range(len(answer) - 1, -1, -1):
        ch = answer[i]
        if ch.isdigit():
            return answer[:i] + str((int(ch) + 1) % 10) + answer[i + 1:]
        if ch.strip() and normalize(ch, numerals=False).text:
            return answer[:i] + ("甲" if ch != "甲" else "乙") + answer[i + 1:]
    return answer + "甲"


_CN_NEXT = dict(zip("一二三四五六七八九", "二三四五六七八九八", strict=True))
_LIST_MARKER = re.compile(r"^\s*\d+[.)、]\s*")
_ITEM_MARKER = re.compile(r"^\s*(?:[-*+•]\s*)?(?:\d+[.)、]|[一二三四五六七八九十]+、)?\s*")


def _change_number(text: str) -> str | None:
    """``text`` with its first number changed (a list marker like "3. " is not a number)."""
    marker = _LIST_MARKER.match(text)
    if marker:
        changed = _change_number(text[marker.end():])
        return None if changed is None else text[:marker.end()] + changed
    m = _DIGIT_RUN.search(text)
    if m:
        return text[:m.start()] + str(int(m.group(0)) + 1) + text[m.end():]
    for i, ch in enumerate(text):
        if ch in _CN_NEXT:
            return text[:i] + _CN_NEXT[ch] + text[i + 1:]
    return None


Tamper = Callable[[tuple[str, str, int, str], Sequence[str]], tuple[str, str, int, str] | None]


def _t_answer_char(p: tuple[str, str, int, str], _: Sequence[str]) -> tuple[str, str, int, str] | None:
    part, answer, src, quote = p
    forged = _forge_char(answer)
    return (part, forged, src, quote.replace(answer, forged))


def _t_quote_char(p: tuple[str, str, int, str], _: Sequence[str]) -> tuple[str, str, int, str] | None:
    part, answer, src, quote = p
    return (part, answer, src, quote.replace(answer, _forge_char(answer)))


def _t_swap(p: tuple[str, str, int, str], others: Sequence[str]) -> tuple[str, str, int, str] | None:
    part, answer, src, quote = p
    for other in others:
        if normalize(other).text and normalize(other).text not in normalize(quote).text:
            return (part, other, src, quote)
    return None


def _t_number(p: tuple[str, str, int, str], _: Sequence[str]) -> tuple[str, str, int, str] | None:
    part, answer, src, quote = p
    changed = _change_number(answer)
    return None if changed is None else (part, changed, src, quote.replace(answer, changed))


TAMPERS: dict[str, Tamper] = {"answer_char": _t_answer_char, "quote_char_in_answer": _t_quote_char,
                              "answer_swapped": _t_swap, "number_changed": _t_number}


def tamper_report(cases: Sequence[Case], max_chars: int = 1200) -> dict[str, Any]:
    """Verified baseline per answerable case, and per tampering how many flipped to not enough."""
    built = [e for e in (evidence_of(c, max_chars) for c in cases) if e is not None]
    answers = [(e.case.id, a) for e in built for _, a, _, _ in e.parts]
    baseline = [e for e in built if _all_verified(e.parts, e.sources)]
    rows: dict[str, dict[str, Any]] = {}
    failures: list[dict[str, Any]] = []
    for name, tamper in TAMPERS.items():
        tried = flipped = 0
        for e in baseline:
            for i, part in enumerate(e.parts):
                changed = tamper(part, [a for cid, a in answers if cid != e.case.id])
                if changed is None or changed == part:
                    continue
                tried += 1
                parts = (*e.parts[:i], changed, *e.parts[i + 1:])
                if _all_verified(parts, e.sources):
                    failures.append({"case": e.case.id, "tamper": name, "part": changed})
                else:
                    flipped += 1
        rows[name] = {"tried": tried, "flipped": flipped, "rate": ratio(flipped, tried)}
    return {"answerable": sum(1 for c in cases if c.label_enough), "with_evidence": len(built),
            "verified": len(baseline), "verified_rate": ratio(len(baseline), len(built)),
            "tampers": rows, "not_flipped": failures}


# --------------------------------------------------------------------------- seeded answer errors
def faithful_answer(e: Evidence) -> str:
    """One cited sentence per answer string: the clause that holds it, cited with its source."""
    sentences: list[str] = []
    for _, _, src, clause in e.parts:
        body = clause.rstrip("。！？!?；;.")
        if body not in "".join(sentences):
            sentences.append(f"{body}[{src}]。")
    return "".join(sentences)


def _flags(answer: str, sources: Sequence[Source]) -> list[bool]:
    return [s.status in ("unsupported", "uncited") for s in check_answer(answer, sources).sentences]


def seeded_report(cases: Sequence[Case], max_chars: int = 1200) -> dict[str, Any]:
    """Seeded errors flagged (per kind) and false flags on the unmodified answers."""
    built = [e for e in (evidence_of(c, max_chars) for c in cases) if e is not None]
    foreign = [(e.case.id, _clause_with(s.text, a) or "") for e in built for _, a, n, _ in e.parts
               for s in e.sources if s.number == n]
    clean_sentences = clean_flags = 0
    seeded: dict[str, dict[str, int]] = {k: {"tried": 0, "flagged": 0} for k in ("inserted", "citation_swapped",
                                                                                "number_changed")}
    misses: list[dict[str, Any]] = []

    def seed(kind: str, e: Evidence, bad_sentence: str) -> None:
        seeded[kind]["tried"] += 1
        flags = _flags(bad_sentence, e.sources)
        if flags and all(flags):
            seeded[kind]["flagged"] += 1
        else:
            misses.append({"case": e.case.id, "kind": kind, "sentence": bad_sentence})

    for e in built:
        answer = faithful_answer(e)
        flags = _flags(answer, e.sources)
        clean_sentences += len(flags)
        clean_flags += sum(flags)
        first = e.parts[0]
        # an unsupported sentence: another case's clause, cited as if it came from source [1]
        other = next((t for cid, t in foreign if cid != e.case.id and t
                      and normalize(t).text not in normalize(" ".join(s.text for s in e.sources)).text), None)
        if other:
            seed("inserted", e, f"{other.rstrip('。')}[1]。")
        # the citation moved to a source that does not hold the sentence
        wrong = next((s.number for s in e.sources if s.number != first[2]
                      and normalize(first[3]).text not in s.norm.text), len(e.sources) + 1)
        seed("citation_swapped", e, f"{first[3].rstrip('。')}[{wrong}]。")
        changed = _change_number(first[3])
        if changed and changed != first[3]:
            seed("number_changed", e, f"{changed.rstrip('。')}[{first[2]}]。")
    for row in seeded.values():
        row["rate"] = ratio(row["flagged"], row["tried"])  # type: ignore[assignment]
    total_tried = sum(r["tried"] for r in seeded.values())
    total_flagged = sum(r["flagged"] for r in seeded.values())
    return {"answers": len(built), "clean_sentences": clean_sentences, "false_flags": clean_flags,
            "false_flag_rate": ratio(clean_flags, clean_sentences), "seeded": seeded,
            "flagged_rate": ratio(total_flagged, total_tried), "missed": misses}


# --------------------------------------------------------------------------- on recorded model replies
def _verified_case(case: Case, reply: dict[str, Any], max_chars: int) -> tuple[list[tuple[str, str, int, str]],
                                                                              list[Source]] | None:
    """The parts of a recorded evidence reply and the case's sources, when code verifies the case."""
    from rag.agent.judge import check_parts, decide
    from rag.schemas import EvidenceJudgement

    try:
        judged = EvidenceJudgement.model_validate(reply)
    except ValueError:
        return None
    sources = sources_of(case.passages(), (), max_chars)
    results = check_parts(judged.parts, sources, case.question)
    if not decide(judged, results, "evidence", case.question).enough:
        return None
    return [(p.part, p.answer, p.source or 0, p.quote) for p in judged.parts], sources


def _still_enough(case: Case, parts: Sequence[tuple[str, str, int, str]], sources: Sequence[Source]) -> bool:
    from rag.agent.judge import check_parts, decide
    from rag.schemas import ClaimedPart, EvidenceJudgement

    claimed = [ClaimedPart(part=p, answer=a, source=s or None, quote=q) for p, a, s, q in parts]
    reply = EvidenceJudgement(reason="tampered", parts=claimed, enough=True)
    return decide(reply, check_parts(claimed, sources, case.question), "evidence", case.question).enough


def tamper_replies(cases: Sequence[Case], replies: dict[tuple[str, str, int], Any],
                   max_chars: int = 1200) -> dict[str, Any]:
    """Every answerable case whose recorded evidence reply code verifies, tampered part by part (the
    answer changed by one character in answer and quote, the quote changed inside the answer, the
    answer swapped for another case's, a number changed): each tampered case must flip to not enough."""
    verified = []
    for case in cases:
        reply = replies.get((case.id, "judge-evidence", 1))
        if case.label_enough and isinstance(reply, dict):
            found = _verified_case(case, reply, max_chars)
            if found:
                verified.append((case, *found))
    answers = [(case.id, a) for case, parts, _ in verified for _, a, _, _ in parts]
    rows: dict[str, dict[str, Any]] = {}
    failures: list[dict[str, Any]] = []
    for name, tamper in TAMPERS.items():
        tried = flipped = 0
        for case, parts, sources in verified:
            for i, part in enumerate(parts):
                if normalize(part[1]).text not in normalize(part[3]).text and name != "answer_swapped":
                    continue  # a paraphrased answer: the in-quote tampers do not apply
                part = (part[0], main_answer(part[1]), part[2], part[3])  # a gloss in brackets is not checked
                changed = tamper(part, [a for cid, a in answers if cid != case.id])
                if changed is None or changed == part:
                    continue
                tried += 1
                if _still_enough(case, [*parts[:i], changed, *parts[i + 1:]], sources):
                    failures.append({"case": case.id, "tamper": name, "part": changed})
                else:
                    flipped += 1
        rows[name] = {"tried": tried, "flipped": flipped, "rate": ratio(flipped, tried)}
    return {"answerable": sum(1 for c in cases if c.label_enough), "verified": len(verified),
            "tampers": rows, "not_flipped": failures}


_NAME_SWAPS = ("赵云", "吕布", "周瑜", "沙僧", "牛魔王", "太上老君", "司马懿", "红孩儿")


def _seed_name(sentence: str, haystack: str) -> str | None:
    """The sentence with a name it uses (any of the name table's) replaced by one its sources never use."""
    from rag.checks.text import NAMES, content

    norm_terms = [t for t, _ in content(sentence).terms if t in NAMES]
    for term in norm_terms:
        original = next((n for n in sorted(NAMES[term], key=len, reverse=True) if n in sentence), None)
        if original is None:
            continue
        other = next((o for o in _NAME_SWAPS if o not in haystack and o not in NAMES.get(term, ())), None)
        if other:
            return sentence.replace(original, other, 1)
    return None


def _seed_chapter(sentence: str, sources: Sequence[Source]) -> str:
    """The sentence with a chapter reference added that none of its sources is from or names."""
    labels = normalize(" ".join(f"{s.label} {s.text}" for s in sources)).text
    chapter = next(n for n in ("一百一十七", "八十三", "二百零一", "九百九十九") if f"第{normalize(n).text}" not in labels)
    m = re.search(r"\[\d+(?:\s*[,，、-]\s*\d+)*\]", sentence)
    cut = m.start() if m else len(sentence.rstrip("。"))
    return f"{sentence[:cut]}（见第{chapter}回）{sentence[cut:]}"


def seeded_answer_report(cases: Sequence[Case], replies: dict[tuple[str, str, int], Any],
                         max_chars: int = 1200) -> dict[str, Any]:
    """Seeded errors in recorded answers: in each supported sentence of a recorded answer, one error at
    a time (a number changed, a name swapped for one the sources never use, a wrong chapter added, the
    citation swapped to another source, the sentence given as the book's while citing only a web
    page); the checker must flag the seeded sentence (unsupported or uncited)."""
    from rag.schemas import SearchResult

    kinds = ("number_changed", "name_swapped", "chapter_wrong", "citation_swapped", "web_as_book")
    seeded: dict[str, dict[str, Any]] = {k: {"tried": 0, "flagged": 0} for k in kinds}
    misses: list[dict[str, Any]] = []
    clean = {"sentences": 0, "supported": 0, "unsupported": 0, "uncited": 0}

    def seed(kind: str, case: Case, sentence: str, sources: Sequence[Source]) -> None:
        seeded[kind]["tried"] += 1
        marks = [s.status for s in check_answer(sentence, sources).sentences]
        if any(m in ("unsupported", "uncited") for m in marks):  # the part that holds the error is flagged
            seeded[kind]["flagged"] += 1
        else:
            misses.append({"case": case.id, "kind": kind, "sentence": sentence, "marks": marks})

    for case in cases:
        answer = replies.get((case.id, "answer", 1))
        if not isinstance(answer, str) or not case.label_enough:
            continue
        sources = sources_of(case.passages(), (), max_chars)
        checked = check_answer(answer, sources)
        for c in checked.sentences:
            if c.status == "no_claim":
                continue
            clean["sentences"] += 1
            clean[c.status] += 1
            if c.status != "supported" or not c.citations:
                continue
            # a sentence covered by a later citation is seeded with that citation made its own
            text = _ITEM_MARKER.sub("", c.text.replace("**", ""), count=1)
            text = text if citations_of(text) else f"{text.rstrip('。')}[{c.citations[0]}]。"
            haystack = " ".join(s.text for s in sources)
            changed = _change_number(re.sub(r"\[\d+\]", "", text))
            if changed and changed != re.sub(r"\[\d+\]", "", text):
                seed("number_changed", case, f"{changed.rstrip('。')}[{c.citations[0]}]。", sources)
            named = _seed_name(text, haystack)
            if named:
                seed("name_swapped", case, named, sources)
            seed("chapter_wrong", case, _seed_chapter(text, sources), sources)
            others = [s.number for s in sources if s.number not in c.citations]
            if others:
                seed("citation_swapped", case, re.sub(r"\[\d+(?:\s*[,，、-]\s*\d+)*\]", f"[{others[0]}]", text),
                     sources)
            web = SearchResult(title="网页", url="https://example.org/page", snippet=re.sub(r"\[\d+\]", "", text))
            web_sources = sources_of(case.passages(), [web], max_chars)
            web_no = len(sources) + 1
            body = re.sub(r"\[\d+(?:\s*[,，、-]\s*\d+)*\]", "", text).rstrip("。")
            seed("web_as_book", case, f"书中写道，{body}[{web_no}]。", web_sources)
    for row in seeded.values():
        row["rate"] = ratio(row["flagged"], row["tried"])
    tried = sum(r["tried"] for r in seeded.values())
    flagged = sum(r["flagged"] for r in seeded.values())
    return {"answers": sum(1 for c in cases if isinstance(replies.get((c.id, "answer", 1)), str)),
            "faithful": clean, "supported_rate": ratio(clean["supported"], clean["sentences"]),
            "uncited_rate": ratio(clean["uncited"], clean["sentences"]),
            "seeded": seeded, "flagged_rate": ratio(flagged, tried), "missed": misses}
