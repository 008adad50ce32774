"""Escaped rendering of chat, trace, sources, banner and books (rag.ui.render) and UI strings."""

from __future__ import annotations

import html
import json
import re

import pytest
from fixtures_ui.turn import PASSAGES, QUESTION, WEB, scripted_turn

from rag.agent.events import NodeStarted, TurnFailed
from rag.i18n import pick_language, t
from rag.schemas import SearchResult
from rag.ui.render import (
    Banner,
    chat_messages,
    esc,
    evaluations_json,
    link_citations,
    render_banner,
    render_books,
    render_sources,
    render_trace,
    safe_url,
)
from rag.ui.translate import Turn, UiState, apply_events, start_turn

HOSTILE = "<img src=x onerror=alert(1)>"


def done_state() -> UiState:
    return apply_events(start_turn(UiState(), QUESTION), scripted_turn())


@pytest.mark.parametrize("url,ok", [
    ("https://example.org/a?b=1&c=2", True),
    ("http://example.org", True),
    ("HTTPS://EXAMPLE.ORG/x", True),
    ("javascript:alert(1)", False),
    ("JaVaScRiPt:alert(1)", False),
    ("data:text/html,<script>alert(1)</script>", False),
    ("//example.org/x", False),
    ("/relative", False),
    ("https://exa mple.org", False),
    ("https://example.org/\n<script>", False),
    ("ftp://example.org/f", False),
    ("", False),
])
def test_safe_url_allows_only_http_and_https(url, ok):
    result = safe_url(url)
    assert (result is not None) == ok
    if ok:
        assert html.unescape(result) == url.strip() and '"' not in result and "<" not in result


def test_esc_neutralises_html_and_template_syntax():
    out = esc('<b a="1">${x} {{y}} `z`</b>')
    assert "<" not in out and '"' not in out and "${" not in out and "{{" not in out and "`" not in out
    assert html.unescape(out) == '<b a="1">${x} {{y}} `z`</b>'


def test_citations_link_book_to_anchor_and_web_to_url():
    md = link_citations("A[1]，B[3][4]，C[1, 2]，D[9]。", 0, PASSAGES, WEB)
    assert '<a class="cite cite-book" href="#src-0-1"' in md
    assert md.count('href="#src-0-1"') == 2 and 'href="#src-0-2"' in md
    assert 'href="https://example.org/ep" target="_blank" rel="noopener noreferrer">[3]</a>' in md
    assert 'href="https://tv.example.org/list" target="_blank" rel="noopener noreferrer">[4]</a>' in md
    assert "\\[9\\]" in md  # out of range: plain (escaped) text, no link


def test_answer_markdown_is_escaped_no_html_no_own_links():
    md = link_citations(f"{HOSTILE} [click](javascript:alert(1)) ![x](https://t.example/p.png) [1]", 2,
                        PASSAGES, [])
    assert "<img" not in md and "&lt;img" in md
    assert "\\[click\\]" in md and "!\\[x\\]" in md
    assert 'href="#src-2-1"' in md


def test_unsafe_web_url_is_not_linked():
    bad = [SearchResult(title="t", url="javascript:alert(1)", snippet="s")]
    md = link_citations("x[3]", 0, PASSAGES, bad)
    assert "javascript" not in md and "\\[3\\]" in md
    sources = render_sources(UiState(turns=(Turn(question="q", web_results=tuple(bad)),)), "en")
    assert "javascript" not in sources and "<a " not in sources


def test_trace_renders_entries_in_order_with_escaped_web_text():
    state = done_state()
    out = render_trace(state.current, "en")
    nodes = re.findall(r'data-node="([a-z_]+)"', out)
    assert nodes == ["route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate",
                     "verify_answer"]
    assert HOSTILE not in out and esc(HOSTILE) in out
    assert "第二十七回 尸魔三戏唐三藏" in out and "0.910" in out
    rounds = re.findall(r'<pre class="eval-json" data-round="(\d)">(.*?)</pre>', out, re.S)
    assert [r for r, _ in rounds] == ["1", "2"]
    first = json.loads(html.unescape(rounds[0][1]))
    assert first == {"enough": False, "missing": ["TV episode"], "reason": "book has the chapter, not the episode",
                     "web_query": "1986 西游记 三打白骨精 第几集", "confidence": 0.8}
    assert json.loads(html.unescape(rounds[1][1]))["enough"] is True
    assert "budget 1/20" in out and "cache miss" in out
    assert 'class="total-s">1.30 s<' in out
    assert 'href="https://example.org/ep" target="_blank" rel="noopener noreferrer"' in out


