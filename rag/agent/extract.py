"""The small model's one task in a turn (the ``small`` profile, ``rag.agent.profile``): code chooses
the sentences of the sources that bear on the question (``rag.checks.select``), the model picks, for
each part of the question, the sentence that states its answer and copies the few words that answer
it, and code checks that pick like any judge's quote (``rag.checks.verify_part``, strict: what code
cannot confirm is not taken from a small model). ``enough`` means every part verified.

Measured on the 1.5B stand-in (bench/README.md, "The small turn"): reading the chosen sentences
(~1,000 tokens) instead of every passage (~2,700-3,100) is what makes a turn fast enough to wait for,
and copying words out of one numbered sentence is a task it does; filling the judge's evidence form
over whole passages was not (answerable judged enough 12 of 52 on the dev sets)."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from rag.agent import prompts
from rag.agent.context import neutralise
from rag.agent.judge import (
    NOT_FOUND_CHOICE,
    JudgeConfig,
    Judged,
    check_parts,
    decide,
    relevant_parts,
    sources_of,
    structured_with_retry,
)
from rag.checks import PartCheck, Source, normalize
from rag.checks.choices import sentence_spans
from rag.checks.picks import pick_refused
from rag.checks.quotes import MAX_QUOTE_WEIGHT, MIN_QUOTE_WEIGHT
from rag.checks.select import Chosen, all_sentences, bearing_sentences
from rag.checks.text import MEASURES, STOP_EN, contains, content_weight, frequent_words, latin_words, stem
from rag.i18n import Msg, join, t
from rag.lang import detect_lang
from rag.llm import ChatModel, MethodCache, self_hosted
from rag.schemas import ClaimedPart, Evaluation, EvidenceJudgement, Passage, SearchResult

logger = logging.getLogger(__name__)

SENTENCE_BUDGET_CHARS = 700  # of chosen sentences in the prompt: with the instructions, ~1,000 tokens
MAX_PARTS = 3  # question sentences asked about in one call
COMMON_AT_LEAST = 3  # times the sources repeat a word for it to count as who or where they are about
MAX_ANSWER_CHARS = 60  # the words copied: a name, a number, a short phrase
NONE = "none"
_QUESTION_SPLIT = re.compile(r"(?<=[？?；;。!！])\s*|,?\s+and\s+(?=(?:when|what|who|whom|whose|where|why|how|which)\b)",
                             re.IGNORECASE)  # "Which dances …, and when he …, what did she think …?" is two
_ASKS_WHO = re.compile(r"谁|哪位|哪个人|什么人|\bwho(?:m|se)?\b", re.IGNORECASE)
_ASKS_COUNT = re.compile(r"几(?!时|乎)|多少|多大|多久|多长|多远|多重|\bhow (?:many|much|old|long|far)\b|\bwhat year\b",
                         re.IGNORECASE)


class ExtractedAnswer(BaseModel):
    sentence: str = Field(description='The id of the sentence that states the answer ("2.3"), or "none".')
    answer: str = Field(description='The few words of that sentence that answer the part, copied, or "none".')


class Extraction(BaseModel):
    """The small model's reply: one pick per question part, in order."""

    answers: list[ExtractedAnswer] = Field(min_length=1, max_length=MAX_PARTS)


@dataclass(frozen=True)
class Extracted:
    """What the small turn's evaluation found: the checked evaluation and the sentences it offered."""

    judged: Judged
    chosen: list[Chosen] = field(default_factory=list)


def reader_lang(question: str) -> str:
    """The catalogue language of what the trace and the answer say about ``question``."""
    return "zh" if detect_lang(question) == "zh" else "en"


def question_parts(question: str) -> list[str]:
    """The question's sentences (a two-part question is often two), at most ``MAX_PARTS``; the whole
    question when it is one."""
    pieces = [p.strip() for p in _QUESTION_SPLIT.split(question.strip()) if p.strip()]
    pieces = [p for p in pieces if content_weight(normalize(p).text) >= 2] or [question.strip()]
    if len(pieces) > MAX_PARTS:
        pieces = [*pieces[:MAX_PARTS - 1], "".join(pieces[MAX_PARTS - 1:])]
    return pieces


def _headings(sources: Sequence[Source]) -> list[Chosen]:
    """Each book source's chapter heading as sentence "n.0": where something happens is often only there."""
    return [Chosen(f"{s.number}.0", s.number, s.label, 0.0) for s in sources if s.label and s.origin == "book"]


