"""The real app (rag.ui.build_app + rag.agent.graph) with a scripted model and a fake web search,
served on a loopback port and driven by Playwright in headless Chromium (found by
conftest.find_chromium: $CHROMIUM_PATH, Debian's /usr/bin/chromium or Playwright's own), used the
way a new user would: issue 13 (the chat as people use it) and the page side of issue 14 (evidence
you can check). Only what needs the wire and a real browser is here: one full flow (ask -> trace ->
citations -> sources), the page's looks (dark mode, a phone) and two isolated sessions; the pages'
handlers (books, settings, Stop, reload, languages) are tested without a server in
tests/test_ui_pages_*.py, leaks and the upload cap in tests/test_faults_ui.py.

Run alone: ``pytest -m browser tests/test_browser_ui.py``. Leaves screenshots in test-output/:
ui-desktop-light.png, ui-desktop-dark.png, ui-phone-chat.png, ui-phone-trace.png (and a few more).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import launch_chromium, make_settings
from fixtures_ui.live import (
    FOLLOW_UP,
    FOLLOW_UP_ANSWER,
    FOLLOW_UP_REWRITE,
    HOSTILE,
    LIST_URL,
    PASSAGES,
    QUESTION,
    WEB,
    WEB_QUERY,
    SlowScriptedChatModel,
    free_port,
    make_index,
    scripted_responder,
)

from rag.agent.deps import Deps
from rag.testing.fakes import FakeRetriever, FakeWebSearch

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-output"

def build_fake_app(tmp_path: Path, answer_delay_s: float = 0.12, **options: Any):
    from rag.ui import build_app

    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", ui_language="auto")
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=answer_delay_s)
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    index = make_index(tmp_path, settings)

    def make_deps(session_settings: Any, index: Any = None) -> Deps:  # per-session settings, same fakes
        return Deps(settings=session_settings, llm=model, retriever=deps.retriever, web_search=deps.web_search)

    return build_app(deps, index=index, make_deps=make_deps, **options), deps, index


@contextmanager
def serve(tmp_path: Path, **options: Any) -> Iterator[tuple[str, Deps, Any]]:
    demo, deps, index = build_fake_app(tmp_path, **options)
    port = free_port()
    demo.queue()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
                show_error=False, ssr_mode=False)
    try:
        yield f"http://127.0.0.1:{port}/", deps, index
    finally:
        demo.close()
        index.close()


@pytest.fixture
def served(tmp_path: Path):
    with serve(tmp_path) as (url, deps, index):
        yield url, deps, index, tmp_path


def open_page(browser: Any, url: str, *, locale: str = "zh-CN", width: int = 1500, height: int = 1100,
              dark: bool = False, context: Any = None) -> Any:
    """A page of the app, loaded (the banner is there)."""
    from playwright.sync_api import expect

    page = (context or browser.new_context(locale=locale, viewport={"width": width, "height": height})).new_page()
    page.goto(url + ("?__theme=dark" if dark else ""), wait_until="domcontentloaded")
    expect(page.locator("#rag-banner .badge").first).to_be_visible(timeout=30_000)
    return page


def ask(page: Any, text: str) -> None:
    """Ask ``text``; the previous turn's total is taken off the page, so ``wait_done`` waits for this one."""
    page.evaluate("() => document.querySelectorAll('#rag-trace .trace-total').forEach(e => e.remove())")
    page.locator("#rag-question textarea").fill(text)
    page.locator("#rag-send").click()


def wait_done(page: Any, timeout: float = 60_000, send: bool = True) -> None:
    """Wait until the turn is done (its total is shown) and, on the chat view, Send is back."""
    from playwright.sync_api import expect

    expect(page.locator("#rag-trace .trace-total")).to_be_visible(timeout=timeout)
    if send:
        expect(page.locator("#rag-send")).to_be_visible(timeout=10_000)


def user_messages(page: Any) -> list[str]:
    return page.locator("#rag-chat [data-testid=user]").all_inner_texts()


def bot_answer(page: Any) -> Any:
    return page.locator("#rag-chat [data-testid=bot]").filter(has=page.locator(".sent, a.cite")).last


