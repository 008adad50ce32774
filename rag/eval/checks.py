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
from pathlib import Path
from typing import Any

from rag.agent.judge import sources_of
from rag.checks import SentenceCheck, Source, check_answer, citations_of, normalize, verify_part
from rag.checks.quotes import main_answer
from rag.checks.text import frequent_words
from rag.eval.cases import Case, CaseError, jsonl_records
from rag.eval.metrics import ratio

_CLAUSE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]?")
_DIGIT_RUN = re.compile(r"\d+")


Relabel = Callable[[SentenceCheck, Sequence[Source]], SentenceCheck]  # a model's label applied to a mark


def marked(text: str, sources: Sequence[Source], question: str | None,
           relabel: Relabel | None = None) -> tuple[SentenceCheck, ...]:
    """The checks' marks of ``text``'s sentences, each with a model's label applied (``relabel``,
    given the sources it cites) when one is asked for."""
    marks = check_answer(text, sources, question=question).sentences
    if relabel is None:
        return marks
    by_number = {src.number: src for src in sources}
    return tuple(relabel(m, [by_number[n] for n in m.citations if n in by_number]) for m in marks)


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
#: The kinds of error ``seeded_answer_report`` seeds in recorded answers.
SEEDED_KINDS = ("number_changed", "name_swapped", "chapter_wrong", "citation_swapped", "web_as_book",
                "invented_detail", "other_action", "negation", "other_person", "question_echo", "cross_language",
                "unrelated_fact")
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
    # strict: what is measured is whether code still verifies the forged evidence; a part it can no
    # longer decide counts as caught (for a capable model's "enough" it would stand: ``decide``)
    return decide(reply, check_parts(claimed, sources, case.question), "evidence", case.question, strict=True).enough


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


def _seed_name(sentence: str, haystack: str, others: Sequence[str]) -> str | None:
    """The sentence with a word its sources use often (a person, a place: read from the passage) replaced
    by one another case's passages use often and these sources never do."""
    for word in frequent_words(haystack):
        if word in sentence:
            other = next((o for o in others if o not in haystack and o != word), None)
            return None if other is None else sentence.replace(word, other, 1)
    return None


def _split_cite(sentence: str) -> tuple[str, str]:
    """(the sentence's body without its end punctuation, its citation marks)."""
    cites = "".join(re.findall(r"\[\d+(?:\s*[,，、-]\s*\d+)*\]", sentence))
    body = re.sub(r"\[\d+(?:\s*[,，、-]\s*\d+)*\]", "", sentence).strip().rstrip("。.！!；;")
    return body, cites


def _seed_detail(sentence: str, detail: str) -> str:
    """The sentence with a clause added that its sources do not state (another passage's clause)."""
    body, cites = _split_cite(sentence)
    return f"{body}，{detail.strip().rstrip('。.！!；;，,')}{cites}。"


def _seed_other_person(sentence: str, haystack: str, others: Sequence[str]) -> str | None:
    """The sentence with its subject (the two characters it opens with, when its sources use them)
    replaced by someone another case's passages name and these sources never do."""
    body, cites = _split_cite(sentence)
    head = body[:2]
    if len(head) < 2 or not all("\u4e00" <= ch <= "\u9fff" for ch in head) or head not in haystack:
        return None
    other = next((o for o in others if o not in haystack and o[0] not in haystack), None)
    return None if other is None else f"{other}{body[2:]}{cites}。"


def _seed_action(sentence: str, haystack: str, others: Sequence[str]) -> str | None:
    """The sentence with a two-character word after its subject (most often what the subject did)
    replaced by a word of another case's passages these sources never use."""
    body, cites = _split_cite(sentence)
    for i in range(2, len(body) - 2):
        word = body[i:i + 2]
        if all("\u4e00" <= ch <= "\u9fff" for ch in word) and word in haystack:
            other = next((o for o in others if o[0] not in haystack and o[1] not in haystack), None)
            if other is None:
                return None
            return f"{body[:i]}{other}{body[i + 2:]}{cites}。"
    return None


# where a negation goes in a Chinese sentence: before the word that opens what its subject did
_ACTION = re.compile(r"[把被用将向让令对给]")
_NEGATIONS = ("没有", "并未", "未曾", "不曾", "not ", "never ")


def _seed_negation(sentence: str) -> str | None:
    """The sentence said the other way: 没有 put after its subject (a Chinese sentence) or "not" after
    its first auxiliary (an English one), or a negation it has taken out."""
    body, cites = _split_cite(sentence)
    for neg in _NEGATIONS:
        if neg in body:
            return f"{body.replace(neg, '', 1)}{cites}。"
    if any("\u4e00" <= ch <= "\u9fff" for ch in body[:4]) and len(body) > 4:
        start = body.find("：") + 1 if "：" in body[:15] else 0  # after a label ("起因：")
        m = _ACTION.search(body, start + 2)
        if m is None:  # no word that opens an action: the whole statement denied
            return f"{body[:start]}并非{body[start:]}{cites}。"
        return f"{body[:m.start()]}没有{body[m.start():]}{cites}。"
    m = re.search(r"\b(?:is|was|were|are|had|has|did|could|would)\b", body)
    return None if m is None else f"{body[:m.end()]} not{body[m.end():]}{cites}."


