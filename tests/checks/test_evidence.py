"""Evidence checks: normalisation, quote matching, part verification, answer sentence checks."""

from __future__ import annotations

import pytest

from rag.checks import (
    Source,
    answer_supported,
    check_answer,
    citations_of,
    cn_to_int,
    match_quote,
    normalize,
    split_sentences,
    verify_part,
)
from rag.i18n import codes

GUIDE = ("须菩提祖师半夜传授悟空长生之道，又教他七十二般地煞变化。悟空驾云的样子像爬，祖师便传他“筋斗云”："
         "一个筋斗能翻十万八千里。悟空在同门面前卖弄变化，被祖师逐出师门。")
BATTLE = "此战蜀将马超率先出阵，与许褚大战二百余合，不分胜负。"
ENGLISH = "Sun Wukong was imprisoned under the Five Elements Mountain by the Buddha for five hundred years."


def src(n: int, text: str, origin: str = "book", label: str = "") -> Source:
    return Source(number=n, text=text, origin=origin, label=label)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- normalisation
@pytest.mark.parametrize(("raw", "expected"), [
    ("五十四", "54"), ("十万八千里", "108000里"), ("一九八六年", "1986年"), ("第二十七回", "第27回"), ("十", "10"),
])
def test_chinese_numerals_become_digits(raw: str, expected: str) -> None:
    assert normalize(raw).text == expected


def test_numeral_words_that_are_not_numbers_stay() -> None:
    assert normalize("一起走，一样好").text == "一起走一样好"
    assert cn_to_int("回") is None


def test_width_case_whitespace_and_punctuation_are_ignored() -> None:
    assert normalize("ＡＢＣ １２３，Ｈｅｌｌｏ！").text == normalize("abc123 hello").text == "abc123hello"
    assert normalize("悟空\n  驾云").text == "悟空驾云"


def test_spans_map_back_to_the_original() -> None:
    text = "共有  五十四 回。"
    norm = normalize(text)
    start = norm.text.index("54")
    a, b = norm.original_span(start, start + 2)
    assert text[a:b] == "五十四"


# --------------------------------------------------------------------------- quotes
def test_verbatim_quote_across_a_line_break_and_full_width_punctuation() -> None:
    m = match_quote("祖师便传他\"筋斗云\":\n一个筋斗能翻十万八千里", normalize(GUIDE))
    assert m is not None and m.exact
    a, b = m.span
    assert GUIDE[a:b].startswith("祖师便传他") and GUIDE[a:b].endswith("十万八千里")


def test_quote_of_pieces_joined_with_an_ellipsis() -> None:
    m = match_quote("须菩提祖师半夜传授悟空长生之道……一个筋斗能翻十万八千里", normalize(GUIDE))
    assert m is not None and not m.exact and len(m.norm_spans) == 2


def test_fuzzy_quote_with_a_copying_slip() -> None:
    # one slip near the start of a long quote keeps one long run (17 of 18 characters)
    m = match_quote("悟室在同门面前卖弄变化，被祖师逐出师门。", normalize(GUIDE))
    assert m is not None and not m.exact and m.ratio >= 0.85
    a, b = m.span
    assert GUIDE[a:b] == "悟空在同门面前卖弄变化，被祖师逐出师门"
    # a slip in the middle leaves no run long enough: not accepted (14 of 18)
    assert match_quote("悟空在同门面前卖弄变化，被祖师赶出师门", normalize(GUIDE)) is None


def test_too_short_or_absent_quotes_fail() -> None:
    assert match_quote("筋斗", normalize(GUIDE)) is None  # 2 Han characters: below the minimum
    assert match_quote("Buddha", normalize(ENGLISH)) is None  # 6 Latin characters: below 12
    assert match_quote("唐僧在女儿国被留下", normalize(GUIDE)) is None
    assert match_quote("under the Five Elements Mountain", normalize(ENGLISH)) is not None


