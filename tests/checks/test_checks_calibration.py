"""The evidence checks as real models write: paraphrased answers to classical text accepted, invented
coverage refused; answer sentences cited at the end of a paragraph, with quoted speech inside.

The examples are the ones the evidence issue measured (三国演义 第5回, 西游记 第7回, a 1.5B model's
echoed worked example); the figures on recorded replies are in tests/test_eval_replay.py."""

from __future__ import annotations

from rag.checks.quotes import Source, question_left_out, verify_part
from rag.checks.sentences import check_answer, split_sentences
from rag.checks.text import content, coverage, name_groups, normalize
from rag.i18n import Msg, codes

WINE = ("关公曰：“酒且斟下，某去便来。”出帐提刀，飞身上马。众诸侯听得关外鼓声大振，喊声大举，如天摧地塌，"
        "岳撼山崩，众皆失惊。正欲探听，鸾铃响处，马到中军，云长提华雄之头，掷于地上。其酒尚温。")
WHIP = "张飞大怒，揪住督邮头发，扯出馆驿，直到县前马桩上缚住；攀下柳条，去督邮两腿上着力鞭打，一连打折柳条十数枝。"
MOUNTAIN = ("佛祖翻掌一扑，把这猴王推出西天门外，将五指化作金、木、水、火、土五座联山，唤名“五行山”，轻轻的把他压住。"
            "那大圣在山下压了五百年，饿时与他铁丸子吃，渴时与他溶化的铜汁饮。")
LATER = "悟空道：“我今日得脱，与五百年前又大不同。”"


def book(n: int, text: str, label: str = "") -> Source:
    return Source(number=n, text=text, origin="book", label=label)


# --------------------------------------------------------------------------- parts
def test_a_modern_paraphrase_of_classical_text_verifies() -> None:
    q = "关羽去斩华雄前，曹操给他的那杯酒，回来时怎么样了？"
    check = verify_part("回来时那杯酒怎么样了", "酒还是温的", 1, "其酒尚温", [book(1, WINE)], question=q)
    assert check.status == "verified", check.detail


def test_a_yes_no_answer_with_its_reason_verifies_and_a_bare_one_needs_the_part() -> None:
    q = "关羽是喝了那杯酒再去的吗？"
    ok = verify_part("他是喝了再去的吗", "没有喝，他让酒先斟下，说去去就来", 1, "关公曰：“酒且斟下，某去便来。”",
                     [book(1, WINE)], question=q)
    assert ok.status == "verified", ok.detail
    unrelated = verify_part("他是喝了再去的吗", "是", 1, "众诸侯听得关外鼓声大振", [book(1, WINE)], question=q)
    assert unrelated.status == "unverified"


def test_a_part_written_with_a_pronoun_verifies() -> None:
    q = "张飞鞭打督邮，他用什么打的？"
    check = verify_part("他用什么打的", "柳条", 1, "攀下柳条，去督邮两腿上着力鞭打", [book(1, WHIP)], question=q)
    assert check.status == "verified", check.detail


def test_names_match_in_any_of_their_forms() -> None:
    # the other names come from the book (rag.aliases), not from a table of one novel's people
    names = name_groups({"关羽": ("云长", "关公"), "猪八戒": ("八戒",)})
    assert coverage(content("关羽提着华雄的头", names), normalize("云长提华雄之头").text) == 1.0
    assert coverage(content("猪八戒", names), normalize("那呆子八戒").text) == 1.0  # numerals in names stay names
    assert coverage(content("关羽提着华雄的头"), normalize("云长提华雄之头").text) < 1.0  # no table of names


def test_an_echoed_worked_example_is_not_a_part_of_the_question() -> None:
    """Measured in the browser: a 1.5B judge answered the English example's "who built the mill"."""
    q = "孙悟空被压在哪座山下？"
    check = verify_part("who built the mill", "齐天大圣孙悟空", 1, "把这猴王推出西天门外", [book(1, MOUNTAIN)], question=q)
    assert check.status == "unverified" and codes(check.detail) == {"check.not_a_part"}


