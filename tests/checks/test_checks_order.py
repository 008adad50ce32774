"""A claim whose words are all in its source but not as it puts them: code cannot say the source says
it, so it is "not checked" (never ✓) until a model reading the source confirms it. Texts written for
these tests."""

from __future__ import annotations

from rag.checks.labels import apply_label, unconfirmed
from rag.checks.quotes import Source
from rag.checks.sentences import check_answer
from rag.i18n import codes

FIGHT = "殴打过程中，窦某某持匕首将李某某的面部划伤。李某某随即报警。"
RIGHTS = "2016年9月30日，灿星文化公司将该节目影像的著作权授权给了宝声公司。"
LETTER = "Jane gave the letter to Elizabeth. Elizabeth read it twice before she spoke."


def book(text: str) -> Source:
    return Source(number=1, text=text, origin="book")


def mark(sentence: str, text: str) -> tuple[str, set[str]]:
    (check,) = check_answer(sentence, [book(text)]).sentences
    return check.status, codes(check.reason)


def test_the_sources_own_words_in_their_order_are_supported() -> None:
    assert mark("殴打过程中，窦某某持匕首将李某某的面部划伤[1]。", FIGHT)[0] == "supported"
    assert mark("Jane gave the letter to Elizabeth [1].", LETTER)[0] == "supported"


def test_the_same_words_with_the_people_swapped_are_not_checked() -> None:
    assert mark("殴打过程中，李某某持匕首将窦某某的面部划伤[1]。", FIGHT) == ("not_checked", {"check.sentence_unconfirmed"})
    assert mark("Elizabeth gave the letter to Jane [1].", LETTER) == ("not_checked", {"check.sentence_unconfirmed"})


def test_another_action_with_the_same_names_is_not_checked_and_says_which_words() -> None:
    (check,) = check_answer("2016年9月30日，灿星文化公司将该节目影像的著作权转让给了宝声公司[1]。", [book(RIGHTS)]).sentences
    assert check.status == "not_checked" and "转让" in str(check.reason)


def test_a_model_reading_the_source_decides_what_code_could_not() -> None:
    (check,) = check_answer("殴打过程中，李某某持匕首将窦某某的面部划伤[1]。", [book(FIGHT)]).sentences
    assert unconfirmed(check)
    cited = [book(FIGHT)]
    assert apply_label(check, "unsupported", "窦某某划伤了李某某", "", cited).status == "unsupported"
    assert apply_label(check, "partial", "", "", cited).status == "unsupported"
    confirmed = apply_label(check, "supported", "", "", cited)
    assert confirmed.status == "supported" and codes(confirmed.reason) == {"check.sentence_model_confirmed"}
    # a sentence code refused for a fact stays refused, whatever the model says
    (wrong,) = check_answer("殴打过程中，窦某某持匕首将李某某的面部划伤3次[1]。", [book(FIGHT)]).sentences
    assert wrong.status == "unsupported" and apply_label(wrong, "supported", "", "", cited).status == "unsupported"