# Contrast ratio (WCAG) of an element's text against what is really behind it.
CONTRAST_JS = """(selectors) => {
  const parse = (c) => {  // rgb(a)(...) or color(srgb r g b / a), as Chromium computes colours
    let m = (c || '').match(/rgba?\\(([^)]+)\\)/);
    if (m) { const p = m[1].split(',').map(Number); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; }
    m = (c || '').match(/color\\(srgb ([\\d.e-]+) ([\\d.e-]+) ([\\d.e-]+)(?: \\/ ([\\d.]+))?\\)/);
    if (m) return {r: 255 * +m[1], g: 255 * +m[2], b: 255 * +m[3], a: m[4] === undefined ? 1 : +m[4]};
    return null; };
  const over = (top, bottom) => ({r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
                                  b: top.b * top.a + bottom.b * (1 - top.a), a: 1});
  const background = (el) => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; } }
    let out = {r: 255, g: 255, b: 255, a: 1};
    for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
    return out; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const out = [];
  for (const sel of selectors) for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect(); if (!r.width || !r.height || !el.innerText.trim()) continue;
    const bg = background(el); const fg = over(parse(getComputedStyle(el).color), bg);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    out.push({sel, text: el.innerText.trim().slice(0, 24), ratio: Math.round((a + 0.05) / (b + 0.05) * 100) / 100});
  }
  return out; }"""
# Ranks and how a passage was found, links, statuses: must read (WCAG AA for text).
MUST_READ = ["#rag-trace .hit-how", "#rag-trace .hit-num", "#rag-trace .verdict", "#rag-trace .pstatus",
             "#rag-trace a.web-link", "#rag-trace .note.warning", "#rag-trace .trace-title", "#rag-banner .badge",
             "#rag-chat a.cite", "#rag-chat a.answer-link", "#rag-chat .answer-summary", "#rag-trace pre.eval-json",
             "#rag-trace .trace-dur", "#rag-trace .hit-preview", "#rag-trace .part-meta", "#rag-trace .web-meta"]


