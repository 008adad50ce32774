"""Quotes a small model cannot get wrong: under json_schema the judge's quote is an enum of the
sources' own spans (or sentence ids), sent per call over real HTTP, and checked as usual."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from conftest import make_settings

from rag.agent.context import format_book_context, numbered_sentences
from rag.agent.judge import NOT_FOUND_CHOICE, JudgeConfig, JudgeRequest, constrained_schema, judge, sources_of
from rag.checks import MIN_QUOTE_WEIGHT, content_weight, match_quote, normalize
from rag.checks.choices import (
    CLAUSE_RUN_WEIGHT,
    HOSTED_MAX_CHOICE_CHARS,
    HOSTED_MAX_CHOICES,
    MAX_CHOICE_CHARS,
    MAX_CHOICES,
    quote_choices,
    sentence_spans,
)
from rag.checks.quotes import MAX_QUOTE_WEIGHT, Source
from rag.checks.sentences import split_sentences
from rag.llm import MethodCache, make_chat_model
from rag.schemas import Passage, SearchResult
from rag.testing.openai_stub import OpenAIStub, request_kind

# Text the project owns: a retelling in the style of the novel, with one very long sentence of speech.
LONG = ("祖师道：“凡诸仙腾云，皆跌足而起，你却不是这般，我才见你去，连扯方才跳上，我今只就你这个势，"
        "传你个筋斗云罢，这朵云捻着诀，念动真言，攒紧了拳，对身一抖，跳将起来，一筋斗就有十万八千里路哩，"
        "大众听说，一个个嘻嘻笑道，悟空造化，若会这个法儿，与人家当铺兵，送文书，递报单，不管那里都寻了饭吃。”")
PASSAGES = [
    Passage(id="a", text="须菩提祖师半夜传授悟空长生之道。" + LONG + "悟空即运神炼法，会了筋斗云。",
            chapter_title="第二回 悟彻菩提真妙理", book_title="导读"),
    Passage(id="b", text="悟空大闹天宫，被如来佛祖压在五行山下。五百年后才被唐僧救出。", chapter_title="第七回 五行山"),
]
WEB = [SearchResult(title="TV guide", url="https://tv.example.net/x", snippet="The 1986 series shows it in episode 9.")]
QUESTION = "谁传授悟空筋斗云？一个筋斗能翻多远？"


def _weight(text: str) -> float:
    return content_weight(normalize(text).text)


# --------------------------------------------------------------------------- the spans
def test_every_choice_is_a_verbatim_span_the_quote_checks_accept() -> None:
    sources = sources_of(PASSAGES, WEB)
    choices = quote_choices(sources)
    assert choices and len(choices) == len(set(choices))
    for choice in choices:
        assert any(match_quote(choice, s.norm) and match_quote(choice, s.norm).exact  # type: ignore[union-attr]
                   or match_quote(choice, s.label_norm) for s in sources), choice
        assert content_weight(normalize(choice, numerals=False).text) >= MIN_QUOTE_WEIGHT
        assert _weight(choice) <= MAX_QUOTE_WEIGHT
    # the headings and the web page's title and text are there too, in the sources' order
    assert choices[0] == "第二回 悟彻菩提真妙理" and "一筋斗就有十万八千里路哩，" in choices
    assert "The 1986 series shows it in episode 9." in choices
    assert choices.index("须菩提祖师半夜传授悟空长生之道。") < choices.index("第七回 五行山") < \
        choices.index("五百年后才被唐僧救出。")


def test_a_span_starts_at_every_clause_so_the_answers_words_can_open_a_quote() -> None:
    assert _weight(LONG) > MAX_QUOTE_WEIGHT
    spans = sentence_spans(LONG)
    assert "一筋斗就有十万八千里路哩，" in spans  # the clause that states it, on its own
    starts = {LONG.find(s) for s in spans}
    assert {0} | {i + 1 for i, ch in enumerate(LONG[:-1]) if ch in "，："} <= starts  # every clause opens one
    assert all(s in LONG and _weight(s) <= MAX_QUOTE_WEIGHT for s in spans)
    # a short sentence stays whole (and its clauses come too); one too short to verify is no choice at all
    assert sentence_spans("悟空即运神炼法，会了筋斗云。")[0] == "悟空即运神炼法，会了筋斗云。"
    assert sentence_spans("好！") == []


def test_a_span_of_speech_is_offered_with_and_without_its_quotation_marks() -> None:
    spans = sentence_spans(LONG)
    assert "“凡诸仙腾云，" in spans and "凡诸仙腾云，" in spans
    assert "不管那里都寻了饭吃。”" in spans and "不管那里都寻了饭吃。" in spans


def test_the_coarsest_level_packs_a_long_sentence_into_contiguous_runs() -> None:
    spans = sentence_spans(LONG, 0)
    assert len(spans) >= 3 and "".join(spans) == LONG
    assert all(_weight(s) <= CLAUSE_RUN_WEIGHT for s in spans)


def _sentences(n: int, count: int) -> str:
    return "".join(f"卷{n}第{k}句说的是，第{n}个故事的第{k}件事情，与前后都不同。" for k in range(count))


def test_too_many_spans_take_a_coarser_level_then_keep_the_first_sources() -> None:
    few = [Source(n, _sentences(n, 5), "book", f"卷{n}") for n in range(1, 3)]
    fine = quote_choices(few)
    assert "第1个故事的第3件事情，与前后都不同。" in fine  # the finest level: any run of clauses
    many = [Source(n, _sentences(n, 40), "book", f"卷{n}") for n in range(1, 11)]
    coarse = quote_choices(many)
    assert len(coarse) <= MAX_CHOICES and sum(map(len, coarse)) <= MAX_CHOICE_CHARS
    assert "第1个故事的第3件事情，与前后都不同。" not in coarse  # a coarser level for all sources
    hosted = quote_choices(many, max_choices=HOSTED_MAX_CHOICES, max_chars=HOSTED_MAX_CHOICE_CHARS)
    assert len(hosted) <= HOSTED_MAX_CHOICES
    assert {many[0].text[a:b] for a, b in split_sentences(many[0].text)} <= set(hosted)  # whole sentences
    assert len(quote_choices(many, max_chars=100)) < 10


# --------------------------------------------------------------------------- the schema
def test_the_schema_admits_only_source_spans_and_source_numbers() -> None:
    sources = sources_of(PASSAGES, WEB)
    schema = constrained_schema(sources)
    part = schema["$defs"]["ClaimedPart"]["properties"]
    assert part["quote"]["enum"] == [*quote_choices(sources), NOT_FOUND_CHOICE]
    good = {"reason": "r", "enough": True, "web_query": None, "confidence": 0.9,
            "parts": [{"part": "多远", "answer": "十万八千里", "source": 1,
                       "quote": next(c for c in part["quote"]["enum"] if "十万八千里" in c)}]}
    jsonschema.validate(good, schema)
    for bad_part in ({"quote": "一个筋斗能翻十万九千里"}, {"source": 4}, {"source": 0}):
        bad = json.loads(json.dumps(good))
        bad["parts"][0].update(bad_part)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    not_found = json.loads(json.dumps(good))
    not_found["parts"][0].update({"quote": "not found", "source": None, "answer": "not found"})
    jsonschema.validate(not_found, schema)


def test_sentence_ids_are_constrained_to_the_ids_that_exist() -> None:
    sources = sources_of(PASSAGES)
    ids = numbered_sentences(sources)
    schema = constrained_schema(sources, ids)
    enum = schema["$defs"]["ClaimedPart"]["properties"]["quote"]["enum"]
    assert set(ids) <= set(enum) and "1.1, 1.2" in enum and NOT_FOUND_CHOICE in enum
    last_of_1 = max((k for k in ids if k.startswith("1.")), key=lambda k: int(k.split(".")[1]))
    assert f"{last_of_1}, 2.1" not in enum  # a pair never spans two sources
    assert "9.9" not in enum


# --------------------------------------------------------------------------- over HTTP
def _judge_through(stub: OpenAIStub, method: str, methods: MethodCache | None = None, **kwargs: Any):
    settings = make_settings(llm_base_url=stub.base_url, llm_api_key="k", llm_model="stub-model",
                             llm_structured_method=method, llm_max_retries=0)
    llm = make_chat_model(settings)
    assert llm is not None
    return judge(llm, JudgeRequest(QUESTION, PASSAGES, context=format_book_context(PASSAGES)),
                 JudgeConfig(method=method, **kwargs), methods=methods)


def _reply_from_enum(body: dict[str, Any]) -> dict[str, Any]:
    """What a grammar-constrained model can write: quotes picked from the schema's own enum."""
    enum = body["response_format"]["json_schema"]["schema"]["$defs"]["ClaimedPart"]["properties"]["quote"]["enum"]
    return {"reason": "both parts are stated", "enough": True, "web_query": None, "confidence": 0.9, "parts": [
        {"part": "谁传授悟空筋斗云", "answer": "祖师", "source": 1, "quote": next(c for c in enum if "筋斗云罢" in c)},
        {"part": "一个筋斗能翻多远", "answer": "十万八千里", "source": 1,
         "quote": next(c for c in enum if "十万八千里" in c)}]}


