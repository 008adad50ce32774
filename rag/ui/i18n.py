"""Chinese and English UI strings. ``t(lang, key, **kw)`` looks one up; unknown keys fall back to
English, then to the key itself, so a missing translation never breaks the page."""

from __future__ import annotations

import contextlib
import re
from typing import Literal

from rag.agent.names import (
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
    "tab_trace": {"zh": "推理轨迹", "en": "Trace"},
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
    "banner_model_unreachable": {"zh": "无法连接模型 {model}：{where}", "en": "Cannot reach the model {model} at {where}"},
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
    "status_keyword_ready": {"zh": "可检索（关键词）· 等待向量化", "en": "searchable (keyword) · waiting to embed"},
    "status_embedding": {"zh": "向量化中", "en": "embedding"},
    "status_ready": {"zh": "就绪", "en": "ready"},
    "status_error": {"zh": "出错", "en": "error"},
    "indexed": {
        "zh": "已索引《{title}》：{chapters} 章，{chunks} 段。现在就可以按关键词提问；向量在后台计算，完成后自动改用混合检索。",
        "en": "Indexed “{title}”: {chapters} chapters, {chunks} chunks. You can ask now (keyword search); "
              "vectors are computed in the background, then search becomes hybrid.",
    },
    "index_failed": {"zh": "无法索引这本书：{message}", "en": "Could not index this book: {message}"},
    "indexing": {"zh": "正在索引……", "en": "Indexing..."},
    # settings
    "settings_note": {
        "zh": "只对这个浏览器生效，不会写入服务器的磁盘或日志；非密钥设置保存在本浏览器中，密钥只在勾选下方选项时保存。留空则使用服务器默认值。",
        "en": "Applies to this browser only, never written to the server's disk or logs; the browser keeps the "
              "non-secret settings, and the keys only if you tick the box below. Leave blank for the server defaults.",
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
    "settings_restored": {"zh": "已恢复你上次在此浏览器中的设置。", "en": "Your settings from this browser were restored."},
    "remember_keys": {
        "zh": "在此浏览器中记住 API Key（不勾选时，密钥只留在本标签页）",
        "en": "Remember API keys in this browser (unticked, keys stay in this tab only)",
    },
    "err_k_range": {"zh": "k 必须在 1 到 50 之间", "en": "k must be between 1 and 50"},
    "err_rounds_range": {"zh": "网络搜索轮数必须在 0 到 5 之间", "en": "web rounds must be between 0 and 5"},
    "err_endpoints_forbidden": {
        "zh": "本服务器不允许会话自选模型地址或 SearXNG 地址（ALLOW_SESSION_ENDPOINTS=false），请留空",
        "en": "this server does not let sessions choose the LLM base URL or SearXNG URL "
              "(ALLOW_SESSION_ENDPOINTS=false); leave them empty",
    },
    "err_base_url_scheme": {"zh": "模型 Base URL 必须以 http:// 或 https:// 开头",
                            "en": "the LLM base URL must start with http:// or https://"},
    "err_searxng_scheme": {"zh": "SearXNG 地址必须以 http:// 或 https:// 开头",
                           "en": "the SearXNG URL must start with http:// or https://"},
    "err_no_make_deps": {"zh": "此应用不能按会话更换模型或搜索引擎",
                         "en": "this app cannot change the model or search provider per session"},
    "err_other": {"zh": "出现内部错误（{name}）", "en": "an internal error ({name})"},
    "probe_ok": {"zh": "已连接 {where}：可选 {n} 个模型。", "en": "Reached {where}: {n} model(s) to choose from."},
    "probe_unreachable": {"zh": "无法连接模型：{where}（{why}）。设置未应用。",
                          "en": "Cannot reach the model at {where} ({why}). Settings not applied."},
    "probe_rejected": {"zh": "{where} 拒绝了 API Key（HTTP {status}），请检查密钥。设置未应用。",
                       "en": "{where} rejected the API key (HTTP {status}): check the key. Settings not applied."},
    "probe_no_list": {"zh": "{where} 没有列出模型（HTTP {status}），已按你填写的模型名称应用。",
                      "en": "{where} lists no models (HTTP {status}); applied with the model name you gave."},
    "probe_no_model": {"zh": "{where} 没有可用的聊天模型：请填写模型名称。设置未应用。",
                       "en": "{where} serves no chat model: give a model name. Settings not applied."},
    "why_connect": {"zh": "连接被拒绝或主机不存在", "en": "connection refused or no such host"},
    "why_timeout": {"zh": "超时无响应", "en": "no answer in time"},
    "server_endpoint": {"zh": "服务器配置的模型地址", "en": "the server's model endpoint"},
    # one turn at a time, stop, queue
    "stop": {"zh": "停止", "en": "Stop"},
    "busy": {
        "zh": "上一个问题还在回答中：先点“停止”，或等它答完。",
        "en": "The previous question is still being answered: press Stop or wait for it to finish.",
    },
    "queued": {
        "zh": "排队中：服务器正在回答其他人的问题，轮到你时会自动开始。",
        "en": "Queued: the server is answering other people's questions; yours starts automatically.",
    },
    "stopped": {"zh": "已停止", "en": "stopped"},
    "stopped_note": {"zh": "已按你的要求停止。", "en": "Stopped at your request."},
    "reset_conversation": {"zh": "清空对话（聊天、轨迹和记忆）", "en": "Clear the conversation (chat, trace and memory)"},
    # answer checks
    "sent_supported": {"zh": "有来源支持", "en": "supported"},
    "sent_unsupported": {"zh": "来源不支持", "en": "not supported by its sources"},
    "sent_uncited": {"zh": "未注明来源", "en": "no source cited"},
    "origin_book": {"zh": "书中", "en": "the book"},
    "origin_web": {"zh": "网络", "en": "the web"},
    "origin_both": {"zh": "书中和网络", "en": "the book and the web"},
    "sent_tip": {"zh": "{status}（{origin}）：{reason}", "en": "{status} ({origin}): {reason}"},
    "sent_tip_plain": {"zh": "{status}：{reason}", "en": "{status}: {reason}"},
    "answer_summary": {"zh": "{n} 句中 {k} 句有来源支持", "en": "{k} of {n} sentences supported by their sources"},
    "answer_summary_detail": {"zh": "（{bad} 句来源不支持，{uncited} 句未注明来源）",
                              "en": " ({bad} not supported, {uncited} without a source)"},
    "cite_unsupported": {"zh": "[{n}] 并不支持这句话", "en": "[{n}] does not support this sentence"},
    "checks_title": {"zh": "逐句核对", "en": "Sentence check"},
    "checks_off": {"zh": "未做逐句核对（VERIFY_ANSWERS=off）", "en": "no sentence check (VERIFY_ANSWERS=off)"},
    # evaluation parts
    "parts_title": {"zh": "问题的各部分", "en": "Parts of the question"},
    "part_verified": {"zh": "已核实", "en": "verified"},
    "part_unverified": {"zh": "未核实", "en": "unverified"},
    "part_not_found": {"zh": "未找到", "en": "not found"},
    "verified_means": {
        "zh": "“已核实”指：代码在来源原文（或其章回标题）里找到了这段引文，引文所在的句子说的正是这一部分，"
              "并且写出了这个答案（人名、数字逐字相同，其余内容大部分相符，文言白话视同）。它不是对事实本身的担保。",
        "en": "\"Verified\" means: code found the quote in the source's text (or its chapter heading), the quote's "
              "sentence speaks of this part, and it states the answer (names and numbers as written, most of the "
              "rest too, classical or modern wording alike). It is not a guarantee of the fact itself."},
    "model_verdict": {"zh": "模型自己的判断", "en": "The model says"},
    "code_verdict": {"zh": "代码核实后的结论", "en": "The code decides"},
    "judge_evidence": {"zh": "证据模式", "en": "evidence mode"},
    "judge_guarded": {"zh": "双重把关模式", "en": "guarded mode"},
    "judge_verdict": {"zh": "判定模式", "en": "verdict mode"},
    "found_in": {"zh": "见于 [{n}]（{origin}）", "en": "found in [{n}] ({origin})"},
    "cited_as": {"zh": "模型标注 [{n}]", "en": "cited as [{n}]"},
    "quote": {"zh": "引文", "en": "Quote"},
    "answer_word": {"zh": "答案", "en": "Answer"},
    "verified_quote": {"zh": "已核实的引文：{part}", "en": "verified quote: {part}"},
    # retrieval ranks
    "how_hybrid": {"zh": "关键词+向量", "en": "keyword + vector"},
    "how_keyword": {"zh": "关键词", "en": "keyword"},
    "how_vector": {"zh": "向量", "en": "vector"},
    "scale_hybrid": {"zh": "RRF 融合分", "en": "RRF fusion score"},
    "scale_keyword": {"zh": "BM25 分", "en": "BM25 score"},
    "scale_vector": {"zh": "余弦相似度", "en": "cosine similarity"},
    "rank_title": {"zh": "检索排名第 {n}，由{how}检索找到；原始分数 {score}（{scale}，各方式的分数不可相互比较）",
                   "en": "rank {n}, found by {how} search; raw score {score} ({scale}; scores of different "
                         "searches are not comparable)"},
    "rank_legend": {"zh": "#n 为检索排名；悬停可查看原始分数。", "en": "#n is the search rank; hover for the raw score."},
    # sources panel
    "back_to_answer": {"zh": "↩ 回到回答", "en": "↩ Back to the answer"},
    "tab_sources": {"zh": "来源", "en": "Sources"},
    # narrow screens
    "nav_chat": {"zh": "对话", "en": "Chat"},
    "nav_trace": {"zh": "轨迹", "en": "Trace"},
    "nav_sources": {"zh": "来源", "en": "Sources"},
    "nav_books": {"zh": "书库", "en": "Books"},
    "nav_settings": {"zh": "设置", "en": "Settings"},
    # book scope and spoilers
    "scope_title": {"zh": "提问范围", "en": "What to search"},
    "chapter_from": {"zh": "从第几章", "en": "From chapter"},
    "chapter_to": {"zh": "到第几章", "en": "To chapter"},
    "read_up_to": {"zh": "我读到了第几章（防剧透）", "en": "I have read up to chapter"},
    "allow_web_spoilers": {"zh": "允许网络结果（可能剧透）", "en": "Allow web results (may spoil)"},
    "scope_note": {"zh": "留空表示整本书、不限制。", "en": "Leave empty for the whole book, no limit."},
    # books: progress, delete, estimate
    "stage_reading": {"zh": "读取书籍", "en": "Reading the book"},
    "stage_chunking": {"zh": "切分段落", "en": "Splitting into passages"},
    "stage_keyword": {"zh": "建立关键词索引", "en": "Building the keyword index"},
    "stage_keyword_done": {"zh": "关键词检索已就绪：现在就可以提问", "en": "Keyword search ready: you can ask now"},
    "stage_embedding": {"zh": "后台向量化", "en": "Embedding in the background"},
    "stage_ready": {"zh": "就绪", "en": "Ready"},
    "status_searchable_embedding": {"zh": "可检索（关键词）· 向量化 {pct}%",
                                    "en": "searchable (keyword) · embedding {pct}%"},
    "eta": {"zh": "约 {time} 后完成", "en": "about {time} left"},
    "minutes": {"zh": "{n} 分钟", "en": "{n} min"},
    "seconds": {"zh": "{n} 秒", "en": "{n} s"},
    "delete_book": {"zh": "🗑 删除所选书籍", "en": "🗑 Delete the selected book"},
    "delete_confirm": {"zh": "再点一次确认删除《{title}》（进行中的向量化会一并取消）。",
                       "en": "Click again to delete “{title}” (an embedding in progress is cancelled)."},
    "delete_confirm_button": {"zh": "确认删除《{title}》", "en": "Confirm: delete “{title}”"},
    "deleted": {"zh": "已删除《{title}》。", "en": "Deleted “{title}”."},
    "delete_not_allowed": {"zh": "只能删除你在本次会话中上传的书。", "en": "You can only delete books you uploaded in this session."},
    "delete_none": {"zh": "请先在“当前书籍”里选一本书。", "en": "Pick a book under “Active book” first."},
    "upload_cancel": {"zh": "取消上传", "en": "Cancel the upload"},
    "upload_cancelled": {"zh": "已取消上传。", "en": "The upload was cancelled."},
}

#: The trace's title for each node, keyed by the node names of rag.agent.names.
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


# --------------------------------------------------------------------------- messages from the code
# Error messages, notices, sentence reasons and part details are written in English by the code
# (rag.index, rag.agent.nodes, rag.checks). In Chinese mode, the known ones are shown in Chinese; each
# message is split at "; " and every piece is matched on its own, and anything not known stays as
# written (a file name, an HTTP error) rather than being guessed at.
_ZH_MESSAGES: tuple[tuple[str, str], ...] = (
    # books (rag.index.loaders / catalog)
    (r"(?P<name>.+?): the file is empty \(0 bytes\)\.", "{name}：文件是空的（0 字节）。"),
    (r"(?P<name>.+?): file not found\.", "{name}：找不到文件。"),
    (r"(?P<name>.+?): not a file\.", "{name}：不是文件。"),
    (r"(?P<name>.+?): the file is too large \((?P<size>[\d.]+) MB\); the limit is (?P<limit>[\d.]+) MB "
     r"\(setting MAX_BOOK_MB\)\.", "{name}：文件太大（{size} MB），上限是 {limit} MB（设置项 MAX_BOOK_MB）。"),
    (r"(?P<name>.+?): unsupported file type '(?P<suffix>[^']*)'\. Supported formats: (?P<formats>.+?)\.",
     "{name}：不支持的文件类型“{suffix}”。支持的格式：{formats}。"),
    (r"(?P<name>.+?): not a valid EPUB \(it is not a ZIP archive\)\. Supported formats: (?P<formats>.+?)\.",
     "{name}：不是有效的 EPUB（它不是 ZIP 压缩包）。支持的格式：{formats}。"),
    (r"(?P<name>.+?): this is a ZIP archive, not a text file\. Supported formats: (?P<formats>.+?)\.",
     "{name}：这是 ZIP 压缩包，不是文本文件。支持的格式：{formats}。"),
    (r"(?P<name>.+?): this ZIP file is not an EPUB \(no META-INF/container\.xml\)\.",
     "{name}：这个 ZIP 文件不是 EPUB（缺少 META-INF/container.xml）。"),
    (r"(?P<name>.+?): the EPUB archive is damaged(?P<detail>.*)", "{name}：EPUB（ZIP 压缩包）已损坏{detail}"),
    (r"(?P<name>.+?): this EPUB is DRM-protected.*", "{name}：这本 EPUB 受 DRM 保护（正文已加密），无法读取。请使用无 DRM 的版本。"),
    (r"(?P<name>.+?): the EPUB contains no readable text.*", "{name}：EPUB 里没有可读的文字（只有图片或空白页）。"),
    (r"(?P<name>.+?): the book contains no text( to index)?\.", "{name}：书里没有文字。"),
    (r"(?P<name>.+?): .*(ZIP bomb|inflates).*", "{name}：解压后过大，像是 ZIP 炸弹，已拒绝（设置项 MAX_BOOK_MB）。"),
    (r"(?P<name>.+?): unknown text encoding.*",
     "{name}：无法识别文本编码（不是 UTF-8、带 BOM 的 UTF-16 或 GB18030/GBK）。请另存为 UTF-8 再试。"),
    (r"(?P<name>.+?): decoding as (?P<enc>\S+) gives binary garbage.*", "{name}：按 {enc} 解码得到乱码：编码未知或不是文本文件。"),
    (r"no book with id '(?P<id>[^']*)' in the index\.", "书库里没有 id 为“{id}”的书。"),
    # notices (rag.agent.nodes)
    (r"the model could not be reached", "无法连接模型"),
    (r"assumed not enough \((?P<detail>.*)\)", "按“不够”处理（{detail}）"),
    (r"took the retrieval path \((?P<detail>.*)\)", "改为查书（{detail}）"),
    (r"router output invalid twice", "路由输出两次无效"),
    (r"model call failed at (?P<where>\S+) \((?P<what>.*?); (?P<cls>\w+)\): (?P<rest>.*)",
     "调用 {where} 的模型失败（{what}；{cls}）：{rest}"),
    (r"evaluation output invalid twice", "评估输出两次无效"),
    (r"evaluation retried once after: (?P<detail>.*)", "评估重试了一次，原因：{detail}"),
    (r"web search failed: (?P<detail>.*)", "网络搜索失败：{detail}"),
    (r"web search is not configured", "未配置网络搜索"),
    (r"generation failed: (?P<detail>.*)", "生成回答失败：{detail}"),
    (r"book search failed: (?P<detail>.*)", "检索本书失败：{detail}"),
    (r"no book index is loaded", "没有加载书库"),
    (r"could not rewrite the follow-up question: (?P<detail>.*)", "无法改写追问：{detail}"),
    (r"the router said simple, but the book uses (?P<names>.*): searching the book",
     "路由判断为简单问题，但书中用到了 {names}：改为查书"),
    (r"the judge said enough, but (?P<n>\d+) of (?P<m>\d+) part\(s\) had no evidence that checks out: not enough",
     "模型说“足够”，但 {m} 个部分中有 {n} 个的证据核对不上：判为不够"),
    (r"sentence check by the model failed: (?P<detail>.*)", "模型逐句核对失败：{detail}"),
    (r"budget (?P<used>\d+)/(?P<total>\w+)(?P<rest>.*)", "搜索额度 {used}/{total}{rest}"),
    (r"cache hit", "缓存命中"),
    (r"cache miss", "缓存未命中"),
    (r"no results", "没有结果"),
    # sentence checks (rag.checks.check_sentence)
    (r"its facts are in the cited sources", "其中的事实见于所引来源"),
    (r"no factual claim", "没有事实性陈述"),
    (r"states facts without citing a source", "陈述了事实，但没有注明来源"),
    (r"cites a source that does not exist: (?P<x>.*)", "引用了不存在的来源：{x}"),
    (r"not in the cited sources: (?P<x>.*)", "所引来源中没有：{x}"),
    (r"attributes to the book what only a web source says", "把只有网络来源的说法说成是书中的"),
    (r"only (?P<p>\d+%) of its words are in the cited sources", "只有 {p} 的词语出现在所引来源中"),
    (r"the model: (?P<label>[a-z]+) \((?P<why>.*)\)", "模型判断：{label}（{why}）"),
    # part checks (rag.checks.verify_part)
    (r"the judge found no evidence for this part", "模型没有为这部分找到证据"),
    (r"quote too short to verify", "引文太短，无法核实"),
    (r"quote verbatim", "引文逐字吻合"),
    (r"quote matched (?P<r>[\d.]+)", "引文近似吻合（{r}）"),
    (r"quote not found in any source", "任何来源中都找不到这段引文"),
    (r"the answer differs from what the quote says", "答案与引文所说不同"),
    (r"answer found in the quoted passage text(?P<where> \(cited \[\d+\], found in \[\d+\]\))?",
     "答案见于引文所在的原文{where}"),
    (r"answer not in the quoted passage text: (?P<x>.*)", "引文所在的原文中没有答案：{x}"),
    (r"yes/no answer", "是非题答案"),
    (r"(?P<n>\d+) content term\(s\) shared with the part", "与问题部分共有 {n} 个实词"),
    (r"\[(?P<n>\d+)\]: (?P<detail>.*)", "[{n}]：{detail}"),
    (r"this part is not a part of the question", "这一部分并不是用户问题的一部分"),
    (r"quote too long to show what states the answer \((?P<n>\d+) characters\)", "引文太长（{n} 字），看不出是哪句说出了答案"),
    (r"the answer only repeats the quote", "答案只是重复了引文"),
    (r"the answer only repeats the question", "答案只是重复了问题"),
    (r"the answer is not a short fact \((?P<n>\d+) characters\)", "答案不是一个简短的事实（{n} 字）"),
    (r"the answer copies the passage but changes it: (?P<x>.*)", "答案照抄原文却改动了其中的字：{x}"),
    (r"the quote's sentence does not speak of this part of the question", "引文所在的句子没有说到问题的这一部分"),
    (r"the quote states the answer \((?P<p>\d+%) of its content\)", "引文说出了答案（内容相符 {p}）"),
    (r"answer not in the quoted passage text: only (?P<p>\d+%) of its content", "引文所在的原文没有说出答案（内容只相符 {p}）"),
    (r"quote (?:verbatim|matched [\d.]+) in the chapter heading", "引文见于章回标题"),
    (r"says what the sources do not confirm", "说明了来源无法确认的内容"),
    (r"(?P<detail>.*) \(covered by the citation that closes its run\)", "{detail}（由段末的引用标注覆盖）"),
    (r"(?P<s>.*) \(not examined by the judge\)", "{s}（评判没有检查这一问）"),
    (r"relevance check: the quote does not state the answer", "相关性检查：引文并没有说出答案"),
)
_ZH_COMPILED = tuple((re.compile(pattern, re.S), template) for pattern, template in _ZH_MESSAGES)
_ZH_WHERE = re.compile(r" \(cited \[(\d+)\], found in \[(\d+)\]\)")


def _zh_piece(piece: str) -> str:
    for pattern, template in _ZH_COMPILED:
        m = pattern.fullmatch(piece.strip())
        if m:
            groups = {k: ("" if v is None else v) for k, v in m.groupdict().items()}
            if "detail" in groups:
                groups["detail"] = message(groups["detail"], "zh") if groups["detail"] else ""
            if "where" in groups:
                groups["where"] = _ZH_WHERE.sub(r"（模型标注 [\1]，实际见于 [\2]）", groups["where"])
            return template.format(**groups)
    return piece


def message(text: str, lang: str) -> str:
    """A message written by the code (error, notice, reason, detail) in ``lang``: unchanged in
    English; in Chinese, each known "; "-separated piece translated, unknown pieces as written."""
    if lang != "zh" or not text:
        return text
    return "；".join(_zh_piece(p) for p in _top_level_pieces(text))


def _top_level_pieces(text: str) -> list[str]:
    """``text`` split at "; " outside brackets (a detail in parentheses stays whole)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([（":
            depth += 1
        elif ch in ")]）":
            depth = max(0, depth - 1)
        elif ch == ";" and depth == 0 and text.startswith("; ", i):
            pieces.append(text[start:i])
            start = i + 2
    pieces.append(text[start:])
    return pieces
