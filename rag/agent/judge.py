"""The sufficiency judge, shared by the graph's ``evaluate`` node and ``rag eval judge``.

Three modes (``JUDGE_MODE``):

- ``evidence`` (default): the model splits the question into parts and gives, for each, the answer,
  the source number and a verbatim quote, or "not found". Code verifies every quote
  (``rag.checks.verify_part``); ``enough`` means every part is verified. The model's own verdict
  is kept as ``model_enough`` but decides nothing.
- ``guarded``: the same evidence is asked for; ``enough`` needs the model's verdict AND verified
  evidence for every part.
- ``verdict``: the model's ``{reason, enough, missing, web_query, confidence}`` as it is.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from rag.agent import prompts
from rag.agent.context import format_sentence_context, neutralise, numbered_sentences
from rag.agent.profile import chars_each
from rag.checks import PartCheck, Source, question_left_out, verify_part
from rag.checks.choices import (
    HOSTED_MAX_CHOICE_CHARS,
    HOSTED_MAX_CHOICES,
    MAX_CHOICE_CHARS,
    MAX_CHOICES,
    quote_choices,
)
from rag.errors import LLMError, LLMOutputError
from rag.i18n import Msg, join
from rag.llm import ChatModel, MethodCache, self_hosted, structured_invoke
from rag.schemas import (
    ClaimedPart,
    Evaluation,
    EvidenceJudgement,
    JudgeMode,
    Passage,
    SearchResult,
)

logger = logging.getLogger(__name__)

EvidenceFormat = Literal["quote", "sentence"]
JUDGE_MODES: tuple[JudgeMode, ...] = ("evidence", "guarded", "verdict")


@dataclass(frozen=True)
class JudgeConfig:
    """How the judge is asked and checked, fixed for a turn (``rag.agent.turnconfig.TurnConfig.judge``)
    or for an evaluation run (``rag.eval.runner``)."""

    mode: JudgeMode = "evidence"
    method: str = "function_calling"  # the structured-output method (``LLM_STRUCTURED_METHOD``)
    few_shot: bool = True  # the worked examples before the real question
    evidence: EvidenceFormat = "quote"  # quotes copied, or sentence ids cited ("sentence")
    relevance: bool = False  # one more call per verified part: does the quote state the answer?
    constrain: bool = True  # by json_schema, quotes may only be the sources' own text (``constrained_schema``)
    strict: bool = False  # a part code cannot decide counts as unverified (``decide``)
    max_passage_chars: int = 1200  # of each book passage, at most
    # characters for all book passages together (the compact profile fits its context); None: no such budget
    passage_budget: float | None = None

    def passage_chars(self, n_passages: int) -> int:
        """Characters of each of ``n_passages`` book passages in the judge's prompt (and in the sources
        its quotes are checked against)."""
        return chars_each(self.passage_budget, self.max_passage_chars, n_passages)


# --------------------------------------------------------------------------- sources and prompts
def sources_of(passages: Sequence[Passage], web_results: Sequence[SearchResult] = (),
               max_chars: int = 1200) -> list[Source]:
    """The numbered sources exactly as the judge and the writer see them: book passages [1..p]
    (cut to ``max_chars``), then web results [p+1..]."""
    sources = [Source(i, p.text[:max_chars], "book", p.label()) for i, p in enumerate(passages, start=1)]
    start = len(passages) + 1
    sources += [Source(start + j, f"{r.title}\n{r.snippet}", "web", r.title) for j, r in enumerate(web_results)]
    return sources


def _resolve_ids(part: ClaimedPart, ids: dict[str, tuple[int, str]]) -> ClaimedPart:
    """A part that cites sentence ids, with its quote replaced by those sentences' text (an unknown
    id is left as it is, and then does not verify)."""
    wanted = re.findall(r"\d+\.\d+", part.quote)
    found = [ids[i] for i in wanted if i in ids]
    if not wanted or len(found) != len(wanted):
        return part
    return part.model_copy(update={"quote": "".join(text for _, text in found), "source": found[0][0]})


def judge_messages(question: str, context: str, *, mode: JudgeMode = "evidence",
                   web_query_rule: str = prompts.WEB_QUERY_RULE_FIRST, few_shot: bool = True,
                   evidence: EvidenceFormat = "quote") -> list[BaseMessage]:
    """The judge's prompt. Few-shot examples are separate user/assistant turns before the real one."""
    if mode == "verdict":
        system, user, examples = prompts.EVALUATE_SYSTEM, prompts.EVALUATE_USER, prompts.EVALUATE_EXAMPLES
    elif evidence == "sentence":
        system = prompts.EVIDENCE_SYSTEM.replace("{quote_rule}", prompts.EVIDENCE_SENTENCE_RULE)
        user, examples = prompts.EVIDENCE_USER, prompts.EVIDENCE_SENTENCE_EXAMPLES
    else:
        system = prompts.EVIDENCE_SYSTEM.replace("{quote_rule}", prompts.EVIDENCE_QUOTE_RULE)
        user, examples = prompts.EVIDENCE_USER, prompts.EVIDENCE_EXAMPLES
    # The web-query rule is the verdict prompt's rule 7 and the evidence prompt's step 5; the worked
    # "not enough" example asks for a web query unless the rule says no search is possible.
    rule = web_query_rule.replace("{web_query_step}", "7" if mode == "verdict" else "5")
    example_query = "null" if web_query_rule == prompts.WEB_QUERY_RULE_NONE else '"mill fire year burned down"'
    messages: list[BaseMessage] = [SystemMessage(system.format(web_query_rule=rule))]
    if few_shot:
        for q, ctx, reply in examples:
            messages += [HumanMessage(user.format(question=q, context=ctx)),
                         AIMessage(reply.replace("{example_web_query}", example_query))]
    messages.append(HumanMessage(user.format(question=question, context=context)))
    return messages