def _seed_cross_language(sentence: str, haystack: str) -> str:
    """A claim in the other language than the sources: an English sentence naming the sentence's
    subject in pinyin, on a Chinese source; a Chinese one on an English source."""
    body, cites = _split_cite(sentence)
    if any("\u4e00" <= ch <= "\u9fff" for ch in haystack):
        from pypinyin import lazy_pinyin

        head = "".join(lazy_pinyin(body[:2])).capitalize() if body[:2] else "He"
        return f"{head} was made of cheese and lived on the moon{cites}."
    return f"他住在月亮上，身体是奶酪做的{cites}。"


def _seed_chapter(sentence: str, sources: Sequence[Source]) -> str:
    """The sentence with a chapter reference added that none of its sources is from or names."""
    labels = normalize(" ".join(f"{s.label} {s.text}" for s in sources)).text
    chapter = next(n for n in ("一百一十七", "八十三", "二百零一", "九百九十九") if f"第{normalize(n).text}" not in labels)
    m = re.search(r"\[\d+(?:\s*[,，、-]\s*\d+)*\]", sentence)
    cut = m.start() if m else len(sentence.rstrip("。"))
    return f"{sentence[:cut]}（见第{chapter}回）{sentence[cut:]}"


def seeded_answer_report(cases: Sequence[Case], replies: dict[tuple[str, str, int], Any],
                         max_chars: int = 1200, relabel: Relabel | None = None) -> dict[str, Any]:
    """Seeded errors in recorded answers: in each supported sentence of a recorded answer, one error at
    a time, made by code from the sentence and the case's passages (no table of one book's words): a
    number changed, a name swapped for one the sources never use, a wrong chapter added, the citation
    swapped to another source, the sentence given as the book's while citing only a web page; and
    what a reader is told: an invented detail added, another action, a negation, another person, the
    question echoed, a claim in the other language, an unrelated fact. The checker must not mark the
    seeded sentence supported."""
    from rag.schemas import SearchResult

    seeded: dict[str, dict[str, Any]] = {k: {"tried": 0, "flagged": 0} for k in SEEDED_KINDS}
    misses: list[dict[str, Any]] = []
    clean = {"sentences": 0, "supported": 0, "unsupported": 0, "uncited": 0, "not_checked": 0}
    refused: list[dict[str, Any]] = []  # the recorded answers' own claim sentences without a ✓, and why
    answered = [c for c in cases if isinstance(replies.get((c.id, "answer", 1)), str) and c.label_enough]
    # what other cases' passages say: the invented details, unrelated facts and other people come from there
    passages = {c.id: " ".join(p.text for p in c.passages()) for c in answered}

    def seed(kind: str, case: Case, sentence: str | None, sources: Sequence[Source]) -> None:
        if not sentence:
            return
        seeded[kind]["tried"] += 1
        marks = [s.status for s in marked(sentence, sources, case.question, relabel)]
        # flagged: a part of it marked wrong (as before), or no part of it marked supported (a question
        # echo is "no claim", a claim in the other language "not checked": neither gets a ✓)
        if any(m in ("unsupported", "uncited", "not_checked") for m in marks) or (marks and "supported" not in marks):
            seeded[kind]["flagged"] += 1
        else:
            misses.append({"case": case.id, "kind": kind, "sentence": sentence, "marks": marks})

    for case in answered:
        answer = replies[(case.id, "answer", 1)]
        sources = sources_of(case.passages(), (), max_chars)
        haystack = " ".join(f"{s.label} {s.text}" for s in sources)
        elsewhere = [t for cid, t in passages.items() if cid != case.id]
        other_words = [w for t in elsewhere for w in frequent_words(t)[:6]]
        other_clauses = [c.group(0) for t in elsewhere for c in _CLAUSE.finditer(t)
                         if 8 <= len(c.group(0)) <= 30 and normalize(c.group(0)).text not in normalize(haystack).text]
        checked = check_answer(answer, sources, question=case.question)
        relabelled = marked(answer, sources, case.question, relabel)
        first_cite = next((c.citations[0] for c in checked.sentences if c.citations), 1)
        seed("question_echo", case, f"{case.question}[{first_cite}]", sources)
        seed("question_echo", case, f"{case.question.rstrip('？?')}[{first_cite}]。", sources)
        for k, c in enumerate(checked.sentences):
            if c.status == "no_claim":
                continue
            clean["sentences"] += 1
            clean[relabelled[k].status] += 1  # with the model's labels when they are asked for
            if relabelled[k].status != "supported":
                refused.append({"case": case.id, "sentence": c.text, "status": relabelled[k].status,
                                "reason": str(relabelled[k].reason)})
            if c.status != "supported" or not c.citations:
                continue
            # a sentence covered by a later citation is seeded with that citation made its own
            text = _ITEM_MARKER.sub("", c.text.replace("**", ""), count=1)
            text = text if citations_of(text) else f"{text.rstrip('。')}[{c.citations[0]}]。"
            changed = _change_number(re.sub(r"\[\d+\]", "", text))
            if changed and changed != re.sub(r"\[\d+\]", "", text):
                seed("number_changed", case, f"{changed.rstrip('。')}[{c.citations[0]}]。", sources)
            seed("name_swapped", case, _seed_name(text, haystack, other_words), sources)
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
            if other_clauses:
                pick = other_clauses[(len(case.id) + k) % len(other_clauses)]
                seed("invented_detail", case, _seed_detail(text, pick), sources)
                seed("unrelated_fact", case, f"{pick.strip().rstrip('。.！!；;，,')}[{c.citations[0]}]。", sources)
            seed("other_action", case, _seed_action(text, haystack, other_words), sources)
            seed("negation", case, _seed_negation(text), sources)
            seed("other_person", case, _seed_other_person(text, haystack, other_words), sources)
            seed("cross_language", case, _seed_cross_language(text, haystack), sources)
    for row in seeded.values():
        row["rate"] = ratio(row["flagged"], row["tried"])
    tried = sum(r["tried"] for r in seeded.values())
    flagged = sum(r["flagged"] for r in seeded.values())
    return {"answers": sum(1 for c in cases if isinstance(replies.get((c.id, "answer", 1)), str)),
            "faithful": clean, "refused": refused, "supported_rate": ratio(clean["supported"], clean["sentences"]),
            "uncited_rate": ratio(clean["uncited"], clean["sentences"]),
            "seeded": seeded, "flagged_rate": ratio(flagged, tried), "missed": misses}


