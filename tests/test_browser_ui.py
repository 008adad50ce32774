"""The real app (rag.ui.build_app + rag.graph) with a scripted model and a fake web search,
served on a loopback port and driven by Playwright in headless Chromium (found by
conftest.find_chromium: $CHROMIUM_PATH, Debian's /usr/bin/chromium or Playwright's own).

Run alone: ``pytest -m browser tests/test_browser_ui.py``. Leaves a screenshot in
test-output/ui.png.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ev, evidence_for, judge_prompt, launch_chromium, make_settings
from fixtures_index.books import make_epub
from fixtures_index.embedders import HashEmbedder

from rag.deps import Deps
from rag.fakes import FakeRetriever, FakeWebSearch, ScriptedChatModel
from rag.schemas import Passage, SearchResult

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "test-output"

QUESTION = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"
HOSTILE = "<img src=x onerror=alert(1)>"
ANSWER = "三打白骨精发生在原著第二十七回[1]。在1986年央视版电视剧《西游记》中，这一情节是第11集《三打白骨精》[3][4]。"
FOLLOW_UP = "他后来去了哪里？"
FOLLOW_UP_REWRITE = "孙悟空被唐僧赶走后去了哪里？"
FOLLOW_UP_ANSWER = "他回到了花果山[2]。"
PASSAGES = [
    Passage(id="p27", text="第二十七回 尸魔三戏唐三藏 圣僧恨逐美猴王。白骨夫人三次变化，悟空三次打杀。",
            book_id="demo", book_title="西游记导读", chapter_num=27, chapter_title="第二十七回 尸魔三戏唐三藏",
            score=0.912, source="hybrid"),
    Passage(id="p28", text="第二十八回 花果山群妖聚义 黑松林三藏逢魔。悟空被逐，回到花果山。",
            book_id="demo", book_title="西游记导读", chapter_num=28, chapter_title="第二十八回 花果山群妖聚义",
            score=0.537, source="keyword"),
]
WEB = [
    SearchResult(title=HOSTILE, url="https://example.org/ep11?a=1&b=2", snippet="第11集《三打白骨精》 <script>x</script>",
                 site_name="example.org", date="2024-05-01", provider="fake"),
    SearchResult(title="1986年版《西游记》分集剧情", url="https://tv.example.net/xiyouji/list", snippet="第十一集 三打白骨精",
                 site_name="tv.example.net", provider="fake"),
    SearchResult(title="javascript link", url="javascript:alert(2)", snippet="must not become a link", provider="fake"),
]
WEB_QUERY = "1986 央视 西游记 三打白骨精 第几集"


class SlowScriptedChatModel(ScriptedChatModel):
    """Streams its text replies slowly enough that the page shows the answer growing."""

    delay_s: float = 0.12

    def _stream(self, *args: Any, **kwargs: Any):
        for chunk in super()._stream(*args, **kwargs):
            time.sleep(self.delay_s)
            yield chunk


def scripted_responder():
    """Route: complex. Evaluation: not enough (book only), then enough (book + web). Text: the
    rewrite of a follow-up, or the answer."""
    state = {"evals": 0}

    def reply(messages: list[Any], *, schema: str | None) -> Any:
        text = "\n".join(str(m.content) for m in messages)
        if schema == "RouteDecision":
            return {"reason": "about the plot of the book and a TV episode", "strategy": "complex"}
        if schema in ("Evaluation", "EvidenceJudgement"):
            state["evals"] += 1
            if "example.org" not in text and "tv.example.net" not in text:
                verdict = ev(False, ["1986年电视剧的集数"], web_query=WEB_QUERY, confidence=0.85,
                             reason="书中有回目，没有电视剧集数")
            else:
                verdict = ev(True, [], confidence=0.9, reason="回目和集数都有来源")
            if schema == "EvidenceJudgement":
                return evidence_for(verdict, judge_prompt([str(m.content) for m in messages]))
            return verdict
        system = str(messages[0].content) if messages else ""
        if "standalone question" in system:
            return FOLLOW_UP_REWRITE
        if "花果山" in text and FOLLOW_UP_REWRITE in text:
            return FOLLOW_UP_ANSWER
        return ANSWER

    return reply


def make_index(tmp_path: Path, settings: Any) -> Any:
    """The real book index (Chroma on disk + BM25) in tmp_path, with the instant hash embedder."""
    from rag.index import open_index

    return open_index(settings, embedder=HashEmbedder())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_fake_app(tmp_path: Path):
    from rag.ui import build_app

    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", ui_language="auto")
    model = SlowScriptedChatModel(responder=scripted_responder())
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    index = make_index(tmp_path, settings)
    return build_app(deps, index=index), deps, index


@pytest.fixture
def served(tmp_path: Path):
    demo, deps, index = build_fake_app(tmp_path)
    port = free_port()
    demo.queue()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
                show_error=False, ssr_mode=False)
    try:
        yield f"http://127.0.0.1:{port}/", deps, index, tmp_path
    finally:
        demo.close()
        index.close()


def _last_bot_text(page) -> str:
    return page.evaluate(
        """() => { const b = document.querySelectorAll('#rag-chat .bot .message-content, #rag-chat [data-testid="bot"]');
                   return b.length ? b[b.length-1].innerText : ''; }"""
    )


@pytest.mark.browser
def test_browser_full_flow(served):
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    OUT.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100}, locale="zh-CN")
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url, wait_until="domcontentloaded")
            expect(page.locator("#rag-banner .mode-model")).to_be_visible(timeout=30_000)
            expect(page.locator("#rag-banner .mode-web")).to_contain_text("fake")

            # ask the demo question (the example button fills the box)
            page.locator("#rag-demo").click()
            expect(page.locator("#rag-question textarea")).to_have_value(QUESTION)
            page.evaluate(
                """() => { window.__seen = []; const chat = document.querySelector('#rag-chat');
                   new MutationObserver(() => { window.__seen.push(chat.innerText); })
                     .observe(chat, {subtree: true, childList: true, characterData: true}); }"""
            )
            page.locator("#rag-send").click()
            expect(page.locator("#rag-trace .trace-total")).to_be_visible(timeout=60_000)

            # the streamed answer: complete at the end, and seen growing on the way
            answer_text = ANSWER
            bot = page.locator("#rag-chat .message-row.bot-row, #rag-chat .bot").filter(has_text="第二十七回").last
            expect(bot).to_contain_text(answer_text, timeout=10_000)
            seen = [s for s in page.evaluate("() => window.__seen") if "三打白骨精发生在原著" in s]
            partial = {s.split("三打白骨精发生在原著", 1)[1][:80] for s in seen}
            assert len(partial) >= 3, partial  # several distinct partial answers were on screen

            # the trace: entries in order, each done with a duration
            nodes = page.locator("#rag-trace li.trace-entry").evaluate_all("els => els.map(e => e.dataset.node)")
            assert nodes == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate",
                             "verify_answer"]
            statuses = page.locator("#rag-trace li.trace-entry").evaluate_all(
                "els => els.map(e => e.className)")
            assert all("status-done" in c for c in statuses), statuses
            durations = page.locator("#rag-trace .trace-dur").all_inner_texts()
            assert len(durations) == 7 and all(d.endswith(" s") for d in durations), durations
            expect(page.locator("#rag-trace .route")).to_contain_text("复杂")
            expect(page.locator("#rag-trace li.hit").first).to_contain_text("第二十七回 尸魔三戏唐三藏")
            expect(page.locator("#rag-trace li.hit").first).to_contain_text("0.912")

            # both evaluation rounds as JSON
            rounds = [json.loads(x) for x in page.locator("#rag-trace pre.eval-json").all_inner_texts()]
            assert [r["enough"] for r in rounds] == [False, True]
            assert rounds[0]["web_query"] == WEB_QUERY and rounds[0]["missing"] == ["1986年电视剧的集数 (not found)"]
            assert set(rounds[0]) == {"enough", "missing", "reason", "web_query", "confidence"}
            assert rounds[1]["web_query"] is None and rounds[1]["confidence"] == 0.9
            expect(page.locator("#rag-trace .web-query")).to_contain_text(WEB_QUERY)
            expect(page.locator("#rag-trace .web-round")).to_contain_text("budget 1/20")

            # web source links: http(s) only, new tab, no opener
            links = page.locator("#rag-sources a.web-link")
            hrefs = links.evaluate_all("els => els.map(a => [a.href, a.target, a.rel])")
            assert hrefs == [
                ["https://example.org/ep11?a=1&b=2", "_blank", "noopener noreferrer"],
                ["https://tv.example.net/xiyouji/list", "_blank", "noopener noreferrer"],
            ]
            assert page.locator('a[href^="javascript"]').count() == 0
            expect(page.locator("#rag-sources")).to_contain_text("must not become a link")

            # the hostile title renders as visible text, never as an element
            expect(page.locator("#rag-sources a.web-link").first).to_have_text(HOSTILE)
            expect(page.locator("#rag-trace a.web-link").first).to_have_text(HOSTILE)
            assert page.locator('img[src="x"]').count() == 0
            assert page.locator("#rag-sources script, #rag-trace script").count() == 0

            # citations in the answer: [1] -> the passage in the side panel, [3] -> the web page
            cites = page.locator("#rag-chat a").evaluate_all(
                "els => els.map(a => [a.textContent, a.getAttribute('href'), a.target, a.rel])")
            assert ["[1]", "#src-0-1", "", ""] in [[c[0], c[1], c[2] or "", c[3] or ""] for c in cites], cites
            assert ["[3]", "https://example.org/ep11?a=1&b=2", "_blank"] in [c[:3] for c in cites], cites
            web_cite = next(c for c in cites if c[0] == "[3]")
            assert "noopener" in web_cite[3]
            page.locator("#rag-chat a", has_text="[1]").first.click()
            expect(page.locator("#src-0-1")).to_be_in_viewport()
            assert page.evaluate("() => location.hash") == "#src-0-1"
            expect(page.locator("#src-0-1")).to_contain_text("白骨夫人三次变化")

            page.screenshot(path=str(OUT / "ui.png"), full_page=True)

            # a follow-up is rewritten inside the graph; the trace shows the standalone question
            page.locator("#rag-question textarea").fill(FOLLOW_UP)
            page.locator("#rag-question textarea").press("Enter")
            expect(page.locator("#rag-chat")).to_contain_text(FOLLOW_UP_ANSWER, timeout=60_000)
            expect(page.locator("#rag-trace .trace-total")).to_be_visible(timeout=30_000)
            expect(page.locator("#rag-trace")).to_contain_text(FOLLOW_UP_REWRITE)
            expect(page.locator("#rag-sources details.turn-sources")).to_have_count(1)

            # new conversation clears the chat and the trace
            page.locator("#rag-new").click()
            expect(page.locator("#rag-chat")).not_to_contain_text(FOLLOW_UP_ANSWER)
            expect(page.locator("#rag-trace .rag-trace.empty")).to_be_visible()

            # upload a small EPUB and see it indexed
            epub_path = make_epub(tmp_path / "tiny.epub", [
                ("第一回 开篇", "很久很久以前，有一座山。" * 20),
                ("第二回 下山", "山里有一只猴子，后来下山学艺。" * 20),
            ], title="小书测试", with_cover=False, with_copyright=False)
            page.get_by_role("tab", name="书库").click()
            page.locator("#rag-upload input[type=file]").set_input_files(str(epub_path))
            row = page.locator("#rag-books tr.book-row", has_text="小书测试")
            expect(row).to_be_visible(timeout=120_000)
            expect(page.locator("#rag-books .book-msg")).to_contain_text("小书测试")
            expect(row.locator(".book-status")).to_have_text(re.compile("就绪|向量化"))
            expect(page.locator("#rag-active-book input")).to_have_value("小书测试")
            books = index.books()
            assert [b.title for b in books] == ["小书测试"] and books[0].chapters == 2 and books[0].chunks >= 2
            # embedding finishes in the background and the timer refreshes the list to "ready"
            expect(row.locator(".book-status")).to_have_text("就绪", timeout=60_000)
            expect(row).to_contain_text(str(books[0].chunks))

            # a broken upload is a readable error, not a stack trace
            bad = tmp_path / "broken.epub"
            bad.write_bytes(b"PK\x03\x04 this is not an epub")
            page.locator("#rag-upload input[type=file]").set_input_files(str(bad))
            expect(page.locator("#rag-books .book-msg.error")).to_be_visible(timeout=60_000)
            expect(page.locator("#rag-books .book-msg.error")).not_to_contain_text("Traceback")

            # the English switch relabels the page
            page.get_by_label("English").check()
            expect(page.locator("#rag-send")).to_have_text("Send")
            expect(page.get_by_role("tab", name="Books")).to_be_visible()
            expect(page.locator("#rag-banner .mode-model")).to_contain_text("Model connected")
        finally:
            browser.close()
    assert not dialogs


@pytest.mark.browser
def test_browser_sessions_are_isolated_and_follow_the_browser_language(served):
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            zh = browser.new_context(locale="zh-CN", viewport={"width": 1300, "height": 900}).new_page()
            en = browser.new_context(locale="en-US", viewport={"width": 1300, "height": 900}).new_page()
            for page in (zh, en):
                page.goto(url, wait_until="domcontentloaded")
            expect(zh.locator("#rag-send")).to_have_text("发送", timeout=30_000)
            expect(en.locator("#rag-send")).to_have_text("Send", timeout=30_000)
            expect(en.locator("#rag-banner .mode-model")).to_contain_text("Model connected")

            # both ask at the same time; each sees only its own conversation
            zh.locator("#rag-question textarea").fill(QUESTION)
            en.locator("#rag-question textarea").fill("Which chapter is the White Bone Demon in?")
            zh.locator("#rag-send").click()
            en.locator("#rag-send").click()
            for page in (zh, en):
                expect(page.locator("#rag-trace .trace-total")).to_be_visible(timeout=60_000)
                expect(page.locator("#rag-chat")).to_contain_text("第二十七回")
            expect(zh.locator("#rag-chat")).not_to_contain_text("White Bone Demon")
            expect(en.locator("#rag-chat")).not_to_contain_text("孙悟空三打白骨精发生在原著第几回")
            expect(en.locator("#rag-trace .trace-question")).to_contain_text("White Bone Demon")
            expect(zh.locator("#rag-trace .trace-question")).to_contain_text("孙悟空三打白骨精")
            # each session spent its own web-search budget
            expect(zh.locator("#rag-trace .web-round")).to_contain_text("budget 1/20")
            expect(en.locator("#rag-trace .web-round")).to_contain_text("budget 1/20")

            # per-session settings: the banner of one session changes, the other's does not
            en.get_by_role("tab", name="Settings").click()
            en.locator("#rag-s-rounds input[type=number]").fill("0")
            en.locator("#rag-s-rounds input[type=number]").press("Enter")
            en.locator("#rag-s-apply").click()
            expect(en.locator("#rag-s-status")).to_contain_text("Settings applied")
            expect(en.locator("#rag-banner .mode-web-off")).to_be_visible()
            expect(en.locator("#rag-banner")).to_contain_text("custom settings")
            zh.reload()
            expect(zh.locator("#rag-banner .mode-web")).to_be_visible(timeout=30_000)
            expect(zh.locator("#rag-banner .mode-web-off")).to_have_count(0)
        finally:
            browser.close()


@pytest.mark.browser
def test_browser_retrieval_only_mode_with_the_real_index(tmp_path: Path):
    """No model configured: the banner says so, the graph's retrieval_only node answers with the
    best passages of a real (hash-embedded) index, cited and linked to the sources panel."""
    from playwright.sync_api import expect, sync_playwright

    from rag.ui import build_app

    settings = make_settings(data_dir=tmp_path / "data", ui_language="en", retrieval_k=3)
    index = make_index(tmp_path, settings)
    epub_path = make_epub(tmp_path / "monkey.epub", [
        ("第一回 石猴出世", "花果山顶有一块仙石，石破天惊，迸出一个石猴。" * 10),
        ("第二回 拜师学艺", "石猴漂洋过海，拜须菩提祖师为师，学得七十二变。" * 10),
    ], title="猴王小传", with_cover=False, with_copyright=False)
    info = index.ingest(str(epub_path), background=False)
    deps = Deps(settings=settings, llm=None, retriever=index, web_search=None)
    demo = build_app(deps, index=index)
    port = free_port()
    demo.queue()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True, ssr_mode=False)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000}, locale="en-US")
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                expect(page.locator("#rag-banner .mode-retrieval-only")).to_be_visible(timeout=30_000)
                expect(page.locator("#rag-banner .mode-web-off")).to_be_visible()
                page.get_by_role("tab", name="Books").click()
                expect(page.locator("#rag-books tr.book-row", has_text="猴王小传")).to_contain_text("ready")
                page.locator("#rag-active-book input").click()
                page.get_by_role("option", name="猴王小传").click()
                page.get_by_role("tab", name="Trace & sources").click()
                page.locator("#rag-question textarea").fill("石猴拜谁为师，学了什么本领？")
                page.locator("#rag-send").click()
                expect(page.locator("#rag-trace .trace-total")).to_be_visible(timeout=60_000)
                nodes = page.locator("#rag-trace li.trace-entry").evaluate_all("els => els.map(e => e.dataset.node)")
                assert nodes == ["retrieval_only"]
                expect(page.locator("#rag-trace li.hit").first).to_contain_text("第二回 拜师学艺")
                expect(page.locator("#rag-chat")).to_contain_text("须菩提")
                expect(page.locator("#rag-chat a", has_text="[1]").first).to_have_attribute("href", "#src-0-1")
                expect(page.locator("#src-0-1")).to_contain_text(info.title)
                page.screenshot(path=str(OUT / "ui-retrieval-only.png"), full_page=True)
            finally:
                browser.close()
    finally:
        demo.close()
        index.close()