# --------------------------------------------------------------------------- constrained quotes
NOT_FOUND_CHOICE = "not found"  # what the prompt tells the judge to write when no source states a part


def constrained_schema(sources: Sequence[Source], ids: dict[str, tuple[int, str]] | None = None, *,
                       hosted: bool = False) -> dict[str, Any]:
    """``EvidenceJudgement``'s JSON schema with its evidence fields narrowed to what the sources hold,
    for ``response_format`` json_schema (the server's grammar then lets the model write nothing else):

    - ``quote`` (``evidence="quote"``): an ``enum`` of the sources' own spans (``rag.checks.choices``:
      runs of clauses, at most ``MAX_CHOICES``, or ``HOSTED_MAX_CHOICES`` for a hosted API) or "not found";
    - ``quote`` (``evidence="sentence"``, ``ids`` given): an ``enum`` of the sentence ids that exist,
      each alone or with the next one of its source ("2.3, 2.4"), or "not found";
    - ``source``: one of the source numbers, or null.

    The prompt stays as it is; the reply is validated by ``EvidenceJudgement`` and its quotes are
    checked as usual (``check_parts``). Spans are written as the prompt shows them (``neutralise``)."""
    schema = copy.deepcopy(EvidenceJudgement.model_json_schema())
    part = schema["$defs"]["ClaimedPart"]["properties"]
    most, chars = (HOSTED_MAX_CHOICES, HOSTED_MAX_CHOICE_CHARS) if hosted else (MAX_CHOICES, MAX_CHOICE_CHARS)
    if ids:
        keys = list(ids)
        pairs = [f"{a}, {b}" for a, b in zip(keys, keys[1:], strict=False) if ids[a][0] == ids[b][0]]
        choices = [*keys[:most], *pairs[: max(0, most - len(keys))]]
    else:
        choices = list(dict.fromkeys(neutralise(c) for c in quote_choices(sources, max_choices=most,
                                                                            max_chars=chars)))
    part["quote"] = {"type": "string", "enum": [*choices, NOT_FOUND_CHOICE],
                     "description": part["quote"].get("description", "")}
    numbers = [s.number for s in sources]
    part["source"] = {"anyOf": [{"type": "integer", "enum": numbers}, {"type": "null"}] if numbers
                      else [{"type": "null"}], "description": part["source"].get("description", "")}
    return schema


# --------------------------------------------------------------------------- calls
def _fields(schema: type) -> str:
    """The fields the model is asked for: those of its JSON schema (code-set fields are not in it)."""
    return ", ".join(schema.model_json_schema()["properties"])  # type: ignore[attr-defined]


