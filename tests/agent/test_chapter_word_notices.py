"""The notices that name a chapter of the book (the spoiler limit, a range wholly after it, web
results past it) say it in the book's own word: 第 5 章 for a book headed 第一章…, 第 5 回 for one
headed 第一回…, "parts up to 5" for an English book of Parts, and the neutral word when the book's
headings are not numbered or several books are searched. Fake retriever (the book's word is read off
its passages' chapter titles, as the index reads it off its own), then the real index."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import ev, make_settings, responder
from fixtures_index.books import chinese_numeral
from index_fakes import BigramEmbedder, MemoryVectors, chapter_text

from rag.agent.deps import Deps
from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph, make_checkpointer
from rag.i18n import Msg, PerLang, text
from rag.index import BookIndex
from rag.schemas import Passage, SearchResult
from rag.scope import Scope
from rag.testing.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel


def passages(title) -> list[Passage]:
    """Ten passages of book b1, one per chapter, its chapter titled ``title(n)``."""
    return [Passage(id=f"p{n}", text=f"第{n}段：孙悟空在这里做了第{n}件事。", book_id="b1", book_title="某书",
                    chapter_num=n, chapter_title=title(n), score=1.0 - n / 100, source="hybrid")
            for n in range(1, 11)]


ZHANG = passages(lambda n: f"第{chinese_numeral(n)}章 风起")
HUI = passages(lambda n: f"第{chinese_numeral(n)}回 石猴出世")
JIE = passages(lambda n: f"第{chinese_numeral(n)}节")
PART = passages(lambda n: f"Part {n} The Road")
PLAIN = passages(lambda n: f"故事{chinese_numeral(n)}")  # titled, not numbered


def turn(retriever, book_id: str | None = "b1", llm=None, web=None, **scope) -> dict:
    graph = build_graph(Deps(settings=make_settings(), llm=llm, retriever=retriever, web_search=web))
    events = list(run_turn(graph, "孙悟空后来怎样了？", thread_id=str(uuid.uuid4()), book_id=book_id,
                           scope=Scope(**scope)))
    assert isinstance(events[-1], TurnFinished), events[-1]
    return events[-1].values


def notice(values: dict, code: str):
    found = [n["msg"] for n in values["notices"] if n["msg"].code == code]
    assert len(found) == 1, [n["msg"].code for n in values["notices"]]
    return found[0]


@pytest.mark.parametrize(("book", "zh", "en"), [
    (ZHANG, "防剧透：只检索第 5 章及以前的内容", "spoiler limit: only chapters up to 5 are searched"),
    (HUI, "防剧透：只检索第 5 回及以前的内容", "spoiler limit: only chapters up to 5 are searched"),
    (JIE, "防剧透：只检索第 5 节及以前的内容", "spoiler limit: only chapters up to 5 are searched"),
    (PART, "防剧透：只检索第 5 章及以前的内容", "spoiler limit: only parts up to 5 are searched"),
    (PLAIN, "防剧透：只检索第 5 章及以前的内容", "spoiler limit: only chapters up to 5 are searched"),
])
def test_the_spoiler_limit_is_said_in_the_books_word(book, zh, en) -> None:
    msg = notice(turn(FakeRetriever(book, titles={"b1": "某书"}), read_up_to=5), "agent.spoiler_limit")
    assert (text("zh", msg), text("en", msg)) == (zh, en)


def test_without_one_book_the_limit_is_said_in_the_neutral_word() -> None:
    msg = notice(turn(FakeRetriever(HUI, titles={"b1": "某书"}), book_id=None, read_up_to=5), "agent.spoiler_limit")
    assert text("zh", msg) == "防剧透：只检索第 5 章及以前的内容"


def test_a_range_wholly_after_the_limit_is_said_in_the_books_word() -> None:
    values = turn(FakeRetriever(ZHANG, titles={"b1": "某书"}), chapters=(8, 9), read_up_to=5)
    msg = notice(values, "agent.after_limit")
    assert text("zh", msg) == "没有可检索的内容：所问的章节都在防剧透上限（第 5 章）之后"
    values = turn(FakeRetriever(PART, titles={"b1": "某书"}), chapters=(8, 9), read_up_to=5)
    assert text("en", notice(values, "agent.after_limit")) == \
        "nothing to search: the parts asked for all come after the spoiler limit (part 5)"


def test_web_results_past_the_limit_are_said_in_the_books_word() -> None:
    model = ScriptedChatModel(responder=responder(evaluations=[ev(False, ["结局"], web_query="结局"), ev(True)],
                                                  answer="答案 [1]"))
    web = FakeWebSearch([SearchResult(title="结局", url="https://example.org/end", snippet="结局。", provider="fake")])
    values = turn(FakeRetriever(JIE, titles={"b1": "某书"}), llm=model, web=web, read_up_to=5,
                  allow_web_spoilers=True)
    [spoilers] = [n for n in values["web_rounds"][0]["notes"] if n.code == "search.spoilers"]
    assert text("zh", spoilers) == "可能剧透：网络结果可能涉及第 5 节以后的内容"
    assert text("en", spoilers) == "possible spoilers: web results may go beyond chapter 5"


def test_the_real_index_tells_the_graph_its_books_word(tmp_path: Path) -> None:
    names = ["青龙", "白虎", "朱雀", "玄武", "麒麟", "凤凰"]
    book = tmp_path / "zhang.txt"
    book.write_text("\n\n".join(["《六章记》"] + [f"第{chinese_numeral(n)}章 {name}出行\n{chapter_text(n, name)}"
                                                for n, name in enumerate(names, start=1)]), encoding="utf-8")
    index = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors())
    info = index.ingest(book, background=False)
    values = turn(index, book_id=info.id, read_up_to=3)
    msg = notice(values, "agent.spoiler_limit")
    assert msg.params["unit"] == PerLang(zh="章", en="")  # the book's own word, not the default that reads alike
    assert text("zh", msg) == "防剧透：只检索第 3 章及以前的内容"
    assert values["passages"] and {p.chapter_num for p in values["passages"]} <= {1, 2, 3}
    index.close()


def test_the_books_word_survives_the_checkpointer() -> None:
    msg = Msg.of("agent.spoiler_limit", chapter=5, unit=PerLang(zh="节", en="part"))
    serde = make_checkpointer().serde
    again = serde.loads_typed(serde.dumps_typed(msg))
    assert again == msg and text("zh", again) == "防剧透：只检索第 5 节及以前的内容"