# --------------------------------------------------------------------------- parts
def test_a_verified_part_points_at_the_quote() -> None:
    sources = [src(1, GUIDE)]
    check = verify_part("筋斗云能翻多远", "十万八千里", 1, "一个筋斗能翻十万八千里", sources)
    assert check.status == "verified" and check.matched_source == 1
    a, b = check.span or (0, 0)
    assert GUIDE[a:b] == "一个筋斗能翻十万八千里"


def test_numerals_in_either_form_verify() -> None:
    check = verify_part("筋斗云能翻多远", "108000里", 1, "一个筋斗能翻十万八千里", [src(1, GUIDE)])
    assert check.status == "verified"


def test_a_quote_from_another_passage_is_accepted_and_said() -> None:
    sources = [src(1, BATTLE), src(2, GUIDE)]
    check = verify_part("谁传授筋斗云", "须菩提祖师", 1, "须菩提祖师半夜传授悟空长生之道", sources)
    assert check.status == "verified" and check.matched_source == 2 and "check.found_elsewhere" in codes(check.detail)
    assert str(check.detail) == ("quote verbatim; answer found in the quoted passage text (cited [1], found in [2])")
    assert check.detail.text("zh") == "引文逐字吻合；答案见于引文所在的原文（模型标注 [1]，实际见于 [2]）"


def test_the_answer_must_be_in_the_matched_passage_text_not_the_quote() -> None:
    sources = [src(1, BATTLE)]
    # the model's quote claims three names; the passage names only one
    check = verify_part("哪些蜀将出阵", "马超、庞德、马岱", 1, "此战蜀将马超、庞德、马岱率先出阵", sources)
    assert check.status == "unverified"
    ok = verify_part("哪位蜀将先出阵", "马超", 1, "此战蜀将马超率先出阵", sources)
    assert ok.status == "verified"


def test_a_relevant_quote_without_the_answer_is_unverified() -> None:
    check = verify_part("筋斗云能翻多远", "十万九千里", 1, "一个筋斗能翻十万八千里", [src(1, GUIDE)])
    assert check.status == "unverified" and "check.answer_not_in_quote" in codes(check.detail)
    assert str(check.detail) == "[1]: answer not in the quoted passage text: 109000里"


def test_yes_no_answers_need_shared_content_with_the_part() -> None:
    sources = [src(1, GUIDE)]
    ok = verify_part("悟空是否被逐出师门", "是", 1, "被祖师逐出师门", sources)
    bad = verify_part("唐僧是否到了女儿国", "是", 1, "悟空在同门面前卖弄变化", sources)
    assert ok.status == "verified" and bad.status == "unverified"


def test_not_found_parts() -> None:
    for quote in ("not found", "未找到", None):
        assert verify_part("电视剧第几集", None, None, quote, [src(1, GUIDE)]).status == "not_found"


def test_english_parts() -> None:
    check = verify_part("how long", "five hundred years", 1, "by the Buddha for five hundred years", [src(1, ENGLISH)])
    assert check.status == "verified"
    assert answer_supported("500 years", normalize(ENGLISH).text)[0] is True  # English number words are numbers
    assert answer_supported("600 years", normalize(ENGLISH).text)[0] is False


# --------------------------------------------------------------------------- tampering
TAMPER_CASES = [
    ("筋斗云能翻多远", "十万八千里", "一个筋斗能翻十万八千里", GUIDE),
    ("谁传授长生之道", "须菩提祖师", "须菩提祖师半夜传授悟空长生之道", GUIDE),
    ("马超与谁大战", "许褚", "马超率先出阵，与许褚大战二百余合", BATTLE),
    ("How long", "five hundred years", "by the Buddha for five hundred years", ENGLISH),
]