def structured_with_retry(judge_llm: ChatModel, schema: type, messages: list[BaseMessage], method: str,
                          attempts: int = 2, *, response_schema: dict[str, Any] | None = None,
                          methods: MethodCache | None = None) -> tuple[Any | None, list[LLMError]]:
    """A structured call, retried once. An invalid reply (``LLMOutputError``) is retried with the
    error named (at temperature 0 the same prompt would give the same reply); a failed call is
    simply repeated. ``response_schema``: the narrower JSON schema sent when the method is (or
    "auto" resolves to) json_schema (``constrained_schema``). ``methods``: what "auto" learnt of the
    endpoint (``rag.llm.MethodCache``). Returns (result or None, the errors met)."""
    errors: list[LLMError] = []
    current = list(messages)
    for _attempt in range(attempts):
        try:
            return structured_invoke(judge_llm, schema, current, method, response_schema=response_schema,
                                     methods=methods), errors
        except LLMError as exc:
            logger.warning("%s call failed: %s", schema.__name__, exc)
            errors.append(exc)
            if isinstance(exc, LLMOutputError):
                current = [*messages, HumanMessage(prompts.RETRY_USER.format(error=str(exc)[:300],
                                                                              fields=_fields(schema)))]
    return None, errors


def relevance_check(judge_llm: ChatModel, part: str, quote: str, question: str = "") -> bool:
    """One short call: does this quote state the answer to this part of ``question``?
    (``JUDGE_RELEVANCE_CHECK``)"""
    reply = judge_llm.invoke([SystemMessage(prompts.RELEVANCE_SYSTEM),
                              HumanMessage(prompts.RELEVANCE_USER.format(question=question, part=part,
                                                                         quote=quote))])
    text = str(reply.content).strip().lower()
    return text.startswith(("yes", "是", "对")) and not text.startswith(("yes, but no", "不"))


def relevant_parts(judge_llm: ChatModel, parts: Sequence[PartCheck], question: str) -> list[PartCheck]:
    """``parts`` with each verified one the model says its quote does not answer made unverified
    (``relevance_check``); a call that fails leaves its part as code checked it."""
    checked = list(parts)
    for i, p in enumerate(checked):
        if p.status != "verified":
            continue
        try:
            ok = relevance_check(judge_llm, p.part, p.quote or "", question)
        except Exception as exc:  # noqa: BLE001 - an optional check must not end the turn
            logger.warning("relevance check failed: %s", exc)
            continue
        if not ok:
            checked[i] = replace(p, status="unverified", detail=join([p.detail, Msg.of("check.relevance_no")]))
    return checked


# --------------------------------------------------------------------------- deciding
@dataclass
class Judged:
    evaluation: Evaluation
    errors: list[LLMError] = field(default_factory=list)
    invalid: bool = False  # no usable reply (the evaluation is the conservative default)

    @property
    def invalid_output(self) -> bool:
        """No usable reply, and the model did answer (with something unusable): not a transport failure."""
        return self.invalid and any(isinstance(e, LLMOutputError) for e in self.errors)


def check_parts(parts: Sequence[ClaimedPart], sources: Sequence[Source], question: str = "") -> list[PartCheck]:
    """Each claimed part as code checked it (``rag.checks.verify_part``)."""
    return [verify_part(claimed.part, claimed.answer, claimed.source, claimed.quote, sources, question=question)
            for claimed in parts]


