"""``rag.repetition``: the loop check that stops a streamed reply, the length cap, and llama.cpp's
repetition penalties as request fields."""

from __future__ import annotations

import pytest
from conftest import make_settings

from rag.repetition import capped, repeated_tail, repetition_options


@pytest.mark.parametrize(("text", "kept"), [
    ("答：武松筛杯酒，武松筛杯酒，武松筛杯酒，", "答：武松筛杯酒，"),
    ("答：武松筛杯酒，武松筛杯酒，武松筛杯酒，武松筛", "答：武松筛杯酒，"),  # caught mid-clause too
    ("He said: I will go there. I will go there. I will go there.", "He said: I will go there."),
    ("好的。好的。好的。好的。好的。好的。", "好的。好的。"),  # a short clause: twice is a 6-character one
])
def test_a_clause_three_times_in_a_row_is_a_loop_cut_after_its_first_time(text, kept):
    end = repeated_tail(text)
    assert end is not None and text[:end] == kept


@pytest.mark.parametrize("text", [
    "答：武松筛杯酒，武松筛杯酒，",  # twice is not yet a loop
    "武松在景阳冈上打死了老虎，然后下山去了阳谷县，做了都头。",
    "-" * 40,  # a rule
    "| 回 | 事件 |\n| --- | --- | --- | --- |",  # a table's header line
    "1000000000000000000000000",  # a number
    "第一回[1]。第二回[2]。第三回[3]。",
    "",
])
def test_text_that_does_not_loop_is_left_alone(text):
    assert repeated_tail(text) is None


def test_the_length_cap_ends_at_a_sentence_when_one_is_near():
    text = "第一句话说完了。第二句话还没有说完就"
    assert capped(text, 12) == "第一句话说完了。"
    assert capped("一二三四五六七八九十", 4) == "一二三四"  # no sentence end: cut where it is
    assert capped("短。" + "长" * 30, 20) == "短。" + "长" * 18  # a sentence end too early is not used


def test_repetition_options_are_llama_cpp_fields_and_off_is_not_sent():
    options = repetition_options(make_settings())
    assert options == {"repeat_penalty": 1.05, "repeat_last_n": 64, "dry_multiplier": 0.8, "dry_base": 1.75,
                       "dry_allowed_length": 3, "dry_penalty_last_n": 256}
    assert repetition_options(make_settings(llm_repeat_penalty=1.0, llm_dry_multiplier=0)) == {}