@pytest.mark.parametrize(("part", "answer", "quote", "text"), TAMPER_CASES)
def test_tampered_evidence_never_verifies(part: str, answer: str, quote: str, text: str) -> None:
    sources = [src(1, text)]
    assert verify_part(part, answer, 1, quote, sources).status == "verified"
    # the answer swapped for another name or number
    for other in ("孙悟空大圣", "一百零八", "张飞", "three thousand years"):
        assert verify_part(part, other, 1, quote, sources).status != "verified"
    # every single-character change of the answer, made in the quote too (a fabricated fact)
    for i, ch in enumerate(answer):
        if not ch.strip():
            continue
        forged = answer[:i] + ("甲" if ch != "甲" else "乙") + answer[i + 1:]
        assert verify_part(part, forged, 1, quote.replace(answer, forged), sources).status != "verified", forged
        # the quote changed inside the answer, the answer kept: the quote no longer states it
        assert verify_part(part, answer, 1, quote.replace(answer, forged), sources).status != "verified", forged


# --------------------------------------------------------------------------- sentences
def test_sentence_splitting_keeps_citations_with_their_sentence() -> None:
    text = "悟空被压在五行山下[1]。五百年后唐僧救他出来。[2]Then he left. It was 1986 [3].\n## 尚缺的信息"
    parts = [text[a:b] for a, b in split_sentences(text)]
    assert parts == ["悟空被压在五行山下[1]。", "五百年后唐僧救他出来。[2]", "Then he left.", "It was 1986 [3].", "## 尚缺的信息"]


def test_citations_parse() -> None:
    assert citations_of("见[1][3]与[2, 4]以及[5-6]") == (1, 3, 2, 4, 5, 6)


SOURCES = [src(1, GUIDE, label="学艺与筋斗云（第二回）"), src(2, BATTLE, label="第五十八回"),
           src(3, "The 1986 TV series shows the White Bone Demon in episode 9.", origin="web", label="TV guide")]


def test_answer_sentences_are_marked() -> None:
    answer = ("须菩提祖师传授悟空筋斗云，一个筋斗能翻十万八千里[1]。"
              "马超与许褚大战二百余合[2]。"
              "马超与许褚大战三百余合[2]。"
              "悟空后来在第九十回被如来收服。"
              "电视剧第9集演的是白骨精[3]。"
              "书中说电视剧第9集演的是白骨精[3]。"
              "马超与许褚大战二百余合[7]。"
              "电视剧的导演无法从资料中确认。")
    marks = [(s.status, s.origin) for s in check_answer(answer, SOURCES).sentences]
    # the fourth sentence has no citation of its own: the [3] that closes its run covers it, and does not say it;
    # the fifth, a Chinese claim on an English page, has its number there, but what it says code cannot compare
    assert marks == [("supported", "book"), ("supported", "book"), ("unsupported", "book"), ("unsupported", "web"),
                     ("not_checked", "web"), ("unsupported", "web"), ("unsupported", None), ("no_claim", None)]


def test_a_swapped_citation_is_flagged() -> None:
    result = check_answer("须菩提祖师传授悟空长生之道和七十二般变化[2]。", SOURCES)
    assert [s.status for s in result.sentences] == ["unsupported"]


def test_a_chapter_label_that_the_source_does_not_have_is_flagged() -> None:
    result = check_answer("筋斗云出自第二回[1]。筋斗云出自第三回[1]。", SOURCES)
    assert [s.status for s in result.sentences] == ["not_checked", "unsupported"]


def test_a_quote_from_a_passage_about_something_else_does_not_verify() -> None:
    """Measured with a 1.5B judge: the answer to "狮驼岭三魔中的老三是什么" quoted, verbatim, from a
    passage about 无底洞 that merely names a demon. The source must share a term with the part; when it
    does not, code cannot decide (the quote may speak of the part by a pronoun), and a small model's
    "enough" does not stand on it (``decide(strict=True)``)."""
    other = "无底洞：黑松林里被绑在树上的女子被唐僧救下，她却是陷空山无底洞的金鼻白毛老鼠精。"
    bad = verify_part("狮驼岭三魔中的老三是什么", "金鼻白毛老鼠精", 1, "她却是陷空山无底洞的金鼻白毛老鼠精", [src(1, other)])
    assert bad.status == "undecided" and codes(bad.detail) == {"check.in_source", "check.not_about_part"}
    good = verify_part("无底洞的女妖是什么", "金鼻白毛老鼠精", 1, "她却是陷空山无底洞的金鼻白毛老鼠精", [src(1, other)])
    assert good.status == "verified"
    # an English part on a Chinese passage is compared by its words as the book writes them (无底洞)
    cross = verify_part("What was the demon of the Bottomless Cave?", "金鼻白毛老鼠精", 1,
                        "她却是陷空山无底洞的金鼻白毛老鼠精", [src(1, other)])
    assert cross.status == "verified"