def test_trace_of_running_and_failed_turns():
    running = apply_events(start_turn(UiState(), "q"), [NodeStarted("route_question", 0.0)])
    out = render_trace(running.current, "zh")
    assert "status-running" in out and t("zh", "running") in out and "trace-total" not in out
    failed = apply_events(running, [TurnFailed("LLMError: <unreachable>", 1.0)])
    out = render_trace(failed.current, "en")
    assert "LLMError: &lt;unreachable&gt;" in out and "trace-failed" in out
    assert render_trace(None, "en").count(t("en", "trace_empty")) == 1


def test_sources_have_anchors_and_numbers_and_earlier_turns_fold():
    state = done_state()
    state = apply_events(start_turn(state, "follow-up"), scripted_turn())
    out = render_sources(state, "en")
    assert 'id="src-1-1"' in out and 'id="src-1-3"' in out and 'id="src-0-2"' in out
    assert out.index('id="src-1-1"') < out.index("<details")  # newest first, earlier folded
    assert "[3]" in out and "[4]" in out
    assert HOSTILE not in out


def test_chat_messages_have_thought_metadata_and_linked_answer():
    state = done_state()
    msgs = chat_messages(state, "en")
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant"]
    thought = msgs[1]
    assert thought["metadata"]["title"] == t("en", "trace_thought")
    assert thought["metadata"]["status"] == "done" and thought["metadata"]["duration"] == 1.3
    assert "Search the book" in thought["content"] and "Round 2: enough" in thought["content"]
    assert 'href="#src-0-1"' in msgs[2]["content"]
    running = apply_events(start_turn(UiState(), "<b>hi</b>"), [NodeStarted("route_question", 0.0)])
    msgs = chat_messages(running, "zh")
    assert msgs[0]["content"] == "&lt;b&gt;hi&lt;/b&gt;"
    assert msgs[1]["metadata"]["status"] == "pending" and len(msgs) == 2
    failed = apply_events(running, [TurnFailed("boom <x>", 0.5)])
    assert chat_messages(failed, "en")[-1]["content"].endswith("boom &lt;x&gt;")


def test_evaluations_json_lists_rounds():
    rounds = evaluations_json(done_state().current)
    assert [r["round"] for r in rounds] == [1, 2] and [r["enough"] for r in rounds] == [False, True]
    assert evaluations_json(None) == []


def test_banner_states_mode():
    on = render_banner(Banner(llm_model="qwen<1>", llm_connected=True, web_provider="bocha"), "en")
    assert "mode-model" in on and "qwen&lt;1&gt;" in on and "mode-web" in on and "Bocha" in on
    off = render_banner(Banner(llm_model=None, llm_connected=False, web_provider=None, custom=True), "zh")
    assert "mode-retrieval-only" in off and "mode-web-off" in off and t("zh", "banner_custom") in off


def test_books_table_escapes_titles():
    books = [{"id": "b1", "title": HOSTILE, "chapters": 3, "chunks": 10, "embedded": 4, "status": "embedding"}]
    out = render_books(books, "en", message="Indexed <x>")
    assert HOSTILE not in out and esc(HOSTILE) in out and "Indexed &lt;x&gt;" in out
    assert t("en", "status_embedding") in out and 'data-book-id="b1"' in out
    assert t("en", "no_books") in render_books([], "en")
    assert t("en", "no_index") in render_books(None, "en")


def test_strings_complete_and_language_choice():
    assert t("en", "hits", n=3) == "3 hits" and t("zh", "round", n=2) == "第 2 轮"
    assert t("en", "no_such_key") == "no_such_key"
    assert pick_language("en", "zh-CN") == "en"
    assert pick_language("auto", "en-US,en;q=0.9,zh;q=0.8") == "en"
    assert pick_language("auto", "fr-FR,zh-CN;q=0.7,en;q=0.5") == "zh"
    assert pick_language("auto", "de;q=1,en;q=0.2,zh;q=0.9") == "zh"
    assert pick_language("auto", None) == "zh"
