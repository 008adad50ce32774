"""Sentence checks on modern documentary prose (court records, reports): the ways a faithful sentence
is written there that a check must not refuse (a document number in brackets, coded names, "the two of
them", 同年, a sum worked out, a section title, the answer's own labels) and
the wrong sentences beside them that it still must. The texts are written for these tests."""

from __future__ import annotations

from rag.checks import Source, check_answer
from rag.checks.sentences import citations_of

RECORD = ("经审理查明：原告王0与被告苏2系父子关系，2010年1月31日，原告王0与被告苏2签订财产协议。"
          "另查明，原告刘x0与李x6系夫妻关系，因原告与李x6膝下无子，1972年3月经协商收养被告刘x2为养子。")
SALE = ("公诉机关指控，2015年8月，被告人周某甲通过网络发布出售考试答案的广告，并于同年9月初以每一科目人民币"
        "1500元的价格将答案卖给被告人吴某。")
LABOUR = ("原、被告双方对其他事项无争议入职时间:被告于2010年3月1日入职工作岗位:杂工。被告提交一份《自愿书》，"
          "日期为2009年4月1日。鉴定意见书（燕赵[2015]鉴字第JS048号）认定制动系统存在设计缺陷。")
DEBT = "原告代被告偿还借款30345.92元，另垫付保险费17044.26元，被告应一并偿还。"
CHARGE = "被告人张某持刀将被害人刺伤，其行为已构成故意伤害罪。"


def marks(answer: str, *texts: str, question: str | None = None) -> list[str]:
    sources = [Source(i + 1, t, "book", "") for i, t in enumerate(texts)]
    return [s.status for s in check_answer(answer, sources, question=question).sentences]


def test_a_bracketed_document_number_is_no_citation() -> None:
    assert citations_of("鉴定意见书（燕赵[2015]鉴字第JS048号）认定存在设计缺陷[1]。") == (1,)
    assert marks("鉴定意见书（燕赵[2015]鉴字第JS048号）认定制动系统存在设计缺陷[1]。", LABOUR) == ["supported"]
    assert marks("鉴定意见书认定制动系统存在设计缺陷[7]。", LABOUR) == ["unsupported"]  # [7] is still a citation


def test_a_coded_name_between_han_characters_is_a_name_checked_as_written() -> None:
    assert marks("2010年1月31日，王0还与苏2签订了财产协议[1]。", RECORD) == ["supported"]
    assert marks("2010年1月31日，王3还与苏2签订了财产协议[1]。", RECORD) == ["unsupported"]


def test_the_two_of_them_opening_a_clause_counts_nothing() -> None:
    assert marks("刘x0与李x6是夫妻。两人膝下无子，于1972年3月收养刘x2为养子[1]。", RECORD) == ["supported", "not_checked"]
    assert marks("刘x0与李x6是夫妻。三人膝下无子，于1972年3月收养刘x2为养子[1]。", RECORD)[1] == "unsupported"


def test_the_same_year_is_the_year_last_named() -> None:
    assert marks("周某甲于2015年9月初以每一科目1500元的价格把答案卖给了吴某[1]。", SALE) == ["not_checked"]
    assert marks("周某甲于2016年9月初以每一科目1500元的价格把答案卖给了吴某[1]。", SALE) == ["unsupported"]



def test_a_date_whose_year_the_passage_named_earlier_is_stated() -> None:
    # the sentences around "同年11月18日" do not repeat the year: the passage named it sixty characters before
    text = ("2014年10月，被告人钱某制作了若干封信件。同年11月初，钱某租用了一处仓库存放货物。钱某雇用两名工人看守仓库。"
            "钱某随后前往外地联系买家。钱某与买家约定分批交货。同年11月18日，买方向钱某的银行卡内存入货款80000元。")
    assert marks("2014年11月18日，买方向钱某的银行卡内存入货款80000元[1]。", text) == ["not_checked"]
    assert marks("2015年11月18日，买方向钱某的银行卡内存入货款80000元[1]。", text) == ["unsupported"]
    assert marks("2014年11月19日，买方向钱某的银行卡内存入货款80000元[1]。", text) == ["unsupported"]
    # a day named without its year is in the year the text last named ("2012年9月份……9月13日")
    later = ("2012年9月份，陈某联系到被告人。被告人为林某做了检查。被告人收取了费用。被告人告知几天后复查。"
             "林某回家休息。9月13日，林某再次来到被告人的出租房。")
    assert marks("2012年9月13日，林某再次来到被告人的出租房[1]。", later) != ["unsupported"]
    assert marks("2013年9月13日，林某再次来到被告人的出租房[1]。", later) == ["unsupported"]


