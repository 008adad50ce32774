"""Answer text that code writes, in the reader's language (catalogue codes ``answer.*``):

- ``not_covered_line``: the first line of an answer the judge found not enough when no (more) web
  search can help: what the sources do not cover, and why the web was not asked (it is off, the
  rounds are spent, or the reader's spoiler limit keeps later chapters and the web out);
- ``small_answer``: the small turn's answer (``rag.agent.extract``): each verified part as its copied
  words with the source number, then its quote; the parts code could not confirm are named in the
  first line, and the sentences chosen for them are shown as quotes under a line that says they were
  found but not confirmed (not an answer: the verify step does not mark them): the sentence the model
  picked for such a part (its quote found there, its answer not confirmed) and the best the question's
  terms chose.
Pure: no model, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.checks import PartCheck, normalize
from rag.checks.select import Chosen
from rag.i18n import t
from rag.schemas import Evaluation

# sentences shown under "found but not confirmed", the best the question's terms chose, in the book's
# order (the right fact shown in 11 of 33 held-out questions with three, 12 with five, 17 with these
# and the model's unconfirmed picks, another script's questions read in the sources' words: bench/README.md)
MAX_UNCONFIRMED_QUOTES = 5
MAX_QUOTE_CHARS = 200  # of each


@dataclass(frozen=True)
class WhyNoWeb:
    """Why no web search followed a "not enough": the reader's spoiler limit (``read_up_to``, the web
    not allowed past it), the web switched off, or its rounds spent (``rounds``)."""

    read_up_to: int | None = None
    web_off: bool = False
    rounds: int = 0


@dataclass(frozen=True)
class Composed:
    """An answer code wrote: its text and where the text that is not an answer (quotes shown as found,
    not confirmed) begins; None when all of it is to be checked."""

    text: str
    unchecked_from: int | None = None
    answer_from: int = 0  # where the answer begins after the app's first line (what is not covered)


def _lang(lang: str) -> str:
    return "zh" if lang == "zh" else "en"


def missing_parts(evaluation: Evaluation | None, question: str) -> list[str]:
    """What the sources do not cover, as the reader asked it: the parts code did not verify (in the
    question's words), else the judge's own list; [] when no judgement established it (the judge
    gave no usable reply, or ran out of time)."""
    if evaluation is None:
        return []
    if evaluation.parts:
        return [p.part for p in evaluation.parts if p.status != "verified"]
    return list(evaluation.missing)


def not_covered_line(lang: str, missing: Sequence[str], why: WhyNoWeb) -> str | None:
    """The answer's first line when the sources are not enough and no web search can follow (see the
    module docstring); None when a web search could still have helped."""
    lang = _lang(lang)
    joined = ("；" if lang == "zh" else "; ").join(m.strip().rstrip("？?。.") for m in missing if m.strip())
    if not joined:
        return None
    if why.read_up_to is not None:
        return t(lang, "answer.not_covered_spoiler", chapter=why.read_up_to, missing=joined)
    if why.web_off:
        return t(lang, "answer.not_covered_web_off", missing=joined)
    if why.rounds:
        return t(lang, "answer.not_covered_web_spent", rounds=why.rounds, missing=joined)
    return None


def _one_line(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def _verified_lines(lang: str, part: PartCheck, several: bool) -> list[str]:
    n = part.matched_source or part.source
    answer = (part.answer or "").strip().rstrip("。.")
    head = f"{part.part.rstrip('？?')}：" if several and lang == "zh" else f"{part.part.rstrip('?')}: " if several else ""
    end = "。" if lang == "zh" else "."
    return [f"{head}{answer}{end}[{n}]", t(lang, "answer.small_quote", quote=_one_line(part.quote or "")) + f"[{n}]"]


def picked_sentence(part: PartCheck, chosen: Sequence[Chosen]) -> Chosen | None:
    """The sentence shown to the model that holds the quote of a pick code did not confirm (the quote
    was found in a source, ``matched_source``); None for a pick whose quote is not in the sources or
    lies outside the sentences shown (a chapter heading)."""
    if part.matched_source is None or part.span is None or not (part.quote or "").strip():
        return None
    wanted = normalize(part.quote or "").text
    return next((c for c in chosen if c.source == part.matched_source and wanted in normalize(c.text).text), None)


def small_answer(lang: str, evaluation: Evaluation | None, chosen: Sequence[Chosen], *, question: str,
                 why: WhyNoWeb) -> Composed:
    """The small turn's answer (see the module docstring)."""
    lang = _lang(lang)
    parts = list(evaluation.parts) if evaluation is not None else []
    verified = [p for p in parts if p.status == "verified"]
    lines: list[str] = []
    answer_from = 0
    if evaluation is None or not evaluation.enough:
        first = not_covered_line(lang, missing_parts(evaluation, question), why)
        lines.append(first or t(lang, "answer.not_confirmed_line"))
        answer_from = len(lines[0]) + 1
    several = len(parts) > 1
    for part in verified:
        lines += _verified_lines(lang, part, several)
    if evaluation is not None and evaluation.enough:
        return Composed("\n".join(lines))
    shown = {(p.matched_source, p.quote) for p in verified}
    best = sorted((c for c in chosen if c.score > 0), key=lambda c: -c.score)[:MAX_UNCONFIRMED_QUOTES]
    picked = [c for c in (picked_sentence(p, chosen) for p in parts if p.status != "verified") if c is not None]
    found = {c.sid: c for c in [*picked, *best]}.values()
    quotes = [f"- “{_one_line(c.text)}” [{c.source}]" for c in sorted(found, key=lambda c: (c.source, int(c.sid.split('.')[1])))
              if (c.source, c.text) not in shown]
    text = "\n".join(lines)
    if not quotes:
        return Composed(text, None, answer_from)
    start = len(text) + 2
    return Composed("\n\n".join([text, t(lang, "answer.found_not_confirmed"), "\n".join(quotes)]), start, answer_from)