def test_a_quote_about_another_event_does_not_verify_the_part() -> None:
    """"孙悟空被压在山下多少年 → 五百年" verified by "与五百年前又大不同" was the issue's example."""
    q = "孙悟空被压在山下多少年？"
    bad = verify_part("孙悟空被压在山下多少年", "五百年", 1, "与五百年前又大不同", [book(1, LATER)], question=q,
                      aliases={"孙悟空": ("悟空", "大圣")})
    # never verified; code cannot show the answer wrong either (the quote's sentence just speaks of
    # something else), so it is undecided: a small model's verdict is refused on it (JudgeConfig.strict)
    assert bad.status == "undecided" and "check.not_about_part" in codes(bad.detail)
    good = verify_part("孙悟空被压在山下多少年", "五百年", 1, "那大圣在山下压了五百年", [book(1, MOUNTAIN)], question=q)
    assert good.status == "verified", good.detail


def test_a_part_whose_own_facts_no_source_states_is_not_answered_there() -> None:
    paper = "系统研究的开始归因于甲某和乙某（1965）的论文“论算法的复杂性”，该文提出了时间复杂性的定义。"
    q = "甲某和乙某在1975年写了什么论文？"
    year = verify_part("甲某和乙某在1975年写了什么论文", "论算法的复杂性", 1, "的论文“论算法的复杂性”", [book(1, paper)], question=q)
    assert year.status == "unverified" and "check.part_not_in_sources" in codes(year.detail)
    right = verify_part("甲某和乙某在1965年写了什么论文", "论算法的复杂性", 1, "的论文“论算法的复杂性”", [book(1, paper)],
                        question="甲某和乙某在1965年写了什么论文？")
    assert right.status == "verified", right.detail
    # what the part quotes is what it asks about: a sentence about another design does not answer it
    shares = "“设计方案一”占设计总工作量的比例达到25%。“设计方案二”未完成，双方对其比例有争议。"
    other = verify_part("“设计方案二”占总工作量多少", "25%", 1, "“设计方案一”占设计总工作量的比例达到25%", [book(1, shares)],
                        question="“设计方案二”占总工作量多少？")
    assert other.status != "verified"
    same = verify_part("“设计方案一”占总工作量多少", "25%", 1, "“设计方案一”占设计总工作量的比例达到25%", [book(1, shares)],
                       question="“设计方案一”占总工作量多少？")
    assert same.status == "verified", same.detail
    # one sentence naming both: the quote names the other design, so its figure is the other's
    both = "“设计方案一”占设计总工作量的比例达到25%，“设计方案二”建议根据其实际工作量给予增补。"
    for_one = "“设计方案一”占设计总工作量的比例达到25%"
    wrong = verify_part("“设计方案二”实际占总工作量多少", "25%", 1, for_one, [book(1, both)],
                        question="“设计方案二”实际占总工作量多少？")
    assert wrong.status != "verified", wrong.detail
    right = verify_part("“设计方案一”占总工作量多少", "25%", 1, for_one, [book(1, both)], question="“设计方案一”占总工作量多少？")
    assert right.status == "verified", right.detail
    contract = verify_part("《反担保合同》何时签订", "2016年3月11日", 1, "售价为50万元，2016年3月11日付清",
                           [book(1, "合同约定该房屋售价为50万元，2016年3月11日付清。")], question="《反担保合同》何时签订？")
    assert contract.status == "unverified" and "check.part_not_in_sources" in codes(contract.detail)


def test_the_answer_must_answer_not_repeat_or_copy() -> None:
    q = "取经成功后唐僧被如来封为什么佛？"
    text = "唐僧把唐太宗所赐的紫金钵盂送给阿傩，才换来有字真经。如来封唐僧为旃檀功德佛。"
    repeat = verify_part("被如来封为什么佛", "如来", 1, "如来封唐僧为旃檀功德佛", [book(1, text)], question=q)
    assert repeat.status == "unverified" and "check.answer_repeats_question" in codes(repeat.detail)
    # the question's characters joined otherwise name what it asks for: 被告 is not 原告, nor 算法分析 "算法的分析"
    court = "法院判决：本案诉讼费由被告承担。"
    other = verify_part("原告要求诉讼费由谁承担", "被告", 1, "诉讼费由被告承担", [book(1, court)], question="原告要求诉讼费由谁承担？")
    assert other.status == "verified", other.detail
    field = "分析特定算法属于算法分析领域，而研究问题本身的难度属于计算复杂性理论。"
    named = verify_part("特定算法的分析属于哪个领域", "算法分析", 1, "分析特定算法属于算法分析领域", [book(1, field)],
                        question="特定算法的分析属于哪个领域？")
    assert named.status == "verified", named.detail
    long_text = "他们一路上经历了许多磨难，" * 4 + text
    long_quote = verify_part("被如来封为什么佛", "旃檀功德佛", 1, long_text, [book(1, long_text)], question=q)
    assert long_quote.status == "unverified" and codes(long_quote.detail) == {"check.quote_too_long"}
    good = verify_part("被如来封为什么佛", "旃檀功德佛", 1, "如来封唐僧为旃檀功德佛", [book(1, text)], question=q)
    assert good.status == "verified"