@pytest.mark.browser
def test_browser_full_flow(served):
    """Ask the demo question: the answer streams; the trace shows each step with its evidence; the
    answer's sentences are marked; links end where they end; citations open their source inside the
    Sources panel (the page stays put), preview on hover and focus, and lead back; while a turn runs
    a second question is refused; a follow-up is rewritten; the chat's trash button forgets it all."""
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    OUT.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            context = browser.new_context(locale="zh-CN", viewport={"width": 1500, "height": 1100},
                                          permissions=["clipboard-read", "clipboard-write"])
            page = open_page(browser, url, context=context)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            expect(page.locator("#rag-banner .mode-model")).to_be_visible()
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

            # while it runs, Send is Stop, and a second question is refused (not mixed into this turn)
            expect(page.locator("#rag-stop")).to_be_visible(timeout=10_000)
            expect(page.locator("#rag-send")).to_be_hidden()
            expect(page.locator("#rag-chat")).to_contain_text("三打白骨精发生在", timeout=30_000)
            page.locator("#rag-question textarea").fill(FOLLOW_UP)
            page.locator("#rag-question textarea").press("Enter")
            expect(page.get_by_text("上一个问题还在回答中")).to_be_visible(timeout=10_000)
            expect(page.locator("#rag-question textarea")).to_have_value(FOLLOW_UP)  # nothing lost
            wait_done(page)
            assert user_messages(page) == [QUESTION]
            expect(page.locator("#rag-stop")).to_be_hidden()
            expect(page.locator("#rag-send")).to_have_text("发送")  # the refused question blanked nothing

            # the streamed answer: complete at the end, and seen growing on the way
            expect(bot_answer(page)).to_contain_text("另见原著第一百回")
            seen = [s for s in page.evaluate("() => window.__seen") if "三打白骨精发生在原著" in s]
            partial = {s.split("三打白骨精发生在原著", 1)[1][:80] for s in seen}
            assert len(partial) >= 3, partial  # several distinct partial answers were on screen

            # the trace: entries in order, each done with a duration
            nodes = page.locator("#rag-trace li.trace-entry").evaluate_all("els => els.map(e => e.dataset.node)")
            assert nodes == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate",
                             "verify_answer"]
            statuses = page.locator("#rag-trace li.trace-entry").evaluate_all("els => els.map(e => e.className)")
            assert all("status-done" in c for c in statuses), statuses
            durations = page.locator("#rag-trace .trace-dur").all_inner_texts()
            assert len(durations) == 7 and all(d.endswith(" s") for d in durations), durations
            expect(page.locator("#rag-trace .route")).to_contain_text("复杂（需要查书）")

            # hits: rank and how each was found; the raw score only on hover; numbered once
            first_hit = page.locator("#rag-trace li.hit").first
            expect(first_hit).to_contain_text("第二十七回 尸魔三戏唐三藏")
            expect(first_hit.locator(".hit-how")).to_have_text("#1 · 关键词+向量")
            assert "0.912" in first_hit.locator(".hit-how").get_attribute("title")
            assert "0.912" not in first_hit.inner_text()
            markers = page.evaluate("""() => Array.from(document.querySelectorAll(
                '#rag-trace li.hit, #rag-trace li.trace-entry, #rag-trace li.part')).map(li =>
                getComputedStyle(li).listStyleType + '|' + getComputedStyle(li, '::marker').content)""")
            assert markers and all(m.startswith("none|") for m in markers), set(markers)
            assert "1. [1]" not in page.locator("#rag-trace").inner_text()

            # both evaluation rounds: JSON, and the parts of the question as code checked them
            rounds = [json.loads(x) for x in page.locator("#rag-trace pre.eval-json").all_inner_texts()]
            assert [r["enough"] for r in rounds] == [False, True]
            assert rounds[0]["web_query"] == WEB_QUERY and rounds[0]["missing"] == ["1986年电视剧的集数 (not found)"]
            assert set(rounds[0]) == {"enough", "missing", "reason", "web_query", "confidence"}
            assert rounds[1]["web_query"] is None and rounds[1]["confidence"] == 0.9
            evals = page.locator('#rag-trace li.trace-entry[data-node="evaluate"]')
            expect(evals.nth(0).locator("li.part-not_found")).to_contain_text("1986年电视剧的集数")
            expect(evals.nth(0).locator("li.part-not_found .pstatus")).to_have_text("∅ 未找到")
            expect(evals.nth(1).locator("li.part-verified .pstatus")).to_have_text("✓ 已核实")
            expect(evals.nth(1).locator("li.part-verified .part-found")).to_have_text("见于 [1]（书中）")
            expect(evals.nth(1).locator(".verdicts")).to_contain_text("模型自己的判断: 足够")
            expect(evals.nth(1).locator(".verdicts")).to_contain_text("代码核实后的结论 (证据模式): 足够")
            quote = evals.nth(1).locator("blockquote.part-quote").inner_text()
            expect(page.locator("#rag-trace .web-query")).to_contain_text(WEB_QUERY)
            expect(page.locator("#rag-trace .web-round")).to_contain_text("搜索额度 1/20")
            verify = page.locator('#rag-trace li.trace-entry[data-node="verify_answer"]')
            expect(verify.locator(".checks-summary")).to_contain_text("4 句中 2 句有来源支持")

            # the answer's sentences: supported, supported, unsupported, uncited; one summary line
            answer = bot_answer(page)
            kinds = answer.locator(".sent").evaluate_all("els => els.map(e => e.className)")
            assert [k.split()[1] for k in kinds] == ["sent-supported", "sent-supported", "sent-unsupported",
                                                     "sent-uncited"], kinds
            assert "origin-book" in kinds[0] and "origin-web" in kinds[1]
            expect(answer.locator(".answer-summary")).to_have_text(
                "⚠ 4 句中 2 句有来源支持（1 句来源不支持，1 句未注明来源）")
            unsupported = answer.locator(".sent-unsupported")
            expect(unsupported).to_have_attribute("title", "来源不支持：所引来源中没有：第100")
            expect(unsupported.locator("a.cite")).to_have_class(re.compile("cite-unsupported"))
            expect(answer.locator(".sent-supported a.cite-book")).not_to_have_class(re.compile("cite-unsupported"))
            unsupported.focus()  # the reason on keyboard focus too, not only on hover
            tip = unsupported.evaluate("e => getComputedStyle(e, '::after').content")
            assert "所引来源中没有：第100" in tip, tip

            # the copy button copies the answer as it reads, not its markup
            page.locator("#rag-chat .message-buttons button").last.click()
            copied = page.evaluate("() => navigator.clipboard.readText()")
            assert copied.startswith("三打白骨精发生在原著第二十七回[1]。") and "<" not in copied, copied
            assert LIST_URL in copied

            # a bare URL before Chinese punctuation links to the URL itself
            hrefs = answer.locator("a.answer-link").evaluate_all("els => els.map(a => a.href)")
            assert hrefs == [LIST_URL]
            assert page.locator('#rag-chat a[href*="%EF%BC"]').count() == 0

            # web source links: http(s) only, new tab, no opener; hostile text stays text
            page.get_by_role("tab", name="来源").click()
            links = page.locator("#rag-sources a.web-link")
            hrefs = links.evaluate_all("els => els.map(a => [a.href, a.target, a.rel])")
            assert hrefs == [
                ["https://example.org/ep11?a=1&b=2", "_blank", "noopener noreferrer"],
                ["https://tv.example.net/xiyouji/list", "_blank", "noopener noreferrer"],
            ]
            assert page.locator('a[href^="javascript"]').count() == 0
            expect(page.locator("#rag-sources")).to_contain_text("must not become a link")
            expect(page.locator("#rag-sources a.web-link").first).to_have_text(HOSTILE)
            assert page.locator('img[src="x"]').count() == 0
            assert page.locator("#rag-sources script, #rag-trace script").count() == 0

            # the verified quote is highlighted inside its passage, which is shown whole
            mark = page.locator("#src-0-1 mark.quote-hl")
            expect(mark).to_have_count(1)
            assert quote.startswith(mark.inner_text().strip()[:10])
            expect(page.locator("#src-0-1 .src-text")).to_contain_text("悟空三次打杀。")
            box = page.locator("#src-0-1 .src-text").evaluate("e => [e.scrollHeight, e.clientHeight]")
            assert box[0] <= box[1] + 1  # nothing of the passage is cut off
            page.get_by_role("tab", name="推理轨迹").click()

            # citations: [1] -> the passage in the Sources panel, [3] -> the web page
            cites = page.locator("#rag-chat a.cite").evaluate_all(
                "els => els.map(a => [a.textContent, a.getAttribute('href'), a.target, a.rel])")
            assert ["[1]", "#src-0-1", "", ""] in [[c[0], c[1], c[2] or "", c[3] or ""] for c in cites], cites
            assert ["[3]", "https://example.org/ep11?a=1&b=2", "_blank"] in [c[:3] for c in cites], cites
            assert "noopener" in next(c for c in cites if c[0] == "[3]")[3]

            # hover and keyboard focus preview the source
            book_cite = answer.locator("a.cite-book").first
            book_cite.hover()
            expect(page.locator("#rag-cite-preview")).to_be_visible()
            expect(page.locator("#rag-cite-preview")).to_contain_text("白骨夫人三次变化")
            page.mouse.move(5, 5)
            expect(page.locator("#rag-cite-preview")).to_be_hidden()
            answer.locator("a.cite-web").first.focus()
            expect(page.locator("#rag-cite-preview")).to_contain_text("example.org")
            page.keyboard.press("Escape")
            expect(page.locator("#rag-cite-preview")).to_be_hidden()

            # clicking [1] opens the Sources panel at the passage, scrolled inside the panel: the page
            # does not jump to it, the answer stays in view
            page.evaluate("() => window.scrollTo(0, 120)")
            before = page.evaluate("() => window.scrollY")
            book_cite.click()
            target = page.locator("#src-0-1")
            expect(target).to_be_in_viewport()
            expect(target).to_have_class(re.compile("is-target"))
            expect(book_cite).to_be_in_viewport()
            assert page.evaluate("() => window.scrollY") <= before
            assert page.evaluate("() => location.hash") == ""
            back = target.locator(".back-to-answer")
            expect(back).to_be_visible()
            expect(back).to_be_focused()
            page.screenshot(path=str(OUT / "ui-desktop-light.png"), full_page=True)
            back.click()
            assert page.evaluate("() => document.activeElement.getAttribute('href')") == "#src-0-1"
            expect(book_cite).to_be_in_viewport()

            # a follow-up is rewritten inside the graph; the trace shows the standalone question
            page.get_by_role("tab", name="推理轨迹").click()
            ask(page, FOLLOW_UP)
            expect(page.locator("#rag-chat")).to_contain_text(FOLLOW_UP_ANSWER, timeout=60_000)
            wait_done(page)
            expect(page.locator("#rag-trace")).to_contain_text(FOLLOW_UP_REWRITE)
            page.get_by_role("tab", name="来源").click()
            expect(page.locator("#rag-sources details.turn-sources")).to_have_count(1)
            page.get_by_role("tab", name="推理轨迹").click()

            # the chat's trash button clears the chat, the trace and the memory: the follow-up,
            # asked again, is not rewritten with the forgotten conversation, and old turns stay gone
            page.locator("#rag-chat").get_by_role("button", name="清空对话").click()
            expect(page.locator("#rag-trace .rag-trace.empty")).to_be_visible()
            assert user_messages(page) == []
            ask(page, FOLLOW_UP)
            wait_done(page)
            assert user_messages(page) == [FOLLOW_UP]
            expect(page.locator("#rag-trace")).not_to_contain_text(FOLLOW_UP_REWRITE)
            expect(page.locator("#rag-chat")).not_to_contain_text(QUESTION)
            expect(page.locator("#rag-chat")).not_to_contain_text(FOLLOW_UP_ANSWER)

            # "New conversation" does the same
            page.locator("#rag-new").click()
            expect(page.locator("#rag-trace .rag-trace.empty")).to_be_visible()
            assert user_messages(page) == []
        finally:
            browser.close()
    assert not dialogs


