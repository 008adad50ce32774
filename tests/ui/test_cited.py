"""A passage and a web result as the script API cites them ([n]), and a trace entry: the JSON comes
from the records themselves (``Passage.cited``, ``SearchResult.cited``, ``shown_json``), and the types
the API page shows are read from the records' own fields, so a record has one definition."""

from __future__ import annotations

from typing import get_type_hints

from pydantic import TypeAdapter

from rag.schemas import Passage, SearchResult, shown_json
from rag.ui.api import PassageJson, TraceJson, WebSourceJson
from rag.ui.translate import TRACE_JSON, TraceEntry

PASSAGE = Passage(id="b-1", text="白骨夫人", book_id="b", book_title="西游记", chapter_num=27,
                  chapter_title="第二十七回 尸魔三戏唐三藏", chunk_index=4, start=10, end=20, score=0.5, source="hybrid")
RESULT = SearchResult(title="T", url="https://example.org/a", snippet="s", site_name="example.org", date="2024",
                      provider="fake")


def test_a_passage_is_cited_with_its_number_label_and_retriever() -> None:
    assert PASSAGE.cited(2) == {"n": 2, "label": "第二十七回 尸魔三戏唐三藏", "book_id": "b", "book_title": "西游记",
                                "chapter": 27, "text": "白骨夫人", "retriever": "hybrid", "score": 0.5}
    assert Passage(id="x", text="t", chapter_num=3).cited(1)["label"] == "Chapter 3"


def test_a_web_result_is_cited_with_its_number_and_site() -> None:
    assert RESULT.cited(5) == {"n": 5, "title": "T", "url": "https://example.org/a", "snippet": "s",
                               "site": "example.org", "date": "2024"}


def test_the_api_types_are_the_records_fields_in_the_jsons_order() -> None:
    hints = get_type_hints(PassageJson)
    assert list(hints) == list(PASSAGE.cited(1))
    assert hints["chapter"] == Passage.model_fields["chapter_num"].annotation
    assert hints["retriever"] == Passage.model_fields["source"].annotation and hints["label"] is str
    assert list(get_type_hints(WebSourceJson)) == list(RESULT.cited(1))
    assert get_type_hints(WebSourceJson)["site"] == SearchResult.model_fields["site_name"].annotation
    TypeAdapter(PassageJson).validate_python(PASSAGE.cited(1))
    TypeAdapter(WebSourceJson).validate_python(RESULT.cited(1))


def test_a_trace_entry_is_shown_by_its_own_fields() -> None:
    entry = TraceEntry(node="evaluate", status="done", duration_s=1.5, answer_mode="book")
    assert shown_json(entry, TRACE_JSON) == {"node": "evaluate", "status": "done", "duration_s": 1.5}
    hints = get_type_hints(TraceJson)
    assert list(hints) == ["node", "status", "duration_s"] and hints["status"] == get_type_hints(TraceEntry)["status"]