def test_one_of_the_people_a_question_names_side_by_side_answers_who() -> None:
    text = "老周与小梅等人成立了护林队，并将小梅选为队长，老周负责巡山。"
    q = "老周与小梅等人成立的护林队的队长是谁？"
    picked = verify_part("护林队的队长是谁", "小梅", 1, "并将小梅选为队长", [book(1, text)], question=q)
    assert picked.status == "verified", picked.detail
    # one person named, or the question word among the joined: the answer is the question's own
    alone = verify_part("谁陪同老周巡山", "老周", 1, "老周负责巡山", [book(1, text)], question="谁陪同老周巡山？")
    assert "check.answer_repeats_question" in codes(alone.detail)
    joined = verify_part("谁和老周成立了护林队", "老周", 1, "老周与小梅等人成立了护林队", [book(1, text)],
                         question="谁和老周成立了护林队？")
    assert "check.answer_repeats_question" in codes(joined.detail)


def test_an_answer_that_copies_a_quote_of_figures_each_with_what_it_counts_verifies() -> None:
    text = "经审计，甲公司的非法经营数额共人民币4899324元，乙公司的非法经营数额共人民币121716元，均已退缴。"
    quote = "甲公司的非法经营数额共人民币4899324元，乙公司的非法经营数额共人民币121716元"
    figures = verify_part("两家公司的非法经营数额", quote, 1, quote, [book(1, text)], question="两家公司的非法经营数额各是多少？")
    assert figures.status == "verified", figures.detail
    # a sentence copied whole, a clause of it without a figure: it shows nothing of which words answer
    whole = "经审计甲公司的非法经营数额共人民币4899324元，均已退缴并由公司负责人当庭认罪悔罪"
    copied = verify_part("甲公司的非法经营数额", whole, 1, whole, [book(1, whole + "。")], question="甲公司的非法经营数额是多少？")
    assert "check.answer_repeats_quote" in codes(copied.detail), copied.detail


def test_a_copied_answer_with_a_changed_word_does_not_verify() -> None:
    q = "的卢马有什么不吉利？"
    text = "越曰：“此马眼下有泪槽，额边生白点，名为的卢，骑则妨主。张武为此马而亡。主公不可乘之。”"
    quote = "此马眼下有泪槽，额边生白点，名为的卢，骑则妨主。"
    good = verify_part("的卢马有什么不吉利", "眼下有泪槽，额边生白点，名为的卢，骑则妨主", 1, quote, [book(1, text)], question=q)
    assert good.status == "verified", good.detail
    forged = verify_part("的卢马有什么不吉利", "眼下有泪槽，额边生黑点，名为的卢，骑则妨主", 1, quote, [book(1, text)],
                         question=q)
    assert forged.status == "unverified"


def test_a_chapter_heading_is_text_for_where_questions() -> None:
    label = "第二十七回 尸魔三戏唐三藏 圣僧恨逐美猴王"
    q = "三打白骨精发生在原著第几回？"
    check = verify_part("三打白骨精发生在第几回", "第二十七回", 1, "第二十七回 尸魔三戏唐三藏",
                        [book(1, "那妖精一连三次变化，行者三次打杀。", label)], question=q)
    assert check.status == "verified" and check.span is None, check.detail


def test_a_judge_that_leaves_out_a_sub_question_has_not_covered_it() -> None:
    q = "孙悟空的筋斗云一个跟头能翻多远？1986年央视电视剧《西游记》里扮演孙悟空的演员是谁？"
    assert question_left_out(q, ["筋斗云一个跟头能翻多远"]) == ["1986年央视电视剧《西游记》里扮演孙悟空的演员是谁？"]
    assert question_left_out(q, ["筋斗云一个跟头能翻多远", "电视剧里扮演孙悟空的演员是谁"]) == []
    # a clause that only sets the scene is not a question of its own
    assert question_left_out("赵云在长坂坡杀出重围，这是第几回的情节？", ["这是第几回的情节"]) == []


