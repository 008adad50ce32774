"""A small model's pick, checked more strictly than a judge's quote (``rag.checks.picks``): each rule
on text written here, with a pick the rule refuses and a faithful one it keeps."""

from __future__ import annotations

import pytest

from rag.checks.picks import asked_kind, pick_refused


@pytest.mark.parametrize(("part", "kind"), [
    ("晴雯补裘用的是什么线？", "线"), ("他一共买了几只小鸭？", "小鸭"), ("打了多少板子？", "板子"),
    ("白光在房里的什么地方？", None), ("这是什么时候的事？", None), ("他叫什么？", None),
    ("带儿子去看病的那个医生叫什么？", "医生"), ("把宝玉的茶喝了的那个人是谁？", None),
])
def test_the_kind_asked_about(part: str, kind: str | None) -> None:
    assert asked_kind(part) == kind


def codes(msg) -> str | None:
    return None if msg is None else msg.code


def test_the_questions_own_words_are_no_answer() -> None:
    assert codes(pick_refused("母亲总问起的是谁？", "谁", "然而我又不知道那名角是谁，")) == "check.pick_echo"
    assert codes(pick_refused("老张的儿子叫什么？", "老张", "老张的儿子叫小明。")) == "check.pick_echo"
    assert codes(pick_refused("老张认可这份判决吗？", "是", "老张认可这份判决。")) == "check.pick_yes_no"


def test_a_part_in_another_language_than_its_sentence_is_not_taken() -> None:
    assert codes(pick_refused("Why was he called Old Zhang?", "老张", "大家都叫他老张。")) == "check.pick_other_language"


def test_the_kind_asked_about_must_be_named_near_the_sentence() -> None:
    assert codes(pick_refused("他一共买了几只小鸭？", "十几个", "他已经买到了十几个蝌蚪。")) == "check.pick_other_kind"
    assert pick_refused("他一共买了几只小鸭？", "四只", "他买了四只小鸭。") is None
    # the sentence before names it: "…小鸭。一共四只。"
    assert pick_refused("他一共买了几只小鸭？", "四只", "一共是四只。", before="他在集市上买小鸭。") is None


def test_a_sentence_naming_the_parts_people_must_say_what_is_asked_around_its_question_word() -> None:
    part = "老张最后在什么地方找到了老李？"
    # the search went out by the east gate: where he was found is not said
    assert codes(pick_refused(part, "东门", "叫老张带着人一路找出东门。")) == "check.pick_not_about"
    assert pick_refused(part, "河边", "老张在河边找到了老李。") is None
    assert pick_refused("他在信里平空给谁的名字添了一笔？", "小王", "在信里小王的名字上平空添了一笔。") is None


def test_a_time_or_a_number_does_not_answer_where() -> None:
    sentence = "那间屋子在2011年3月到2012年5月由老张居住。"
    assert codes(pick_refused("老张住在哪？", "2011年3月到2012年5月", sentence)) == "check.pick_time_for_place"
    assert codes(pick_refused("Where did Tom stay?", "May 3 to May 9", "Tom stayed there from May 3 to May 9.")) \
        == "check.pick_time_for_place"
    assert pick_refused("Where did Tom stay in May?", "Mayfield", "Tom stayed at Mayfield in May.") is None
    assert pick_refused("老张住在哪里？", "三里屯", "老张住在三里屯。") is None
    # 哪一年 asks when: a year answers it
    assert pick_refused("老张在哪一年搬了家？", "2011年", "老张在2011年搬了家。") is None


def test_a_sentence_about_something_else_is_refused_and_the_one_before_can_save_it() -> None:
    part = "老张带儿子去看病的那个大夫姓什么？"
    assert codes(pick_refused(part, "王大妈", "幸亏王大妈等得不耐烦，")) == "check.pick_other_kind"
    part = "老张带儿子去看病的那天谁来了？"
    assert codes(pick_refused(part, "王大妈", "幸亏王大妈等得不耐烦，")) == "check.pick_not_about"
    assert pick_refused(part, "何先生", "来的是何先生。", before="那天老张带儿子去看病。") is None
    # the sources' own person (common to them) may be left out of the sentence
    assert pick_refused("老张在哪里找到了钱包？", "柜子底下", "在柜子底下找到了钱包。", common=frozenset({"老张"})) is None


def test_a_small_models_sentence_must_say_what_stands_on_both_sides_of_the_question_word() -> None:
    # the caravan sends apprentices to be stewards in the west market, not to the north town
    part = "商队带谁去北城当管家？"
    assert codes(pick_refused(part, "两个学徒", "商队还从南镇派出两个学徒担任西市粮仓的管家，")) == "check.pick_not_about"
    assert pick_refused(part, "两个学徒", "商队带两个学徒去北城当管家。") is None
    # a named kind ties its own side; of the other one character is enough, none is not
    part = "这个镇每平方公里有多少户人家？"
    assert codes(pick_refused(part, "三百户", "全镇共有三百户人家。")) == "check.pick_not_about"
    assert pick_refused(part, "四十户", "镇上每平方公里约有四十户人家。") is None
    # what the sentence says in its own words: one character between (给我的), an adverb left out
    # (最后), a generic word after the question word the answer names (什么职业)
    assert pick_refused("那个戒指是谁给的？", "王姑娘", "是王姑娘给我的。", before="这个戒指哪来的？") is None
    assert pick_refused("老张最后在什么地方找到了老李？", "河边", "老张在河边找到了老李。") is None
    assert pick_refused("他学的是法律，却选择了什么职业？", "新闻业", "他选择了新闻业，") is None


def test_an_english_sentence_must_say_something_the_part_asks_besides_its_people() -> None:
    common = frozenset({"mary", "tom"})
    part = "Where had Mary hoped to go before the trip was cut short?"
    assert codes(pick_refused(part, "Saturday", "and to Saturday Tom meant to stay.",
                              before="Mary wrote to Tom.", common=common)) == "check.pick_not_about"
    assert pick_refused(part, "the Lakes", "Mary had hoped to see the Lakes before the trip.", common=common) is None


def test_an_english_sentence_naming_only_the_parts_people_says_nothing_of_what_is_asked() -> None:
    part = "What did Lady Anne's letter do for Tom, in his own words?"
    assert codes(pick_refused(part, "plainly and fully", "you would have told it to Lady Anne, plainly and fully.")) \
        == "check.pick_not_about"
    assert pick_refused(part, "It gave me courage", "\u201cIt gave me courage,\u201d he said of the letter.") is None
    # after a title the name is still a name; after a sentence's end a capital starts the sentence
    assert codes(pick_refused("Where did Mr. Price walk? Tell me.", "to Dover", "Mr. Price was tired.")) \
        == "check.pick_not_about"


def test_an_english_question_of_two_parts_is_two() -> None:
    from rag.agent.extract import question_parts

    assert question_parts("Which dances did Tom ask for, and when he showed her the house, what did she feel?") == [
        "Which dances did Tom ask for", "when he showed her the house, what did she feel?"]


def test_a_sentence_naming_none_of_a_chinese_parts_latin_names_is_not_about_it() -> None:
    sentence = "Netplus是一个非营利性的计算机网络联盟，由研究和教育界的成员领导。"
    assert codes(pick_refused("谁领导Lumen财团？", "研究和教育界的成员", sentence)) == "check.pick_not_about"
    assert pick_refused("谁领导Netplus联盟？", "研究和教育界的成员", sentence) is None
    # one of the part's names is enough; the copied words' own names are not asked of
    assert pick_refused("谁领导Netplus和Lumen？", "研究和教育界的成员", sentence) is None