# --------------------------------------------------------------------------- details and reasons are codes
def test_the_answer_sentences_reasons_are_codes_in_both_languages() -> None:
    answer = ("马超与许褚大战三百余合[2]。"
              "悟空后来在第九十回被如来收服。"
              "马超与许褚大战二百余合[7]。"
              "电视剧的导演无法从资料中确认。")
    reasons = [s.reason for s in check_answer(answer, SOURCES).sentences]
    assert [r.code for r in reasons] == ["check.sentence_not_in_sources", "check.sentence_covered",
                                         "check.sentence_unknown_source", "check.sentence_hedge"]
    assert [str(r) for r in reasons[::2]] == ["not in the cited sources: 300", "cites a source that does not exist: [7]"]
    assert reasons[1].text("zh").endswith("（由段末的引用标注覆盖）")
    assert reasons[2].text("zh") == "引用了不存在的来源：[7]"


def test_a_parts_detail_names_each_source_it_tried() -> None:
    check = verify_part("筋斗云能翻多远", "十万九千里", 1, "一个筋斗能翻十万八千里", [src(1, GUIDE), src(2, GUIDE + "。")])
    assert check.status == "unverified" and check.detail.code == "join"
    assert str(check.detail) == ("[1]: answer not in the quoted passage text: 109000里; "
                                 "[2]: answer not in the quoted passage text: 109000里")
    assert check.detail.text("zh") == "[1]：引文所在的原文中没有答案：109000里；[2]：引文所在的原文中没有答案：109000里"
    fuzzy = verify_part("谁把悟空逐出师门", "祖师", 1, "悟室在同门面前卖弄变化，被祖师逐出师门。", [src(1, GUIDE)])
    assert fuzzy.status == "verified" and "check.quote_matched" in codes(fuzzy.detail)
    assert str(fuzzy.detail) == "quote matched 0.89; answer found in the quoted passage text"
    assert fuzzy.detail.text("zh") == "引文近似吻合（0.89）；答案见于引文所在的原文"
    none = verify_part("电视剧第几集", None, None, "not found", [src(1, GUIDE)])
    assert none.detail.code == "check.no_evidence" and none.detail.text("zh") == "模型没有为这部分找到证据"


def test_a_checked_part_keeps_its_detail_through_json() -> None:
    from pydantic import TypeAdapter

    from rag.checks import PartCheck, SentenceCheck
    from rag.eval.runner import evaluation_record
    from rag.schemas import Evaluation

    check = verify_part("谁传授筋斗云", "须菩提祖师", 1, "须菩提祖师半夜传授悟空长生之道", [src(1, BATTLE), src(2, GUIDE)])
    as_part = TypeAdapter(PartCheck)
    again = as_part.validate_json(as_part.dump_json(check))
    assert again == check and again.detail == check.detail and codes(again.detail) == codes(check.detail)
    old = PartCheck(part="old", answer="", source=None, quote="", status="not_found", detail="quote verbatim")
    ev = Evaluation(reason="r", enough=True, parts=[check, old])
    assert [p["detail"] for p in evaluation_record(ev)["parts"]] == [str(check.detail), "quote verbatim"]
    sentence = SentenceCheck(text="x", start=0, end=1, citations=(), status="no_claim",
                             reason=check_answer("结论如下：", SOURCES).sentences[0].reason)
    as_sentence = TypeAdapter(SentenceCheck)
    assert as_sentence.validate_json(as_sentence.dump_json(sentence)) == sentence
    assert codes("plain text") == set()