# --------------------------------------------------------------------------- sentences
SOURCES = [book(1, WINE, "第五回 发矫诏诸镇应曹公 破关兵三英战吕布"), book(2, MOUNTAIN, "第七回 八卦炉中逃大圣 五行山下定心猿")]


def marks(answer: str) -> list[str]:
    return [s.status for s in check_answer(answer, SOURCES).sentences]


def test_a_citation_closing_a_paragraph_covers_its_sentences() -> None:
    answer = "关公让人把酒先斟下，说他去去就来，不久就提着华雄的头回来了。他出帐提刀，飞身上马[1]。"
    assert marks(answer) == ["not_checked", "supported"]  # the first in its own words
    # a paragraph of its own keeps no citation in reach
    assert marks("关公让人把酒先斟下，说他去去就来，不久就提着华雄的头回来了。\n\n他出帐提刀，飞身上马[1]。")[0] == "uncited"


def test_no_split_inside_quoted_speech_or_at_a_semicolon() -> None:
    text = "佛祖翻掌一扑，把猴王推出西天门外；将五指化作五座联山[2]。"
    assert len(split_sentences(text)) == 1 and marks(text) == ["supported"]
    speech = "关公说：“酒且斟下。某去便来。”然后出帐提刀[1]。"
    assert len(split_sentences(speech)) == 1 and marks(speech) == ["supported"]


def test_a_short_direct_answer_before_its_support_is_covered() -> None:
    for direct in ("没有喝酒。", "没有。"):
        got = marks(f"{direct}\n\n关公让人把酒先斟下，说去去就来，回来时其酒尚温[1]。")
        assert got[0] in ("no_claim", "not_checked") and got[1] == "not_checked", (direct, got)


def test_headings_and_list_items_follow_their_lead_in() -> None:
    answer = "**1. 酒的事**\n\n书中这样写[1]：\n- 关公让酒且斟下\n- 回来时其酒尚温"
    assert marks(answer) == ["no_claim", "no_claim", "not_checked", "not_checked"]


def test_seeded_errors_in_a_faithful_sentence_are_flagged() -> None:
    assert marks("云长提华雄之头，掷于地上，其酒尚温[1]。") == ["supported"]
    assert marks("张辽提华雄之头，掷于地上，其酒尚温[1]。") == ["unsupported"]  # a name the source lacks
    assert marks("那大圣在山下压了六百年[2]。") == ["unsupported"]  # a number changed
    assert marks("云长提华雄之头，掷于地上（见第九回）[1]。") == ["unsupported"]  # a chapter no source is from
    assert marks("云长提华雄之头，掷于地上[2]。") == ["unsupported"]  # the citation swapped


def test_the_trace_says_what_verified_means() -> None:
    from rag.checks import PartCheck
    from rag.schemas import Evaluation
    from rag.ui.render import evaluation_html

    part = PartCheck(part="他用什么打的", answer="柳条", source=1, quote="攀下柳条", status="verified",
                     detail=Msg.of("check.quote_verbatim"))
    ev = Evaluation(reason="r", enough=True, missing=[], web_query=None, confidence=0.9, mode="evidence",
                    model_enough=True, parts=[part])
    assert "不是对事实本身的担保" in evaluation_html(ev, 1, "zh")
    assert "not a guarantee of the fact itself" in evaluation_html(ev, 1, "en")


# --------------------------------------------------------------------------- numbers as capable models write them
# Measured on two sets of a capable model's answers (bench/fixtures/replies/capable.jsonl and
# capable-answers2.jsonl): correct sentences refused for how they counted, not for what they said.
GATE = "孔明乃披鹤氅，引二小童携琴一张，于城上敌楼前凭栏而坐。次日出城，见那马极骏。"
CAMP = "蜀兵伐吴，树栅连营，纵横七百余里，分四十余屯。张强、李达将他杀了，投吴去了。"
DEMONS = "太白金星报信说那岭上有三个魔头：老大是青毛狮子，老三是大鹏金翅雕。那怪本是天蓬元帅，被贬下界。"


def _status(sentence: str, *texts: str, labels: tuple[str, ...] = ()) -> str:
    sources = [book(i, t, labels[i - 1] if labels else "") for i, t in enumerate(texts, start=1)]
    return check_answer(sentence, sources).sentences[0].status


