"""A model's label of an answer sentence (``VERIFY_ANSWERS=llm``) joined with what code found, by
rules code can stand behind:

- A sentence whose words and facts code found in its sources, but not in its order ("not checked":
  another person doing the thing, another action with the same words, or a paraphrase) is supported
  when the model says its sources state it, unsupported when the model doubts it.
- A sentence code found supported keeps its ✓ only if the model does not say its sources leave it
  unstated or contradict it: comparing characters cannot see another person doing the thing or
  another action with the same words; a model reading the sentence can.
- A sentence code refused only for its wording (too few of its words in the sources, a run of words
  they lack: a paraphrase) gets its ✓ back when the model says the sources state it and quotes the
  words that do, the quote is in a cited source (code finds it), the sentence's numbers, dates,
  names and quoted speech are in the quote's sentences, and no negation sets it apart from that
  source (code checks).
- A sentence in another language than its sources ("not checked": code cannot compare its words)
  is supported when the model says so and quotes the source, and code finds, in the quote's
  sentences and the ``TRANSLATION_BEFORE`` characters before them: the quote; the sentence's numbers
  (by value, in either language); words both say through the dictionary (``rag.checks.translated``);
  one of the people the sentence names in pinyin, when the source writes them; and no negation the
  sentence adds. The model's doubt makes it unsupported.
- Anything else code decided stays as code decided it: a number, a name or a chapter the sources do
  not have, a negation, no claim, no citation.
No model; the dictionary a translation is read with loads once per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rag.checks.facts import CITATION, fact_in, facts_of
from rag.checks.negation import negation_differs
from rag.checks.quotes import QuoteMatch, Source, match_quote, sentence_around, sentence_span
from rag.checks.sentences import SentenceCheck, numbers_missing
from rag.checks.text import normalize
from rag.checks.translated import names_elsewhere, negation_apart, shared_across
from rag.i18n import Msg, join

# refusals of wording only: the model's quote may lift them (see the module docstring)
WORDING = frozenset({"check.sentence_few_words", "check.sentence_not_in_sources"})
DOUBT = ("unsupported", "contradicted")
TRANSLATION_BEFORE = 200  # characters before the quote's sentences read with them for a translation


def _own_reason(reason: Msg | str) -> Msg | None:
    """The reason code gave for the sentence itself: a run's sentence carries it inside its "covered"."""
    if isinstance(reason, Msg) and reason.code == "check.sentence_covered":
        detail = reason.params.get("detail")
        return detail if isinstance(detail, Msg) else None
    return reason if isinstance(reason, Msg) else None


def _refused_for_wording(reason: Msg | str) -> bool:
    own = _own_reason(reason)
    if own is None or own.code not in WORDING:
        return False
    missing = str(own.params.get("missing", ""))
    return not any(ch.isdigit() for ch in missing)  # a missing number is a fact, not wording


def unconfirmed(check: SentenceCheck) -> bool:
    """Code found the sentence's words and facts in its sources, not as it puts them (not checked)."""
    reason = _own_reason(check.reason)
    return check.status == "not_checked" and reason is not None and reason.code == "check.sentence_unconfirmed"


def needs_label(check: SentenceCheck) -> bool:
    """Whether the model's label can change ``check``: supported, or refused for its wording only."""
    return bool(check.citations) and (check.status in ("supported", "not_checked") or (
        check.status == "unsupported" and _refused_for_wording(check.reason)))


def _quoted(quote: str, cited: Sequence[Source]) -> tuple[Source, QuoteMatch] | None:
    for src in cited:
        match = match_quote(quote, src.norm)
        if match is not None:
            return src, match
    return None


def _doubt(label: str, why: str) -> Msg | None:
    """The model's doubt as a reason, or None when it says the sources state the sentence. "partly
    stated" is doubt too: an added detail is what a ✓ must not cover."""
    if label in DOUBT:
        return Msg.of("check.sentence_model_label", label=label, why=why)
    if label == "partial":
        return Msg.of("check.sentence_model_label", label="partly", why=why)
    return None


def apply_label(check: SentenceCheck, label: str, why: str, quote: str, cited: Sequence[Source]) -> SentenceCheck:
    """``check`` with the model's ``label`` (``why``: its reason; ``quote``: the words it says state the
    sentence) applied by the rules of the module docstring."""
    doubt = _doubt(label, why)
    if check.status in ("supported", "not_checked") and doubt is not None:
        return replace(check, status="unsupported", reason=doubt)
    if unconfirmed(check):  # code found its words, not what it says: the model read it and says the source does
        return replace(check, status="supported", reason=Msg.of("check.sentence_model_confirmed")) \
            if label == "supported" else check
    lifts = check.status == "not_checked" or (check.status == "unsupported" and _refused_for_wording(check.reason))
    if not lifts or label != "supported" or not quote.strip():
        return check
    found = _quoted(quote, cited)
    if found is None:
        return replace(check, reason=join([check.reason, Msg.of("check.sentence_quote_not_found")]))
    if check.status == "not_checked":
        return _translated(check, quote, *found)
    src, match = found
    window = sentence_around(src.norm, src.text, match)
    body = CITATION.sub(" ", check.text)
    missing = [f for f in facts_of(check.text) if not fact_in(f, window)]
    if missing or negation_differs(body, [src.text], {}):
        return check
    return replace(check, status="supported", reason=Msg.of("check.sentence_model_quote", quote=" ".join(quote.split())[:80]))


def _translated(check: SentenceCheck, quote: str, src: Source, match: QuoteMatch) -> SentenceCheck:
    """A sentence in another language than its sources that the model says ``src`` states, quoting
    it (``match``: where code found the quote): supported when code finds what the module docstring
    lists, else "not checked" still, with the reason."""
    body = CITATION.sub(" ", check.text)
    # read in the quote's sentences and the few before them, as the source writes them: a translation
    # names in full whom the quote calls "she", and counts what an earlier sentence counted
    start, end = sentence_span(src.text, match)
    raw = src.text[max(0, start - TRANSLATION_BEFORE):end]
    shared = shared_across(body, raw)
    missing = numbers_missing(facts_of(check.text), normalize(raw).text, normalize(f"{src.label} {src.text}").text, raw)
    others = names_elsewhere(body, raw, src.text)
    why_not = (Msg.of("check.translation_numbers", missing=", ".join(missing)) if missing
               else Msg.of("check.translation_people", names="、".join(others)) if others
               else Msg.of("check.translation_no_shared_words") if not shared
               else Msg.of("check.translation_negation") if negation_apart(body, raw) else None)
    if why_not is not None:
        return replace(check, reason=join([check.reason, why_not]))
    return replace(check, status="supported", reason=Msg.of(
        "check.sentence_model_translated", quote=" ".join(quote.split())[:80], terms="、".join(shared[:4])))
