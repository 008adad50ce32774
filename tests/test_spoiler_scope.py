"""Chapter scope, the spoiler limit and query rewriting through the graph: what run_turn passes in,
what retrieve_local searches, what the judge, the writer and the web are told (scripted model, fake
retriever and web search; a real book index where the index's own behaviour matters)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ev, make_settings, responder
from fixtures_index.books import guide_chapters, make_epub
from fixtures_index.embedders import HashEmbedder
from index_fakes import BigramEmbedder, MemoryVectors, write_book

from rag.agent.deps import Deps
from rag.agent.events import NodeFinished, TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.agent.rewrite import QueryRewriter, parse_queries
from rag.index import BookIndex, IndexConfig, open_index
from rag.schemas import Passage, SearchResult
from rag.scope import Scope, limit_chapters, parse_chapter_range
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel

PASSAGES = [Passage(id=f"p{n}", text=f"第{n}回的段落，孙悟空在这里做了第{n}件事。", book_id="b1", book_title="西游记",
                    chapter_num=n, chapter_title=f"第{n}回", score=1.0 - n / 100, source="hybrid") for n in range(1, 11)]
WEB = [SearchResult(title="西游记结局", url="https://example.org/end", snippet="取经成功，师徒成佛。", provider="fake")]


class IgnoresScope(FakeRetriever):
    """A retriever that returns every passage whatever the chapters asked for (a buggy index)."""

    def retrieve(self, query, k=None, book_id=None, chapters=None):
        self.calls.append({"query": query, "chapters": chapters})
        return self.passages[: k or len(self.passages)]


def turn(graph, question="孙悟空后来怎样了？", **scope):
    events = list(run_turn(graph, question, thread_id=str(uuid.uuid4()), book_id="b1", scope=Scope(**scope)))
    assert isinstance(events[-1], TurnFinished), events[-1]
    return events, events[-1].values


def nodes(events):
    return [e.node for e in events if isinstance(e, NodeFinished)]


def judge_prompts(model):
    return ["\n".join(str(m.content) for m in messages) for schema, messages in model.calls
            if schema in ("Evaluation", "EvidenceJudgement")]


def test_scope_helpers() -> None:
    assert parse_chapter_range("27") == (27, 27) and parse_chapter_range("3-7") == (3, 7)
    assert parse_chapter_range(" 3..7 ") == (3, 7)
    for bad in ("7-3", "a-b", "", "3-"):
        with pytest.raises(ValueError):
            parse_chapter_range(bad)
    assert limit_chapters(None, None) is None and limit_chapters((3, 9), None) == (3, 9)
    assert limit_chapters(None, 5) == (0, 5) and limit_chapters((3, 9), 5) == (3, 5)
    assert limit_chapters((8, 9), 5) == (8, 5)  # empty: reported by the caller


def test_run_turn_passes_scope_and_limit_every_time() -> None:
    retriever = FakeRetriever(PASSAGES)
    graph = build_graph(Deps(settings=make_settings(), llm=None, retriever=retriever))
    _, values = turn(graph, chapters=(2, 4))
    assert tuple(values["chapters"]) == (2, 4) and values["read_up_to"] is None and values["allow_web_spoilers"] is False
    assert retriever.calls[-1]["chapters"] == (2, 4)
    assert {p.chapter_num for p in values["passages"]} == {2, 3, 4}
    # the next question of the same thread without a scope searches everything again
    thread = str(uuid.uuid4())
    list(run_turn(graph, "一", thread_id=thread, scope=Scope(chapters=(2, 4), read_up_to=3)))
    *_, last = run_turn(graph, "二", thread_id=thread)
    assert last.values["chapters"] is None and last.values["read_up_to"] is None
    assert retriever.calls[-1]["chapters"] is None


def test_spoiler_limit_in_the_graph_judge_and_answer_are_told_and_the_web_is_off() -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["结局"], web_query="西游记 结局")],
                                                  answer="到第五回为止 [1]"))
    retriever, web = IgnoresScope(PASSAGES), FakeWebSearch(WEB)
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=retriever, web_search=web))
    events, values = turn(graph, read_up_to=5)
    assert retriever.calls[-1]["chapters"] == (0, 5)
    assert values["passages"] and max(p.chapter_num for p in values["passages"]) == 5  # later ones dropped
    assert "web_search" not in nodes(events) and web.queries == []
    messages = [str(n["msg"]) for n in values["notices"]]
    assert any("spoiler limit: only chapters up to 5" in m for m in messages)
    assert any("web search is off while the spoiler limit is on" in m for m in messages)
    assert "READING LIMIT: the reader has read up to chapter 5" in judge_prompts(model)[0]
    assert "No further search is possible" in judge_prompts(model)[0]
    generate = "\n".join(str(m.content) for m in model.calls[-1][1])
    assert "READING LIMIT" in generate and "第6回" not in generate


def test_web_allowed_despite_the_limit_is_marked_as_possible_spoilers() -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["结局"], web_query="西游记 结局"), ev(True)],
                                                  answer="答案 [1]"))
    web = FakeWebSearch(WEB)
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=FakeRetriever(PASSAGES), web_search=web))
    events, values = turn(graph, read_up_to=5, allow_web_spoilers=True)
    assert "web_search" in nodes(events) and web.queries == ["西游记 结局"]
    assert any("possible spoilers" in note for note in map(str, values["web_rounds"][0]["notes"]))
    assert "WEB SPOILER WARNING" in values["web_context"]
    assert "WEB SPOILER WARNING" in judge_prompts(model)[-1]
    assert not any("web search is off" in str(n["msg"]) for n in values["notices"])


def test_a_chapter_range_wholly_after_the_limit_searches_nothing() -> None:
    retriever = FakeRetriever(PASSAGES)
    graph = build_graph(Deps(settings=make_settings(), llm=None, retriever=retriever))
    _, values = turn(graph, chapters=(8, 9), read_up_to=5)
    assert values["passages"] == [] and retriever.calls == []
    assert any("after the spoiler limit" in str(n["msg"]) for n in values["notices"])


def test_rewritten_queries_are_searched_with_the_question(tmp_path: Path) -> None:
    assert parse_queries("1. 如来 压 五行山\n- 关键词：五行山 如来\n\n问题", "问题") == ["如来 压 五行山", "五行山 如来"]
    base = responder(evaluations=[ev(True)], answer="答案 [1]")

    def reply(messages, *, schema):
        if "You write search queries" in str(messages[0].content):
            assert "西游记导读选段" in str(messages[0].content) and "Chinese" in str(messages[0].content)
            return "What is the name of the monkey's teacher?\n斜月三星洞 须菩提祖师 拜师"
        return base(messages, schema=schema)

    model = ScriptedChatModel(responder=reply)
    index = open_index(make_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder())
    info = index.ingest(make_epub(tmp_path / "guide.epub", guide_chapters(1, 10)), background=False)
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=index, rewriter=QueryRewriter(model)))
    events = list(run_turn(graph, "Who taught Sun Wukong?", thread_id="t", book_id=info.id))
    values = events[-1].values
    notes = [str(n["msg"]) for n in values["notices"] if n["node"] == "retrieve_local"]
    assert any(m.startswith("searched also for: What is the name") and "斜月三星洞 须菩提祖师 拜师" in m for m in notes)
    assert 1 in {p.chapter_num for p in values["passages"]}  # found through the keywords the model wrote
    # the English question alone, without its Chinese terms (rag.crosslingual), finds no keyword there
    index.config = replace(index.config, crosslingual=False)
    alone = index.retrieve("Who taught Sun Wukong?", k=6, book_id=info.id, mode="keyword")
    assert 1 not in {p.chapter_num for p in alone}
    index.close()


def test_a_failed_rewrite_searches_the_question_alone() -> None:
    base = responder(evaluations=[ev(True)], answer="答案 [1]")

    def reply(messages, *, schema):
        if "You write search queries" in str(messages[0].content):
            raise TimeoutError("the model is slow today")
        return base(messages, schema=schema)

    model = ScriptedChatModel(responder=reply)
    retriever = FakeRetriever(PASSAGES)
    graph = build_graph(Deps(settings=make_settings(), llm=model, retriever=retriever, rewriter=QueryRewriter(model)))
    _, values = turn(graph)
    assert values["passages"] and retriever.queries[-1] == "孙悟空后来怎样了？"
    assert any("could not rewrite the question" in str(n["msg"]) and n["level"] == "warning" for n in values["notices"])


def test_make_deps_builds_the_rewriter_only_with_a_model_and_the_setting() -> None:
    from rag.agent.wiring import make_deps

    model = ScriptedChatModel(replies=[])
    assert isinstance(make_deps(make_settings(), llm=model).rewriter, QueryRewriter)
    assert make_deps(make_settings(query_rewrite=False), llm=model).rewriter is None


def test_broken_vector_store_falls_back_to_keywords_with_a_notice(tmp_path: Path) -> None:
    vectors = MemoryVectors()
    index = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=vectors)
    info = index.ingest(write_book(tmp_path / "book.txt", chapters=3), background=False)
    vectors.broken = True  # as a corrupt or unreadable Chroma store
    graph = build_graph(Deps(settings=make_settings(), llm=None, retriever=index))
    events = list(run_turn(graph, "白虎第3日到了北原", thread_id="t", book_id=info.id))
    values = events[-1].values
    assert values["passages"] and values["passages"][0].chapter_num == 2
    assert any(n["node"] == "retrieval_only" or n["node"] == "retrieve_local" for n in values["notices"])
    assert any("vector search failed" in str(n["msg"]) and "keyword results only" in str(n["msg"])
               and n["level"] == "warning" for n in values["notices"])
    index.close()


# -------------------------------------------------------------------- the limit on a real index
@pytest.fixture(scope="module")
def guide_index(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guide")
    index = open_index(make_settings(data_dir=tmp / "data"), embedder=HashEmbedder(), config=IndexConfig())
    info = index.ingest(make_epub(tmp / "guide.epub", guide_chapters(1, 10)), background=False)
    yield index, info
    index.close()


GUIDE_QUESTIONS = ["孙悟空被压在哪座山下？", "三打白骨精发生在哪一回？", "火焰山的芭蕉扇是谁的？", "唐僧师徒最后成了什么？",
                   "猪八戒原来是天上的什么神仙？", "第九回讲了什么？", "Where is Sun Wukong imprisoned?"]


@pytest.mark.parametrize("limit", [1, 3, 5, 8])
def test_no_passage_beyond_the_limit_on_the_sample_guide(guide_index, limit: int) -> None:
    index, info = guide_index
    graph = build_graph(Deps(settings=make_settings(retrieval_k=8), llm=None, retriever=index))
    for question in GUIDE_QUESTIONS:
        for mode in ("hybrid", "keyword", "vector"):
            found = index.search(question, k=10, book_id=info.id, mode=mode, chapters=limit_chapters(None, limit))
            assert all(p.chapter_num is not None and p.chapter_num <= limit for p in found.passages), (question, mode)
        *_, last = run_turn(graph, question, thread_id=str(uuid.uuid4()), book_id=info.id,
                               scope=Scope(read_up_to=limit))
        assert last.values["passages"], question
        assert max(p.chapter_num for p in last.values["passages"]) <= limit
    unlimited = index.search("唐僧师徒最后成了什么？", k=10, book_id=info.id)
    assert max(p.chapter_num for p in unlimited.passages) > limit  # the limit is what kept them out