def decide(claimed: EvidenceJudgement, parts: list[PartCheck], mode: JudgeMode, question: str = "",
           strict: bool = False) -> Evaluation:
    """The verdict code stands behind: no part shown wrong, the parts together the whole question, and
    every part verified, or the model saying "enough" for the parts code could not decide (and, guarded,
    the model agreeing). Code overrides the model only for what it can show; ``strict``: an undecided
    part counts as unverified (for a model whose "enough" is not to be trusted without proof)."""
    if strict:
        parts = [replace(p, status="unverified") if p.status == "undecided" else p for p in parts]
    shown = bool(parts) and all(p.status in ("verified", "undecided") for p in parts)
    undecided = [p for p in parts if p.status == "undecided"]
    verified = shown and (not undecided or claimed.enough)
    missing = [f"{p.part} ({p.status.replace('_', ' ')})" for p in parts if p.status != "verified"]
    if not parts:
        missing = ["(the judge named no part of the question)"]
    # a verified answer is the sources' own words for what it answers: the option a choice question
    # offers ("内部还是外部?" -> 外部) covers that sentence even when the part renamed its subject
    said = [f"{p.part} {p.answer}" if p.status == "verified" and p.answer else p.part for p in parts]
    left_out = question_left_out(question, said) if question else []
    if verified and left_out:
        verified = False
        # ``missing`` is the judge's own field (plain text, fed to the web query and the answer prompt)
        missing += [str(Msg.of("check.not_examined", part=s)) for s in left_out]
    enough = verified and (claimed.enough if mode == "guarded" else True)
    reason = claimed.reason
    if claimed.enough and left_out and shown:
        # the parts did verify: say which sentence of the question none of them covers
        reason = f"{reason} [code: {Msg.of('check.parts_verified_question_left_out', left=' / '.join(left_out))}]"
    elif claimed.enough and not verified:
        reason = f"{reason} [code: the claimed evidence did not verify]"
    elif enough and undecided:
        reason = f"{reason} [code: {Msg.of('check.parts_undecided', parts=' / '.join(p.part for p in undecided))}]"
    elif mode == "guarded" and verified and not claimed.enough:
        reason = f"{reason} [guarded: the model said not enough]"
    return Evaluation(reason=reason, enough=enough, missing=missing, web_query=None if enough else claimed.web_query,
                      confidence=claimed.confidence, parts=parts, model_enough=claimed.enough, mode=mode)


@dataclass(frozen=True)
class JudgeRequest:
    """What one evaluation judges: the question, the book passages and web results found so far,
    the context as the prompt shows them (``labelled_context``), and the web-query rule of this round."""

    question: str
    passages: Sequence[Passage]
    web_results: Sequence[SearchResult] = ()
    context: str = ""
    web_query_rule: str = prompts.WEB_QUERY_RULE_FIRST


def judge(judge_llm: ChatModel, request: JudgeRequest, config: JudgeConfig | None = None, *,
          methods: MethodCache | None = None) -> Judged:
    """Ask the model and, in evidence and guarded modes, check its evidence. Never raises for a bad
    reply: an invalid reply twice gives a conservative "not enough" (``invalid=True``).
    ``config.evidence="sentence"``: the sources are shown with numbered sentences (instead of
    ``request.context``) and the judge cites sentence ids instead of copying text. ``config.constrain``:
    when the call goes by json_schema, its quotes may only be the sources' own text or sentence ids
    (``constrained_schema``). ``methods``: what "auto" learnt of the endpoint (``rag.llm.MethodCache``)."""
    config = config or JudgeConfig()
    mode, method = config.mode, config.method
    question, passages, context = request.question, request.passages, request.context
    sources = sources_of(passages, request.web_results, config.passage_chars(len(passages)))
    ids = numbered_sentences(sources) if config.evidence == "sentence" and mode != "verdict" else {}
    if ids:
        context = format_sentence_context(sources)
    messages = judge_messages(question, context, mode=mode, web_query_rule=request.web_query_rule,
                              few_shot=config.few_shot, evidence=config.evidence)
    schema = Evaluation if mode == "verdict" else EvidenceJudgement
    narrow = (constrained_schema(sources, ids, hosted=not self_hosted(judge_llm))
              if config.constrain and mode != "verdict" and sources and method in ("json_schema", "auto") else None)
    reply, errors = structured_with_retry(judge_llm, schema, messages, method, response_schema=narrow, methods=methods)
    if reply is None:
        return Judged(Evaluation(reason=f"The judge's output was invalid twice ({errors[-1]}); treating the "
                                 "context as not enough.", enough=False, missing=[], web_query=None,
                                 confidence=0.0, mode=mode), errors, invalid=True)
    if mode == "verdict":
        return Judged(reply.model_copy(update={"mode": "verdict", "model_enough": reply.enough}), errors)
    claimed = [_resolve_ids(p, ids) for p in reply.parts] if ids else reply.parts
    parts = check_parts(claimed, sources, question)
    if config.relevance:
        parts = relevant_parts(judge_llm, parts, question)
    return Judged(decide(reply, parts, mode, question, strict=config.strict), errors)
