"""A model's label joined with code's mark (rag.checks.labels): doubt removes a ✓; a quote code finds
lifts a refusal of wording only; facts and negations stay code's."""

from __future__ import annotations

from rag.checks import Source, check_answer
from rag.checks.labels import apply_label, needs_label

TIGER = [Source(1, "武松走了一程，见一个酒店。武松入到里面，一连吃了十五碗酒。武松提了哨棒，便走上冈子来。", "book", "")]


def mark(sentence: str):  # noqa: ANN201 - a SentenceCheck
    return check_answer(sentence, TIGER).sentences[0]


def test_doubt_takes_a_tick_away_and_agreement_keeps_it() -> None:
    right = mark("武松入到里面，一连吃了十五碗酒[1]。")
    assert right.status == "supported" and needs_label(right)
    assert apply_label(right, "contradicted", "另有其人", "", TIGER).status == "unsupported"
    assert apply_label(right, "unsupported", "没说", "", TIGER).status == "unsupported"
    assert apply_label(right, "supported", "原文", "一连吃了十五碗酒", TIGER).status == "supported"


def test_a_paraphrase_refused_for_its_wording_is_lifted_by_a_quote_code_finds() -> None:
    paraphrase = mark("进店之后，他前前后后总共喝下十五碗[1]。")
    assert paraphrase.status == "unsupported" and needs_label(paraphrase)
    lifted = apply_label(paraphrase, "supported", "原文", "一连吃了十五碗酒", TIGER)
    assert lifted.status == "supported" and lifted.reason.code == "check.sentence_model_quote"
    # a quote that is not in the cited source lifts nothing
    invented = apply_label(paraphrase, "supported", "原文", "一口气喝了十五碗好酒", TIGER)
    assert invented.status == "unsupported"
    # nor does a label without a quote
    assert apply_label(paraphrase, "supported", "原文", "", TIGER).status == "unsupported"


def test_what_code_found_wrong_in_facts_stays_wrong_whatever_the_model_says() -> None:
    number = mark("武松入到里面，一连吃了十八碗酒[1]。")
    assert number.status == "unsupported" and not needs_label(number)
    assert apply_label(number, "supported", "原文", "一连吃了十五碗酒", TIGER).status == "unsupported"
    # the quote is found, but the sentence's number is not in the quote's sentences
    paraphrase = mark("进店之后，他前前后后总共喝下十八碗[1]。")
    assert apply_label(paraphrase, "supported", "原文", "一连吃了十五碗酒", TIGER).status == "unsupported"
    other = mark("The tiger drank fifteen bowls [1].")
    assert other.status == "not_checked" and not needs_label(other)
    assert apply_label(other, "supported", "ok", "一连吃了十五碗酒", TIGER).status == "not_checked"