def test_a_count_whose_list_follows_in_the_sentence_is_its_own() -> None:
    text = "原告与被告于2011年7月13日签订施工合同，约定修建商住楼。双方又于2011年12月30日签订施工合同，约定修建车库。"
    listed = "被告与原告先后签订了两份施工合同（2011年7月13日的商住楼合同，以及2011年12月30日的车库合同）[1]。"
    assert marks(listed, text) != ["unsupported"]
    assert marks("被告与原告先后签订了两份施工合同[1]。", text) == ["unsupported"]


def test_a_label_naming_the_part_it_answers_is_no_claim() -> None:
    text = "被告人许某骗称自己是刑警大队的民警，随后离开了派出所。"
    assert marks("1. 关于许某为何未找到所长：被告人许某骗称自己是刑警大队的民警[1]。", text,
                 question="许某为什么没有找到所长？") != ["unsupported"]
    # a label naming what neither the question nor the source has is checked with the rest
    assert marks("1. 关于猕猴为何未找到所长：被告人许某骗称自己是刑警大队的民警[1]。", text,
                 question="许某为什么没有找到所长？") == ["unsupported"]


def test_a_lead_in_counts_the_list_it_opens() -> None:
    text = "被告人的作案工具是石头和炸药。被告人用石头砸向被害人。被告人又回家拿来炸药，欲炸被害人的拖拉机。"
    answer = "根据资料，被告人的作案工具有两类：\n- 石头：被告人用石头砸向被害人[1]。\n- 炸药：被告人回家拿来炸药[1]。"
    assert marks(answer, text)[0] != "unsupported"
    # a count in a sentence that opens no list is a claim like any other
    assert marks("根据资料，被告人的作案工具有两类[1]。", text) == ["unsupported"]


def test_a_negation_denies_the_word_after_it_not_the_next_one() -> None:
    # 无争议 denies 争议: the 入职时间 that follows it is stated, not denied
    assert marks("《自愿书》的日期为2009年4月1日，早于入职时间[1]。", LABOUR) == ["not_checked"]


def test_a_sum_of_stated_numbers_is_stated() -> None:
    assert marks("被告应偿还代偿款30345.92元加保险费17044.26元，合计47390.18元[1]。", DEBT) == ["not_checked"]
    assert marks("被告应偿还代偿款30345.92元加保险费17044.26元，合计47391.18元[1]。", DEBT) == ["unsupported"]


def test_a_word_the_sentence_says_the_source_does_not_use_is_not_claimed() -> None:
    assert marks("张某的行为构成“故意伤害罪”，并非“聚众斗殴”[1]。", CHARGE) == ["not_checked"]
    assert marks("张某的行为构成“聚众斗殴”[1]。", CHARGE) == ["unsupported"]


def test_a_numbered_section_title_is_no_claim() -> None:
    assert marks("一、入职时间\n被告于2010年3月1日入职，岗位为杂工[1]。", LABOUR) == ["no_claim", "supported"]
    # a long title, with the answer's own remark in brackets, is a title too
    assert marks("一、被告（资料中称“杂工”）入职的时间与工作岗位的具体情况\n被告于2010年3月1日入职，岗位为杂工[1]。",
                 LABOUR) == ["no_claim", "supported"]


def test_the_answers_own_label_and_attribution_are_not_claims() -> None:
    assert marks("附带说明：被告于2010年3月1日入职，岗位为杂工[1]。", LABOUR) == ["supported"]
    assert marks("资料只说明被告于2010年3月1日入职，并指出其工作岗位为杂工[1]。", LABOUR) == ["not_checked"]
    assert marks("附带说明：被告于2011年3月1日入职，岗位为杂工[1]。", LABOUR) == ["unsupported"]


def test_the_questions_own_part_is_no_number() -> None:
    assert marks("关于第二问：被告于2010年3月1日入职[1]。", LABOUR, question="被告何时入职？岗位是什么？") == ["supported"]


def test_a_source_that_withholds_what_the_claim_grants_is_contradicted() -> None:
    refused = "原告称结婚登记时使用的是假户口本，被告对此不予认可。"
    assert marks("对于原告所称使用假户口本一事，被告予以认可[1]。", refused) == ["unsupported"]