def extract_messages(question: str, parts: Sequence[str], sentences: Sequence[Chosen]) -> list[BaseMessage]:
    """The small model's prompt: the chosen sentences as data, the question and its parts."""
    lines = [f"({c.sid}) {neutralise(c.text, one_line=True)}" for c in sentences]
    listed = "\n".join(f"{i}. {neutralise(p, one_line=True)}" for i, p in enumerate(parts, start=1))
    return [SystemMessage(prompts.EXTRACT_SYSTEM),
            HumanMessage(prompts.EXTRACT_USER.format(sentences="\n".join(lines), question=neutralise(question),
                                                     parts=listed, n=len(parts)))]


def extract_schema(sentences: Sequence[Chosen], n_parts: int) -> dict[str, Any]:
    """``Extraction``'s JSON schema with the sentence ids narrowed to those shown (for json_schema:
    the server's grammar then lets the model name no other) and one answer per part."""
    schema = Extraction.model_json_schema()
    item = schema["$defs"]["ExtractedAnswer"]["properties"]
    item["sentence"] = {"type": "string", "enum": [*(c.sid for c in sentences), NONE]}
    item["answer"] = {"type": "string", "maxLength": MAX_ANSWER_CHARS}
    schema["properties"]["answers"].update(minItems=n_parts, maxItems=n_parts)
    return schema


def quote_for(answer: str, sentence: str) -> str:
    """The shortest span of ``sentence`` a quote may be (``sentence_spans``) that holds ``answer``;
    the sentence itself (cut to a quote's size) when none does: the check then says so."""
    wanted = normalize(answer).text
    spans = [s for s in sentence_spans(sentence) if contains(normalize(s).text, wanted)] if wanted else []
    if spans:
        return min(spans, key=lambda s: content_weight(normalize(s).text))
    whole = sentence_spans(sentence, max_run=0)
    fitting = [s for s in whole if MIN_QUOTE_WEIGHT <= content_weight(normalize(s).text) <= MAX_QUOTE_WEIGHT]
    return fitting[0] if fitting else sentence


def fits_the_question(part: str, answer: str) -> bool:
    """Whether the copied words are the kind of thing the part asks for, as far as code can tell: a
    number for "how many" (几, 多少, how many), not only a number for "who" (谁, who). A small model
    that copies the one figure of the sentences it was shown for every part does this often."""
    norm = normalize(answer).text
    has_number = any(ch.isdigit() for ch in norm)
    only_number = bool(norm) and all(ch.isdigit() or ch in ".:%" or ch in MEASURES for ch in norm)
    if _ASKS_WHO.search(part) and only_number:
        return False
    return not (_ASKS_COUNT.search(part) and not has_number)


def _claimed(parts: Sequence[str], reply: Extraction,
             by_id: dict[str, Chosen]) -> tuple[list[ClaimedPart], dict[int, Chosen]]:
    """The picks as claimed parts, and for each part answered the sentence its words come from."""
    claimed: list[ClaimedPart] = []
    sentence_of: dict[int, Chosen] = {}
    for i, part in enumerate(parts):
        pick = reply.answers[i] if i < len(reply.answers) else None
        chosen = by_id.get(pick.sentence) if pick is not None else None
        answer = pick.answer.strip() if pick is not None else ""
        if chosen is None or not answer or answer.lower() == NONE or not fits_the_question(part, answer):
            claimed.append(ClaimedPart(part=part, answer=NOT_FOUND_CHOICE, source=None, quote=NOT_FOUND_CHOICE))
        else:
            chosen = _holding(answer, chosen, by_id)
            sentence_of[i] = chosen
            claimed.append(ClaimedPart(part=part, answer=answer, source=chosen.source,
                                       quote=quote_for(answer, chosen.text)))
    return claimed, sentence_of


def _holding(answer: str, picked: Chosen, by_id: dict[str, Chosen]) -> Chosen:
    """The sentence that holds the copied words: the one picked, or, when the words are not there
    (a small model often names the sentence beside the one it copied from), the one sentence shown
    that does hold them, the picked source's first."""
    wanted = normalize(answer).text
    if not wanted or contains(normalize(picked.text).text, wanted):
        return picked
    holding = [c for c in by_id.values() if contains(normalize(c.text).text, wanted)]
    holding.sort(key=lambda c: c.source != picked.source)
    return holding[0] if holding else picked


SMALL_JUDGE = JudgeConfig(method="json_schema")