def test_a_small_number_is_read_with_its_thing_and_counting_word_or_without() -> None:
    assert _status("他带着两个小童，在城上敌楼前凭栏而坐[1]。", GATE) == "not_checked"  # 二小童
    assert _status("他带着三个小童，在城上敌楼前凭栏而坐[1]。", GATE) == "unsupported"
    assert _status("那岭上的三魔之中，老三是大鹏金翅雕[1]。", DEMONS) == "not_checked"  # 三个魔头
    assert _status("那岭上的四魔之中，老三是大鹏金翅雕[1]。", DEMONS) == "unsupported"


def test_an_ordinal_is_checked_as_an_ordinal_and_the_next_day_as_次日() -> None:
    assert _status("第二天他出城，看见那马极骏[1]。", GATE) == "not_checked"
    assert _status("第三天他出城，看见那马极骏[1]。", GATE) == "unsupported"
    assert _status("**那岭上的老三**：老三是大鹏金翅雕[1]。", DEMONS) == "supported"  # not "3老" across the colon
    assert _status("老二是大鹏金翅雕[1]。", DEMONS) == "unsupported"


def test_a_count_of_the_answers_own_items_or_list_is_not_a_fact_of_the_book() -> None:
    assert _status("以上两段都在第七回，都说次日出城见马[1][2]。", GATE, GATE, labels=("第七回", "第七回")) == "not_checked"
    assert _status("两处资料都说他树栅连营[1][2]。", CAMP, CAMP) == "not_checked"
    assert _status("是张强、李达二人杀了他[1]。", CAMP) == "not_checked"
    assert _status("是张强、李达三人杀了他[1]。", CAMP) == "unsupported"  # the list has two


def test_a_name_with_a_numeral_is_a_name_and_a_short_fact_is_checked_by_its_fact() -> None:
    # 八戒 is a name, not 8; that 天蓬元帅 is 猪八戒 the book says elsewhere (its other names, rag.aliases)
    sources = [book(1, DEMONS)]
    assert check_answer("猪八戒原是天蓬元帅，被贬下界[1]。", sources,
                        aliases={"猪八戒": ("天蓬元帅",)}).sentences[0].status == "not_checked"
    assert _status("猪八戒原是天蓬元帅，被贬下界[1]。", DEMONS) == "unsupported"  # without them, another person
    assert _status("约七百余里[1]。", CAMP) == "supported"
    assert _status("约八百余里[1]。", CAMP) == "unsupported"


def test_a_label_a_lead_in_and_a_note_on_what_the_sources_lack() -> None:
    # the label is the question's: the rest claims ...
    labelled = check_answer("**营寨连了多远，有什么不妥之处**：蜀兵树栅连营，纵横七百余里[1]。", [book(1, CAMP)],
                            question="刘备的营寨连了多远？有什么不妥之处？")
    assert labelled.sentences[0].status == "supported"
    # ... and a label that names what neither the question nor the source has is checked with it
    assert _status("**猕猴的营寨连了多远**：蜀兵树栅连营，纵横七百余里[1]。", CAMP) != "supported"
    assert _status("该段情节如下[1]：", CAMP) == "no_claim"
    assert _status("所给段落没有写到他拜师的经过[1]。", CAMP) == "no_claim"


def test_an_ordinal_may_be_written_without_第_in_the_source() -> None:
    vigil = "孔明在帐中祈禳已及六夜，见主灯明亮，心中甚喜。"
    assert _status("孔明祈禳到第六夜，见主灯明亮，心中甚喜[1]。", vigil) == "not_checked"
    assert _status("孔明祈禳到第七夜，见主灯明亮，心中甚喜[1]。", vigil) == "unsupported"


def test_a_part_naming_another_latin_name_than_the_chinese_question_is_not_its_part() -> None:
    text = "许多断层都可以产生强烈的地震。AGS已发布了本地区的地震预报，该预报模拟了这里发生的地震。"
    q = "GAS发布了什么？"
    check = verify_part("AGS发布了什么", "地震预报", 1, "AGS已发布了本地区的地震预报", [book(1, text)], question=q)
    assert check.status == "unverified" and codes(check.detail) == {"check.not_a_part"}
    # the question's own name, in any case, or the name the question cut short written out whole
    same = verify_part("AGS发布了什么", "地震预报", 1, "AGS已发布了本地区的地震预报", [book(1, text)],
                       question="ags发布了什么？")
    assert same.status == "verified"
    whole = verify_part("AGS发布了什么", "地震预报", 1, "AGS已发布了本地区的地震预报", [book(1, text)],
                        question="A虫发布了什么？")
    assert whole.status == "verified"