@pytest.mark.browser
def test_browser_dark_mode_and_phone(served):
    """Dark mode: ranks, links and statuses read (contrast ≥ 4.5). A 390 px phone: the header is on
    screen at first, and chat, trace and sources are views one tap apart (the trace is not 2,000 px
    below the chat); a citation opens the Sources view. Screenshots of both."""
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    OUT.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            light = open_page(browser, url)
            ask(light, QUESTION)
            wait_done(light)
            light_ratios = light.evaluate(CONTRAST_JS, MUST_READ)

            dark = open_page(browser, url, dark=True)
            assert dark.evaluate("() => document.body.classList.contains('dark') || "
                                 "!!document.querySelector('.dark')")
            ask(dark, QUESTION)
            wait_done(dark)
            expect(bot_answer(dark).locator(".answer-summary")).to_be_visible()
            dark.screenshot(path=str(OUT / "ui-desktop-dark.png"), full_page=True)
            dark_ratios = dark.evaluate(CONTRAST_JS, MUST_READ)
            for name, ratios in (("light", light_ratios), ("dark", dark_ratios)):
                assert {r["sel"] for r in ratios} >= set(MUST_READ) - {"#rag-trace .note.warning"}, name
                low = [r for r in ratios if r["ratio"] < 4.5]
                assert not low, (name, low)

            phone = open_page(browser, url, width=390, height=844)
            header = phone.locator("#rag-header").bounding_box()
            assert header["y"] >= 0 and header["y"] + header["height"] <= 844  # on screen at first
            expect(phone.locator("#rag-nav")).to_be_visible()
            expect(phone.locator("#rag-side-col")).to_be_hidden()
            ask(phone, QUESTION)
            expect(phone.locator("#rag-chat")).to_contain_text("三打白骨精发生在", timeout=30_000)
            phone.locator("#rag-nav [data-view=trace]").click()
            expect(phone.locator("#rag-chat-col")).to_be_hidden()
            wait_done(phone, send=False)
            trace_top = phone.locator("#rag-trace").bounding_box()["y"]
            assert trace_top < 400, trace_top  # one tap away, at the top, not below the chat
            phone.screenshot(path=str(OUT / "ui-phone-trace.png"))
            phone.locator("#rag-nav [data-view=chat]").click()
            expect(phone.locator("#rag-chat-col")).to_be_visible()
            expect(phone.locator("#rag-send")).to_be_visible()
            expect(bot_answer(phone).locator(".answer-summary")).to_be_visible()
            phone.screenshot(path=str(OUT / "ui-phone-chat.png"))
            bot_answer(phone).locator("a.cite-book").first.click()
            expect(phone.locator("#src-0-1")).to_be_in_viewport()
            expect(phone.locator("#rag-chat-col")).to_be_hidden()
            phone.screenshot(path=str(OUT / "ui-phone-sources.png"))
            phone.locator("#src-0-1 .back-to-answer").click()
            expect(phone.locator("#rag-chat-col")).to_be_visible()
            width = phone.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 390, width  # nothing wider than the phone
        finally:
            browser.close()


