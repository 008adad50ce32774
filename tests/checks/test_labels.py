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


def lifted_only_by_a_quote_code_finds(sentence: str, before: str, code: str):  # noqa: ANN201 - a SentenceCheck
    """``sentence`` is marked ``before`` and lifted to supported (reason ``code``) by a quote code finds in
    the source, never by a quote the source lacks or by no quote."""
    check = mark(sentence)
    assert check.status == before and needs_label(check)
    lifted = apply_label(check, "supported", "ok", "武松入到里面，一连吃了十五碗酒", TIGER)
    assert lifted.status == "supported" and lifted.reason.code == code
    assert apply_label(check, "supported", "ok", "一口气喝了十五碗好酒就睡了", TIGER).status == before
    assert apply_label(check, "supported", "ok", "", TIGER).status == before
    return lifted


def test_a_paraphrase_refused_for_its_wording_is_lifted_by_a_quote_code_finds() -> None:
    lifted_only_by_a_quote_code_finds("进店之后，他前前后后总共喝下十五碗[1]。", "unsupported", "check.sentence_model_quote")


def test_what_code_found_wrong_in_facts_stays_wrong_whatever_the_model_says() -> None:
    number = mark("武松入到里面，一连吃了十八碗酒[1]。")
    assert number.status == "unsupported" and not needs_label(number)
    assert apply_label(number, "supported", "原文", "一连吃了十五碗酒", TIGER).status == "unsupported"
    # the quote is found, but the sentence's number is not in the quote's sentences
    paraphrase = mark("进店之后，他前前后后总共喝下十八碗[1]。")
    assert apply_label(paraphrase, "supported", "原文", "一连吃了十五碗酒", TIGER).status == "unsupported"
    other = mark("Wu Song drank eighteen bowls of wine [1].")
    assert other.status == "unsupported"  # eighteen: code compares numbers across languages
    assert apply_label(other, "supported", "ok", "一连吃了十五碗酒", TIGER).status == "unsupported"


def test_a_translation_is_supported_only_with_a_quote_that_bears_it_out() -> None:
    lifted = lifted_only_by_a_quote_code_finds("Wu Song went into the tavern and drank fifteen bowls of wine [1].",
                                               "not_checked", "check.sentence_model_translated")
    assert "武松" in lifted.reason.params["terms"]
    # the model's doubt: unsupported
    faithful = mark("Wu Song went into the tavern and drank fifteen bowls of wine [1].")
    assert apply_label(faithful, "partial", "only part", "", TIGER).status == "unsupported"


def test_a_translation_that_code_can_show_wrong_stays_unconfirmed() -> None:
    # the sentence denies what the quote affirms
    denied = apply_label(mark("Wu Song did not drink the fifteen bowls of wine [1]."), "supported", "ok",
                         "武松入到里面，一连吃了十五碗酒", TIGER)
    assert denied.status == "not_checked" and "denies" in str(denied.reason)
    # the quote shares no word with the sentence
    unrelated = apply_label(mark("The moon is made of cheese [1]."), "supported", "ok", "武松提了哨棒，便走上冈子来", TIGER)
    assert unrelated.status == "not_checked" and "no word they share" in str(unrelated.reason)
    # the sentence names someone the source writes, the quote's sentences do not
    far = "那日天气正好，路上行人不多。" * 20  # more than TRANSLATION_BEFORE characters between them
    sources = [Source(1, f"宋江在浔阳楼上题了反诗。{far}武松入到里面，一连吃了十五碗酒。", "book", "")]
    other = check_answer("Song Jiang drank fifteen bowls of wine in the tavern [1].", sources).sentences[0]
    moved = apply_label(other, "supported", "ok", "一连吃了十五碗酒", sources)
    assert moved.status == "not_checked" and "宋江" in str(moved.reason)


def test_a_chinese_sentence_on_an_english_source_shares_words_through_the_dictionary() -> None:
    letter = [Source(1, "Elizabeth read the letter three times. She could not sleep that night.", "book", "")]
    said = check_answer("伊丽莎白把那封信读了三遍[1]。", letter).sentences[0]
    assert said.status == "not_checked"
    lifted = apply_label(said, "supported", "ok", "Elizabeth read the letter three times.", letter)
    assert lifted.status == "supported"
    wrong = check_answer("伊丽莎白把那封信读了五遍[1]。", letter).sentences[0]
    assert apply_label(wrong, "supported", "ok", "Elizabeth read the letter three times.", letter).status != "supported"