# --------------------------------------------------------------------------- given sentences
class SentenceFileError(ValueError):
    """A sentences file is unreadable or a line of it is invalid; the message names file and line."""


def load_sentences(path: str | Path) -> list[dict[str, Any]]:
    """``{case, sentence}`` lines (JSON Lines; optional ``question``, ``label``, ``kind``; blank lines and
    lines starting with ``#`` skipped)."""
    if not Path(path).is_file():
        raise SentenceFileError(f"sentences file not found: {path}")
    rows = []
    try:
        for number, row in jsonl_records(Path(path)):
            if not isinstance(row.get("case"), str) or not isinstance(row.get("sentence"), str):
                raise SentenceFileError(f"{path}:{number}: each line needs \"case\" and \"sentence\" strings")
            rows.append({"line": number, **row})
    except CaseError as exc:  # unreadable, or a line that is not a JSON object
        raise SentenceFileError(str(exc)) from None
    return rows


def mark_sentences(cases: Sequence[Case], rows: Sequence[dict[str, Any]], max_chars: int = 1200,
                   relabel: Relabel | None = None) -> dict[str, Any]:
    """Each given sentence checked against its case's passages (numbered as the answer prompt numbers
    them), as an answer of that one sentence to the case's question (or the row's own ``question``):
    its status and reason; with counts per status, and per ``kind`` and ``label`` when rows carry them.
    ``relabel``: a sentence part and its cited sources -> the part with a model's label applied
    (``VERIFY_ANSWERS=llm``; ``rag.eval.marking``)."""
    by_id = {c.id: c for c in cases}
    unknown = sorted({r["case"] for r in rows if r["case"] not in by_id})
    if unknown:
        raise SentenceFileError(f"cases not in the case file: {', '.join(unknown[:10])}")
    results = []
    for row in rows:
        case = by_id[row["case"]]
        sources = sources_of(case.passages(), (), max_chars)
        question = row.get("question") if isinstance(row.get("question"), str) else case.question
        marks = marked(row["sentence"], sources, question, relabel)
        # a row is one sentence; if it splits, the row is supported only when every part is
        status = next((m.status for m in marks if m.status != "supported"), "supported") if marks else "no_claim"
        reason = next((m.reason for m in marks if m.status == status), None)
        results.append({**{k: v for k, v in row.items() if k != "line"}, "status": status,
                        "reason": str(reason) if reason is not None else "", "reason_code": getattr(reason, "code", ""),
                        "parts": [{"text": m.text, "status": m.status, "reason": str(m.reason)} for m in marks]})
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    per: dict[str, dict[str, dict[str, int]]] = {}
    for field in ("kind", "label"):
        for r in results:
            if isinstance(r.get(field), str):
                row_counts = per.setdefault(field, {}).setdefault(r[field], {"n": 0, "supported": 0})
                row_counts["n"] += 1
                row_counts["supported"] += r["status"] == "supported"
                row_counts[r["status"]] = row_counts.get(r["status"], 0) + (r["status"] != "supported")
    return {"n": len(results), "counts": counts, "per": per, "results": results}