@pytest.mark.browser
def test_browser_sessions_are_isolated_and_follow_the_browser_language(served):
    """Two browsers at once: each its own conversation, web budget, settings and language."""
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            zh = open_page(browser, url, locale="zh-CN", width=1300, height=900)
            en = open_page(browser, url, locale="en-US", width=1300, height=900)
            expect(zh.locator("#rag-send")).to_have_text("发送", timeout=30_000)
            expect(en.locator("#rag-send")).to_have_text("Send", timeout=30_000)
            expect(en.locator("#rag-banner .mode-model")).to_contain_text("Model connected")

            # both ask at the same time; each sees only its own conversation
            ask(zh, QUESTION)
            ask(en, "Which chapter is the White Bone Demon in?")
            for page in (zh, en):
                wait_done(page)
                expect(page.locator("#rag-chat")).to_contain_text("第二十七回")
            expect(zh.locator("#rag-chat")).not_to_contain_text("White Bone Demon")
            expect(en.locator("#rag-chat")).not_to_contain_text("孙悟空三打白骨精发生在原著第几回")
            expect(en.locator("#rag-trace .trace-question")).to_contain_text("White Bone Demon")
            expect(zh.locator("#rag-trace .trace-question")).to_contain_text("孙悟空三打白骨精")
            # each session spent its own web-search budget
            expect(zh.locator("#rag-trace .web-round")).to_contain_text("搜索额度 1/20")
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

            # the English switch relabels Gradio's own strings too (the locale is switched in the
            # browser and the chat and upload are mounted afresh: assets/ui.js)
            expect(zh.locator("#rag-chat").get_by_role("button", name="清空对话")).to_have_count(1, timeout=30_000)
            zh.get_by_label("English").check()
            expect(zh.locator("#rag-send")).to_have_text("Send")
            expect(zh.locator("#rag-chat").get_by_role("button", name="Clear")).to_have_count(1, timeout=10_000)
            zh.get_by_role("tab", name="Books").click()
            expect(zh.locator("#rag-upload")).to_contain_text("Drop File Here")
        finally:
            browser.close()




