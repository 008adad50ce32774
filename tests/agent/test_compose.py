"""The small turn's answer as code writes it (``rag.agent.compose.small_answer``): what the model
picked but code did not confirm is shown as the book's sentence, under the line that says it was
found but not confirmed, never as an answer."""

from __future__ import annotations

from rag.agent.compose import WhyNoWeb, picked_sentence, small_answer
from rag.checks import PartCheck
from rag.checks.select import Chosen
from rag.schemas import Evaluation

CHOSEN = [
    Chosen("1.1", 1, "武松来到景阳冈下的酒店，店家不肯多卖。", 2.0),
    Chosen("1.2", 1, "前后共吃了十五碗，提了哨棒便走。", 0.0),  # shown as the sentence after one that scored
    Chosen("2.1", 2, "鲁智深把那株绿杨树连根拔起。", 1.0),
]


def _not_enough(part: PartCheck) -> Evaluation:
    return Evaluation(reason="r", enough=False, missing=[part.part], web_query=None, mode="evidence", parts=[part])


def test_the_sentence_of_a_pick_code_did_not_confirm_is_shown_as_found_not_answered() -> None:
    part = PartCheck(part="武松喝了几碗酒？", answer="十五碗", source=1, quote="前后共吃了十五碗", status="unverified",
                     matched_source=1, span=(0, 8))
    composed = small_answer("zh", _not_enough(part), CHOSEN, question="武松喝了几碗酒？", why=WhyNoWeb(web_off=True))
    assert composed.unchecked_from is not None
    found = composed.text[composed.unchecked_from:]
    # the picked sentence scored nothing on the question's words and is shown all the same, in the book's order
    assert "前后共吃了十五碗" in found and found.index("景阳冈") < found.index("十五碗") < found.index("绿杨树")
    answer = composed.text[composed.answer_from:composed.unchecked_from]
    assert "十五碗" not in answer  # not as an answer


def test_a_pick_whose_quote_is_not_in_the_sentences_shown_adds_nothing() -> None:
    heading = PartCheck(part="武松喝了几碗酒？", answer="第二十三回", source=1, quote="第二十三回", status="unverified",
                        matched_source=1, span=(0, 5))
    invented = PartCheck(part="武松喝了几碗酒？", answer="三碗", source=1, quote="武松喝了三碗", status="not_found")
    assert picked_sentence(heading, CHOSEN) is None and picked_sentence(invented, CHOSEN) is None
    composed = small_answer("zh", _not_enough(invented), CHOSEN, question="武松喝了几碗酒？", why=WhyNoWeb(web_off=True))
    assert composed.unchecked_from is not None and "十五碗" not in composed.text[composed.unchecked_from:]
    assert "三碗" not in composed.text
