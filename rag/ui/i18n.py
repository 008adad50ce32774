"""Chinese and English UI strings. ``t(lang, key, **kw)`` looks one up; unknown keys fall back to
English, then to the key itself, so a missing translation never breaks the page."""

from __future__ import annotations

import contextlib
from typing import Literal

from rag.names import (
    DIRECT_ANSWER,
    EVALUATE,
    FALLBACK,
    GENERATE,
    RETRIEVAL_ONLY,
    RETRIEVE,
    ROUTE,
    VERIFY,
    WEB_SEARCH,
)

Lang = Literal["zh", "en"]
LANGS: tuple[Lang, ...] = ("zh", "en")

DEMO_QUESTION_ZH = "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？"
DEMO_QUESTION_EN = (
    "In which chapter of the novel does Sun Wukong beat the White Bone Demon three times, "
    "and in which episode of the 1986 CCTV Journey to the West series?"
)

STRINGS: dict[str, dict[str, str]] = {
    "app_title": {"zh": "Enough RAG · 读书问答", "en": "Enough RAG · Ask the book"},
    "app_subtitle": {
        "zh": "先查书，判断够不够，不够再上网。每一步都在右侧可见。",
        "en": "Searches the book, judges whether that is enough, searches the web if not. Every step is shown on the right.",
    },
    "language": {"zh": "界面语言", "en": "Language"},
    # chat
    "chat": {"zh": "对话", "en": "Chat"},
    "question": {"zh": "问题", "en": "Question"},
    "question_placeholder": {"zh": "问一个关于这本书的问题……", "en": "Ask something about the book..."},
    "send": {"zh": "发送", "en": "Send"},
    "new_conversation": {"zh": "新对话", "en": "New conversation"},
    "examples": {"zh": "示例问题", "en": "Example questions"},
    "trace_thought": {"zh": "推理过程", "en": "Reasoning trace"},
    "thinking": {"zh": "思考中……", "en": "Thinking..."},
    "error_prefix": {"zh": "出错了", "en": "Something went wrong"},
    "empty_question": {"zh": "请输入问题。", "en": "Please type a question."},
    # side panel
    "tab_trace": {"zh": "推理轨迹与来源", "en": "Trace & sources"},
    "tab_books": {"zh": "书库", "en": "Books"},
    "tab_settings": {"zh": "设置", "en": "Settings"},
    "trace": {"zh": "推理轨迹", "en": "Trace"},
    "trace_empty": {"zh": "提问后，这里会实时显示每一步。", "en": "Ask a question and every step shows up here, live."},
    "sources": {"zh": "来源", "en": "Sources"},
    "sources_empty": {"zh": "还没有来源。", "en": "No sources yet."},
    "book_sources": {"zh": "书中段落", "en": "Book passages"},
    "web_sources": {"zh": "网络来源", "en": "Web sources"},
    "earlier_question": {"zh": "之前的问题", "en": "Earlier question"},
    "evaluations_json": {"zh": "评估（JSON）", "en": "Evaluations (JSON)"},
    "total_time": {"zh": "总耗时", "en": "Total"},
    "running": {"zh": "进行中", "en": "running"},
    "failed": {"zh": "失败", "en": "failed"},
    # node details
    "rewritten": {"zh": "改写后的问题", "en": "Standalone question"},
    "strategy": {"zh": "策略", "en": "Strategy"},
    "strategy_simple": {"zh": "简单（直接回答）", "en": "simple (answer directly)"},
    "strategy_complex": {"zh": "复杂（需要查书）", "en": "complex (needs the book)"},
    "reason": {"zh": "理由", "en": "Reason"},
    "hits": {"zh": "命中 {n} 段", "en": "{n} hits"},
    "no_hits": {"zh": "没有找到相关段落", "en": "No matching passages"},
    "round": {"zh": "第 {n} 轮", "en": "Round {n}"},
    "verdict_enough": {"zh": "足够", "en": "enough"},
    "verdict_not_enough": {"zh": "不够", "en": "not enough"},
    "web_query": {"zh": "搜索词", "en": "Query"},
    "provider": {"zh": "搜索引擎", "en": "Provider"},
    "no_results": {"zh": "没有结果", "en": "No results"},
    "answer_mode": {"zh": "回答模式", "en": "Answer mode"},
    "mode_direct": {"zh": "直接回答", "en": "direct"},
    "mode_full": {"zh": "完整", "en": "full"},
    "mode_partial": {"zh": "部分（信息不全）", "en": "partial (some facts missing)"},
    "mode_fallback": {"zh": "兜底", "en": "fallback"},
    "mode_retrieval_only": {"zh": "仅检索", "en": "retrieval only"},
    # banner
    "banner_model": {"zh": "模型已连接：{model}", "en": "Model connected: {model}"},
    "banner_retrieval_only": {
        "zh": "仅检索模式：未配置模型，只显示书中最相关的段落",
        "en": "Retrieval-only mode: no model configured, showing the most relevant passages",
    },
    "banner_web_on": {"zh": "网络搜索：{provider}", "en": "Web search: {provider}"},
    "banner_web_off": {"zh": "网络搜索已关闭", "en": "Web search disabled"},
    "banner_custom": {"zh": "本会话使用自定义设置", "en": "This session uses custom settings"},
    # books
    "upload": {"zh": "上传书籍（EPUB / TXT / MD）", "en": "Upload a book (EPUB / TXT / MD)"},
    "books": {"zh": "书籍", "en": "Books"},
    "active_book": {"zh": "当前书籍", "en": "Active book"},
    "all_books": {"zh": "全部书籍", "en": "All books"},
    "no_books": {"zh": "书库为空。", "en": "No books yet."},
    "no_index": {"zh": "本应用未连接书库。", "en": "No book index is attached to this app."},
    "col_title": {"zh": "书名", "en": "Title"},
    "col_chapters": {"zh": "章节", "en": "Chapters"},
    "col_chunks": {"zh": "段落", "en": "Chunks"},
    "col_embedded": {"zh": "已向量化", "en": "Embedded"},
    "col_status": {"zh": "状态", "en": "Status"},
    "status_keyword_ready": {"zh": "可关键词检索，向量化中", "en": "keyword-searchable, embedding"},
    "status_embedding": {"zh": "向量化中", "en": "embedding"},
    "status_ready": {"zh": "就绪", "en": "ready"},
    "status_error": {"zh": "出错", "en": "error"},
    "indexed": {"zh": "已索引《{title}》：{chapters} 章，{chunks} 段。", "en": "Indexed “{title}”: {chapters} chapters, {chunks} chunks."},
    "index_failed": {"zh": "无法索引这本书：{message}", "en": "Could not index this book: {message}"},
    "indexing": {"zh": "正在索引……", "en": "Indexing..."},
    # settings
    "settings_note": {
        "zh": "仅对当前浏览器会话生效，不会写入磁盘或日志。留空则使用服务器默认值。",
        "en": "Applies to this browser session only; never written to disk or logs. Leave blank for the server defaults.",
    },
    "llm_base_url": {"zh": "模型 Base URL（OpenAI 兼容）", "en": "LLM base URL (OpenAI-compatible)"},
    "llm_model": {"zh": "模型名称", "en": "Model name"},
    "llm_api_key": {"zh": "模型 API Key", "en": "LLM API key"},
    "search_provider": {"zh": "搜索引擎", "en": "Search provider"},
    "search_api_key": {"zh": "搜索 API Key（Bocha / Tavily）", "en": "Search API key (Bocha / Tavily)"},
    "searxng_url": {"zh": "SearXNG 地址", "en": "SearXNG URL"},
    "set_on_server": {"zh": "已在服务器上设置（留空即使用）", "en": "set on the server (leave empty to use it)"},
    "retrieval_k": {"zh": "检索段落数 k", "en": "Passages to retrieve (k)"},
    "web_rounds": {"zh": "最多网络搜索轮数", "en": "Max web search rounds"},
    "apply": {"zh": "应用设置", "en": "Apply settings"},
    "reset": {"zh": "恢复默认", "en": "Reset to defaults"},
    "settings_applied": {"zh": "设置已应用。", "en": "Settings applied."},
    "settings_reset": {"zh": "已恢复默认设置。", "en": "Back to the default settings."},
    "settings_unavailable": {
        "zh": "此应用不支持按会话修改设置。",
        "en": "This app cannot change settings per session.",
    },
    "settings_failed": {"zh": "设置无效：{message}", "en": "Invalid settings: {message}"},
}