# --------------------------------------------------------------------------- issue 25: a reader's first hour


def open_books(page: Any) -> None:
    from playwright.sync_api import expect

    page.get_by_role("tab", name="书库").click()
    page.locator("#rag-scope").get_by_text("提问范围").click()
    expect(page.locator("#rag-ch-from input, #rag-ch-from textarea").first).to_be_visible(timeout=10_000)


def scope_input(page: Any, elem_id: str) -> Any:
    return page.locator(f"#{elem_id} input, #{elem_id} textarea").first


@pytest.mark.browser
def test_browser_the_scope_panel_never_breaks_asking(served):
    """Issue 25, item 1: opening "提问范围" shows empty fields (no hidden 0), a question asked then is
    answered; Apply says what a field that is not a chapter means; a question asked with it ends
    with that message instead of hanging "queued"; emptied again, questions work."""
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = open_page(browser, url, width=1366, height=900)
            open_books(page)
            for field in ("rag-ch-from", "rag-ch-to", "rag-read-up-to"):
                assert scope_input(page, field).input_value() == "", field
            ask(page, QUESTION)
            page.get_by_role("tab", name="推理轨迹").click()
            wait_done(page)
            expect(bot_answer(page)).to_contain_text("另见原著第一百回")

            page.get_by_role("tab", name="书库").click()
            scope_input(page, "rag-ch-from").fill("第几回")
            page.locator("#rag-scope-apply").click()
            expect(page.locator("#rag-scope-status")).to_contain_text("的数字（1 或以上", timeout=10_000)
            ask(page, FOLLOW_UP)
            page.get_by_role("tab", name="推理轨迹").click()
            expect(page.locator("#rag-trace")).to_contain_text("的数字（1 或以上", timeout=30_000)
            expect(page.locator("#rag-trace .trace-queued")).to_have_count(0)
            expect(page.locator("#rag-send")).to_be_visible(timeout=10_000)

            page.get_by_role("tab", name="书库").click()
            scope_input(page, "rag-ch-from").fill("")
            scope_input(page, "rag-read-up-to").fill("30")
            page.locator("#rag-scope-apply").click()
            expect(page.locator("#rag-scope-status")).to_contain_text(re.compile(r"不用第 30 [回章]之后的内容"))
            ask(page, QUESTION)
            page.get_by_role("tab", name="推理轨迹").click()
            wait_done(page)
            assert user_messages(page)[-1] == QUESTION
        finally:
            browser.close()