def test_json_schema_sends_the_enum_per_call_and_the_chosen_quotes_verify() -> None:
    with OpenAIStub(_reply_from_enum) as stub:
        judged = _judge_through(stub, "json_schema")
    sent = stub.requests[0]["response_format"]["json_schema"]
    assert sent["name"] == "EvidenceJudgement"
    assert sent["schema"]["$defs"]["ClaimedPart"]["properties"]["quote"]["enum"][:-1] == \
        quote_choices(sources_of(PASSAGES))
    assert judged.evaluation.enough
    assert [p.status for p in judged.evaluation.parts] == ["verified", "verified"]
    # the prompt is the same as without the constraint
    with OpenAIStub(_reply_from_enum) as stub2:
        _judge_through(stub2, "json_schema", constrain=False)
    assert stub2.requests[0]["messages"] == stub.requests[0]["messages"]
    assert "enum" not in json.dumps(stub2.requests[0]["response_format"]["json_schema"]["schema"]["$defs"])


def test_other_methods_leave_the_quote_free() -> None:
    reply = {"reason": "r", "enough": False, "web_query": None, "confidence": 0.5,
             "parts": [{"part": "多远", "answer": "not found", "source": None, "quote": "not found"}]}
    with OpenAIStub(lambda body: reply) as stub:
        _judge_through(stub, "function_calling")
        _judge_through(stub, "json_mode")
    assert request_kind(stub.requests[0]) == "EvidenceJudgement" and "tools" in stub.requests[0]
    assert "enum" not in json.dumps(stub.requests[0]["tools"][0]["function"]["parameters"])
    assert stub.requests[1]["response_format"] == {"type": "json_object"}


def test_auto_on_a_server_that_refuses_json_schema_falls_back_to_tools_once() -> None:
    def respond(body: dict[str, Any]) -> Any:
        if body.get("response_format", {}).get("type") == "json_schema":
            return (400, "response_format json_schema is not supported by this server")
        return {"reason": "r", "enough": False, "web_query": None, "confidence": 0.5,
                "parts": [{"part": "多远", "answer": "not found", "source": None, "quote": "not found"}]}

    methods = MethodCache()  # what the endpoint's refusal taught, kept for the next call
    with OpenAIStub(respond) as stub:
        first = _judge_through(stub, "auto", methods)
        second = _judge_through(stub, "auto", methods)
    assert not first.errors and not second.errors  # the refusal cost no error and no retry prompt
    shapes = ["json_schema" if r.get("response_format") else ("tools" if r.get("tools") else "text")
              for r in stub.requests]
    assert shapes == ["json_schema", "tools", "tools"]