#: The trace's title for each node, keyed by the node names of rag.names.
NODE_TITLES: dict[str, dict[str, str]] = {
    ROUTE: {"zh": "路由问题", "en": "Route question"},
    RETRIEVE: {"zh": "检索本书", "en": "Search the book"},
    EVALUATE: {"zh": "评估是否足够", "en": "Is it enough?"},
    WEB_SEARCH: {"zh": "网络搜索", "en": "Web search"},
    GENERATE: {"zh": "生成回答", "en": "Write the answer"},
    VERIFY: {"zh": "核对答案", "en": "Check the answer"},
    DIRECT_ANSWER: {"zh": "直接回答", "en": "Direct answer"},
    FALLBACK: {"zh": "兜底回答", "en": "Fallback answer"},
    RETRIEVAL_ONLY: {"zh": "仅检索（无模型）", "en": "Retrieval only (no model)"},
}


def node_title(lang: str, node: str) -> str:
    """A node's title in ``lang``; an unknown node shows its own name."""
    entry = NODE_TITLES.get(node)
    return node if entry is None else entry.get(lang) or entry["en"]


def t(lang: str, key: str, **kwargs: object) -> str:
    """The string ``key`` in ``lang`` (``zh`` or ``en``), formatted with ``kwargs``."""
    entry = STRINGS.get(key)
    text = key if entry is None else entry.get(lang) or entry.get("en") or key
    if kwargs:
        with contextlib.suppress(KeyError, IndexError, ValueError):
            text = text.format(**kwargs)
    return text


def pick_language(setting: str | None, accept_language: str | None = None) -> Lang:
    """The UI language: an explicit ``zh``/``en`` setting wins; ``auto`` follows the browser's
    Accept-Language header (first of zh/en by quality order), defaulting to Chinese."""
    if setting in LANGS:
        return setting  # type: ignore[return-value]
    if accept_language:
        ranked: list[tuple[float, int, str]] = []
        for pos, part in enumerate(accept_language.split(",")):
            bits = part.strip().split(";")
            tag = bits[0].strip().lower()
            quality = 1.0
            for bit in bits[1:]:
                bit = bit.strip()
                if bit.startswith("q="):
                    try:
                        quality = float(bit[2:])
                    except ValueError:
                        quality = 0.0
            ranked.append((-quality, pos, tag))
        for _, _, tag in sorted(ranked):
            primary = tag.split("-")[0]
            if primary in LANGS:
                return primary  # type: ignore[return-value]
    return "zh"