TRACE_BOX_JS = """() => {
  const trace = document.querySelector('#rag-trace');
  const style = getComputedStyle(trace);
  const t = trace.getBoundingClientRect();
  const acc = document.querySelector('#rag-evals-acc');
  const a = acc ? acc.getBoundingClientRect() : {top: NaN};
  return {overflowY: style.overflowY, maxHeight: style.maxHeight, scrollHeight: trace.scrollHeight,
          clientHeight: trace.clientHeight, traceBottom: t.bottom, accordionTop: a.top, viewport: innerHeight};
}"""


def check_trace_scrolls(page: Any, where: str) -> None:
    """The trace's computed styles scroll it inside its panel; its end (the total) can be reached by
    scrolling the panel (and the page to its foot); the evaluations accordion starts below it."""
    from playwright.sync_api import expect

    box = page.evaluate(TRACE_BOX_JS)
    assert box["overflowY"] in ("auto", "scroll"), (where, box)
    assert box["clientHeight"] <= box["viewport"], (where, box)
    assert box["accordionTop"] >= box["traceBottom"] - 1, (where, box)  # below the trace, not over it
    page.evaluate("() => { const t = document.querySelector('#rag-trace'); t.scrollTop = t.scrollHeight;"
                  " window.scrollTo(0, document.documentElement.scrollHeight); }")
    box = page.evaluate(TRACE_BOX_JS)
    expect(page.locator("#rag-trace .trace-total")).to_be_in_viewport()
    total = page.locator("#rag-trace .trace-total").bounding_box()
    assert total["y"] + total["height"] <= box["traceBottom"] + 1, (where, total, box)


@pytest.mark.browser
def test_browser_the_trace_scrolls_inside_its_panel(served):
    """Issue 25, item 2: at 1366x900 and on a 390x844 phone, a long trace scrolls inside its panel
    (computed overflow-y, not only the stylesheet) so its last steps and the total can be reached,
    and the evaluations-JSON accordion sits below the trace, not drawn over it."""
    from playwright.sync_api import sync_playwright

    url, deps, index, tmp_path = served
    OUT.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            desktop = open_page(browser, url, width=1366, height=900)
            ask(desktop, QUESTION)
            wait_done(desktop)
            box = desktop.evaluate(TRACE_BOX_JS)
            assert box["scrollHeight"] > box["clientHeight"], box  # the turn's trace is longer than the panel
            assert box["traceBottom"] <= box["viewport"], box  # the whole panel on screen at first
            check_trace_scrolls(desktop, "desktop")
            desktop.screenshot(path=str(OUT / "ui-desktop-trace-1366.png"))

            phone = open_page(browser, url, width=390, height=844)
            ask(phone, QUESTION)
            phone.locator("#rag-nav [data-view=trace]").click()
            wait_done(phone, send=False)
            check_trace_scrolls(phone, "phone")
            phone.screenshot(path=str(OUT / "ui-phone-trace-scrolled.png"))
        finally:
            browser.close()


@pytest.mark.browser
def test_browser_a_citation_preview_opens_at_the_highlighted_quote(served):
    """Issue 25, item 7: a long passage whose verified quote is far below its top: hovering its
    citation shows the preview scrolled to the highlighted quote."""
    from playwright.sync_api import expect, sync_playwright

    url, deps, index, tmp_path = served
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = open_page(browser, url, width=1366, height=900)
            ask(page, QUESTION)
            wait_done(page)
            # the passage as a long chapter would give it: many lines above the quote
            page.evaluate("""() => { const text = document.querySelector(
                '#rag-preview-store [data-src="src-0-1"] .src-text');
                text.prepend(document.createTextNode('前文。'.repeat(12).concat('\\n').repeat(80))); }""")
            cite = bot_answer(page).locator("a.cite-book").first
            cite.scroll_into_view_if_needed()
            page.wait_for_timeout(200)  # the page's own scroll (which hides a preview) is over
            cite.hover()
            preview = page.locator("#rag-cite-preview")
            expect(preview).to_be_visible()
            expect(preview.locator("mark.quote-hl")).to_have_count(1)
            sizes = preview.evaluate("e => [e.scrollHeight, e.clientHeight, e.scrollTop]")
            assert sizes[0] > 2 * sizes[1], sizes  # the quote is far below the passage top
            page.wait_for_timeout(300)  # the preview stays open after its own scroll
            expect(preview).to_be_visible()
            mark = preview.locator("mark.quote-hl").bounding_box()
            box = preview.bounding_box()
            assert box["y"] <= mark["y"] and mark["y"] + mark["height"] <= box["y"] + box["height"], (mark, box)
        finally:
            browser.close()