def extract(llm: ChatModel, question: str, passages: Sequence[Passage], web_results: Sequence[SearchResult] = (), *,
            config: JudgeConfig = SMALL_JUDGE, methods: MethodCache | None = None) -> Extracted:
    """One small-model call over the chosen sentences, checked (see the module docstring). Never
    raises for a bad reply: an invalid reply twice is "not enough" (``Judged.invalid``). From
    ``config``: the structured-output method; the characters of each book passage
    (``passage_chars``), as the answer's sentences will be checked against them; and ``relevance``,
    one more short call per verified pick, the model asked whether the sentence answers its part
    (``JUDGE_RELEVANCE_CHECK``)."""
    method = config.method
    sources = sources_of(passages, web_results, max_chars=config.passage_chars(len(passages)))
    chosen = bearing_sentences(question, sources, budget_chars=SENTENCE_BUDGET_CHARS)
    offered = sorted([*_headings(sources), *chosen], key=lambda c: (c.source, int(c.sid.split(".")[1])))
    parts = question_parts(question)
    by_id = {c.sid: c for c in offered}
    messages = extract_messages(question, parts, offered)
    narrow = extract_schema(offered, len(parts)) if method in ("json_schema", "auto") and self_hosted(llm) else None
    reply, errors = structured_with_retry(llm, Extraction, messages, method, response_schema=narrow, methods=methods)
    if reply is None:
        lang = reader_lang(question)
        evaluation = Evaluation(reason=t(lang, "agent.small_invalid", error=str(errors[-1])), enough=False, missing=list(parts), web_query=None,
                                confidence=0.0, mode="evidence")
        return Extracted(Judged(evaluation, list(errors), invalid=True), chosen)
    claimed, sentence_of = _claimed(parts, reply, by_id)
    every = all_sentences(sources)
    answered = all(c.quote != NOT_FOUND_CHOICE for c in claimed)
    lang = reader_lang(question)  # the trace shows the reason: the reader's language
    judgement = EvidenceJudgement(
        reason=t(lang, "agent.small_picked_all" if answered else "agent.small_picked_some"),
        parts=claimed, enough=answered, web_query=None if answered else question, confidence=0.5)
    common = common_words(sources)
    checks = _alike(
        [_stricter(check, sentence_of.get(i), every, common) for i, check in
         enumerate(check_parts(claimed, sources, question))], sentence_of)
    if config.relevance:
        checks = relevant_parts(llm, checks, question)
    return Extracted(Judged(decide(judgement, checks, "evidence", question, strict=True), list(errors)), chosen)


def common_words(sources: Sequence[Source]) -> frozenset[str]:
    """Words the sources repeat (``COMMON_AT_LEAST`` times or more): pairs of Han characters, and
    English words with their stems (mostly the sources' people and places)."""
    han = frequent_words("\n".join(normalize(src.text).text for src in sources), least=COMMON_AT_LEAST)
    counts: dict[str, int] = {}
    for src in sources:
        for word in latin_words(src.text):
            if len(word) >= 3:
                counts[word] = counts.get(word, 0) + 1
    latin = [w for w, n in counts.items() if n >= COMMON_AT_LEAST and w not in STOP_EN]
    return frozenset([*han, *latin, *(stem(w) for w in latin)])


def _alike(checks: list[PartCheck], sentence_of: dict[int, Chosen]) -> list[PartCheck]:
    """Verified parts a small model answered with the same words of the same sentence: a sentence that
    answers two different parts of a question alike shows that the model did not tell them apart (a
    bank named both as the lender and as who provided a contract the sources never name); neither is
    taken."""
    keys = {i: (normalize(check.answer or "").text, sentence_of[i].sid) for i, check in enumerate(checks)
            if check.status == "verified" and i in sentence_of}
    counts = Counter(keys.values())
    return [replace(check, status="unverified", detail=join([check.detail, Msg.of("check.pick_same_for_parts")]))
            if i in keys and counts[keys[i]] > 1 else check for i, check in enumerate(checks)]


def _stricter(check: PartCheck, picked: Chosen | None, every: list[Chosen], common: frozenset[str]) -> PartCheck:
    """A verified part refused by the small model's stricter rules (``rag.checks.picks``)."""
    if check.status != "verified" or picked is None:
        return check
    at = next((i for i, c in enumerate(every) if c.sid == picked.sid), None)
    before = every[at - 1].text if at and every[at - 1].source == picked.source else ""
    why = pick_refused(check.part, check.answer or "", picked.text, before, common)
    return check if why is None else replace(check, status="unverified", detail=join([check.detail, why]))
