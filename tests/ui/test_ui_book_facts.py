"""The page talks about the active book in the book's own terms: the labels that count chapters use
the word its headings use (回, 章, Chapter...), the example question is made from its title and a
chapter title (the sample guide keeps the page's own), and the upload's "vectors are computed in the
background" line changes once they are. Pure functions first, then the pages' handlers on the real
index (hash embedder)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index
from fixtures_ui.pages import make_pages, new_session, value

from rag.agent.deps import Deps
from rag.i18n import t
from rag.ui.bookfacts import SAMPLE_SOURCE, facts_of, heading_words, pick_event

HUI = ["第一回 山前遇雨 石猴初出洞", "第二回 渡口问路 石猴夜过江", "第三回 老渔赠网 石猴学捕鱼",
       "第四回 雪夜投宿 石猴识古碑", "第五回 古碑藏字 石猴拜先生"]


def test_the_example_comes_from_a_chapter_title_a_quarter_into_the_book():
    assert heading_words("第二回 渡口问路 石猴夜过江") == "石猴夜过江"
    assert heading_words("CHAPTER II. The Pool of Tears") == "The Pool of Tears"
    assert heading_words("第二回") == ""
    assert pick_event(HUI) == ("石猴夜过江", True)
    assert pick_event(["自序", "狂人日记", "孔乙己", "明天"]) == ("狂人日记", False)  # sections, no numbers


def test_the_example_is_the_books_in_the_page_language():
    facts = facts_of("石猴记", "shihou.epub", HUI)
    assert facts.example("zh") == "《石猴记》中“石猴夜过江”发生在第几回？"
    assert facts.example("en") == "In which chapter of 石猴记 does “石猴夜过江” happen?"
    assert "西游记" not in facts.example("zh") and facts.unit("zh") == "回" and facts.unit("en") == "chapter"
    assert facts_of("石猴记", SAMPLE_SOURCE, HUI).example("zh") == t("zh", "demo_question")  # the sample guide
    assert facts_of("无题", "x.txt", ["第一回", "第二回"]).example("zh") == "《无题》主要讲了什么？"


@pytest.fixture
def library(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    yield settings, index
    index.close()


def upload(pages, session, path: Path) -> dict:
    import shutil

    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()) / f"u{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    pages.books.uploads.grace = 0
    return pages.books.on_upload(session, str(shutil.copy(path, folder / path.name)), "__all__")


def hui_book(tmp_path: Path) -> Path:
    return make_epub(tmp_path / "石猴记.epub", [(h, f"{h}。山里有一只石猴，天天下山看人打鱼。" * 30) for h in HUI],
                     title="石猴记", with_cover=False, with_copyright=False)


def test_after_an_upload_the_labels_and_the_example_are_the_books(tmp_path, library):
    settings, index = library
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    b, c = pages.layout.books, pages.layout.chat
    session = new_session(pages, "zh")
    out = upload(pages, session, hui_book(tmp_path))
    book_id = out[b.active_book]["value"]
    assert out[b.chapter_from]["label"] == "从第几回" and out[b.read_up_to]["label"] == "我读到了第几回（防剧透）"
    assert "石猴夜过江" in out[c.demo_btn]["value"] and "白骨精" not in out[c.demo_btn]["value"]
    assert "5 回" in out[b.books_html]  # "indexed": in the book's own word too
    assert pages.chat.on_demo(session, book_id) == "《石猴记》中“石猴夜过江”发生在第几回？"
    assert pages.chat.on_demo(session, "__all__") == pages.chat.on_demo(session, book_id)  # the only book
    english = pages.shell.on_language(session, "en", {}, book_id)
    assert english[b.chapter_to]["label"] == "To chapter" and "石猴记" in english[c.demo_btn]["value"]
    said = value(pages.books.on_scope_apply(session, "2", "4", ""), b.scope_status)
    assert "chapters 2 to 4" in said
    session.lang = "zh"
    assert "第 2 至 4 回" in value(pages.books.scope_line(session), b.scope_status)


def test_the_background_vectors_line_goes_once_they_are_done(tmp_path, library):
    settings, index = library
    pages = make_pages(Deps(settings=settings, retriever=index), index=index)
    session = new_session(pages, "zh")
    out = upload(pages, session, hui_book(tmp_path))
    book_id = out[pages.layout.books.active_book]["value"]
    assert index.wait_until_embedded(book_id, timeout=60)
    ticked = pages.books.on_tick(session, book_id)  # the page's timer, once the list says "ready"
    html = ticked[pages.layout.books.books_html]
    assert "向量在后台计算" not in html and "向量已计算完成" in html and "石猴记" in html
    assert ticked[pages.layout.books.timer].active is False
    english = pages.shell.on_language(session, "en", {}, book_id)[pages.layout.books.books_html]
    assert "in the background" not in english and "The vectors are computed" in english


def test_without_a_book_the_page_keeps_its_own_words(tmp_path):
    pages = make_pages(Deps(settings=make_settings(data_dir=tmp_path / "data")))
    session = new_session(pages, "zh")
    assert pages.chat.on_demo(session, "__all__") == t("zh", "demo_question")
    labels = pages.books.book_labels(session, None)
    assert labels[pages.layout.books.chapter_from]["label"] == "从第几章"