# What is not the page's own text: book passages, web results, the reader's question, the model's
# words, data (JSON).
NOT_PAGE_TEXT = [".model-text", ".src-text", ".hit-preview", "blockquote.part-quote", ".web-card", ".web-title", ".web-snippet",
                 "pre.eval-json", "#rag-evals", ".trace-question", "[data-testid=user]", "code", ".book-title",
                 "a.web-link", "a.answer-link", "#rag-question", ".web-query", "#rag-preview-store", "b"]
VISIBLE_TEXT_JS = """(skip) => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.textContent.trim() || el.closest('script, style, head')) continue;
    if (skip.some((sel) => el.closest(sel))) continue;
    if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
    out.push(node.textContent.trim());
  }
  for (const el of document.querySelectorAll('input[placeholder], textarea[placeholder]'))
    if (el.getClientRects().length && !skip.some((sel) => el.closest(sel))) out.push(el.placeholder);
  return out;
}"""
ENGLISH_SENTENCE = re.compile(r"[A-Za-z]{2,}(?:[ ,:'’()-]+[A-Za-z]{2,}){2,}")


def english_in(page: Any) -> list[str]:
    return sorted({m.group(0) for text in page.evaluate(VISIBLE_TEXT_JS, NOT_PAGE_TEXT)
                   for m in ENGLISH_SENTENCE.finditer(text)})


@pytest.mark.browser
def test_browser_the_chinese_page_has_no_english_sentences(served):
    """Issue 25, item 4: a full flow in zh (a spoiler limit set, a question with a web round, a
    follow-up, every panel opened): the visible text outside book passages, web results and data
    holds no English sentence."""
    from playwright.sync_api import sync_playwright

    url, deps, index, tmp_path = served
    found: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = open_page(browser, url, width=1366, height=900)
            open_books(page)
            scope_input(page, "rag-read-up-to").fill("30")
            page.locator("#rag-scope-apply").click()
            page.wait_for_timeout(500)
            found["books"] = english_in(page)
            ask(page, QUESTION)
            page.get_by_role("tab", name="推理轨迹").click()
            wait_done(page)
            ask(page, FOLLOW_UP)
            wait_done(page)
            page.locator("#rag-evals-acc").get_by_text("评估").first.click()
            found["chat and trace"] = english_in(page)
            page.get_by_role("tab", name="来源").click()
            found["sources"] = english_in(page)
            page.get_by_role("tab", name="设置").click()
            found["settings"] = english_in(page)
            page.get_by_role("tab", name="书库").click()
            found["books after"] = english_in(page)
        finally:
            browser.close()
    assert not any(found.values()), found


class SlowWebSearch(FakeWebSearch):
    """A web search that answers only after the turn's time limit."""

    def search(self, query: str, count: int) -> list[Any]:
        import time

        time.sleep(6.0)
        return super().search(query, count)


@pytest.mark.browser
def test_browser_the_chinese_page_says_a_time_limit_in_chinese(tmp_path):
    """Issue 25, item 4: a web search that runs past TURN_TIMEOUT: the Chinese page says so in Chinese."""
    from playwright.sync_api import sync_playwright

    from rag.ui import build_app

    settings = make_settings(search_provider="fake", max_web_rounds=1, llm_model="scripted-fake",
                             data_dir=tmp_path / "data", ui_language="auto", turn_timeout=3.0)
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=0.0)
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=SlowWebSearch(WEB))
    demo = build_app(deps)
    port = free_port()
    demo.queue()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
                show_error=False, ssr_mode=False)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                page = open_page(browser, f"http://127.0.0.1:{port}/", width=1366, height=900)
                ask(page, QUESTION)
                wait_done(page)
                english = english_in(page)
            finally:
                browser.close()
    finally:
        demo.close()
    assert not english, english
