"""The Chinese catalogue: every text the reader sees, by code (``rag.i18n.text``).

One dict per area so that each area's codes sit together; ``CATALOGUE`` joins them. A code's
``{name}`` fields are filled from its ``Msg``'s params. ``rag.i18n``'s tests check that the English and
Chinese catalogues hold the same codes with the same fields.
"""

from __future__ import annotations

# UI labels and fixed texts (rag.ui)
LABELS: dict[str, str] = {
    "app_title": "Enough RAG · 读书问答",
    "app_subtitle": "先查书，判断够不够，不够再上网。每一步都在右侧可见。",
    "language": "界面语言",
    "chat": "对话",
    "question": "问题",
    "question_placeholder": "问一个关于这本书的问题……",
    "send": "发送",
    "new_conversation": "新对话",
    "examples": "示例问题",
    "trace_thought": "推理过程",
    "thinking": "思考中……",
    "error_prefix": "出错了",
    "empty_question": "请输入问题。",
    "tab_trace": "推理轨迹",
    "tab_books": "书库",
    "tab_settings": "设置",
    "trace": "推理轨迹",
    "trace_empty": "提问后，这里会实时显示每一步。",
    "sources": "来源",
    "sources_empty": "还没有来源。",
    "book_sources": "书中段落",
    "web_sources": "网络来源",
    "earlier_question": "之前的问题",
    "evaluations_json": "评估（JSON）",
    "total_time": "总耗时",
    "running": "进行中",
    "failed": "失败",
    "rewritten": "改写后的问题",
    "strategy": "策略",
    "strategy_simple": "简单（直接回答）",
    "strategy_complex": "复杂（需要查书）",
    "reason": "理由",
    "hits": "命中 {n} 段",
    "no_hits": "没有找到相关段落",
    "round": "第 {n} 轮",
    "verdict_enough": "足够",
    "verdict_not_enough": "不够",
    "web_query": "搜索词",
    "provider": "搜索引擎",
    "no_results": "没有结果",
    "answer_mode": "回答模式",
    "mode_direct": "直接回答",
    "mode_full": "完整",
    "mode_partial": "部分（信息不全）",
    "mode_fallback": "兜底",
    "mode_retrieval_only": "仅检索",
    "banner_model": "模型已连接：{model}",
    "banner_model_unreachable": "无法连接模型 {model}：{where}",
    "banner_retrieval_only": "仅检索模式：未配置模型，只显示书中最相关的段落",
    "banner_web_on": "网络搜索：{provider}",
    "banner_web_off": "网络搜索已关闭",
    "banner_custom": "本会话使用自定义设置",
    "upload": "上传书籍（EPUB / TXT / MD）",
    "books": "书籍",
    "active_book": "当前书籍",
    "all_books": "全部书籍",
    "no_books": "书库为空。",
    "no_index": "本应用未连接书库。",
    "col_title": "书名",
    "col_chapters": "章节",
    "col_chunks": "段落",
    "col_embedded": "已向量化",
    "col_status": "状态",
    "status_keyword_ready": "可检索（关键词）· 等待向量化",
    "status_embedding": "向量化中",
    "status_ready": "就绪",
    "status_error": "出错",
    "indexed": "已索引《{title}》：{chapters} 章，{chunks} 段。现在就可以按关键词提问；向量在后台计算，完成后自动改用混合检索。",
    "index_failed": "无法索引这本书：{message}",
    "indexing": "正在索引……",
    "settings_note": "只对这个浏览器生效，不会写入服务器的磁盘或日志；非密钥设置保存在本浏览器中，密钥只在勾选下方选项时保存。留空则使用服务器默认值。",
    "llm_base_url": "模型 Base URL（OpenAI 兼容）",
    "llm_model": "模型名称",
    "llm_api_key": "模型 API Key",
    "search_provider": "搜索引擎",
    "search_api_key": "搜索 API Key（Bocha / Tavily）",
    "searxng_url": "SearXNG 地址",
    "set_on_server": "已在服务器上设置（留空即使用）",
    "retrieval_k": "检索段落数 k",
    "web_rounds": "最多网络搜索轮数",
    "apply": "应用设置",
    "reset": "恢复默认",
    "settings_applied": "设置已应用。",
    "settings_reset": "已恢复默认设置。",
    "settings_unavailable": "此应用不支持按会话修改设置。",
    "settings_failed": "设置无效：{message}",
    "settings_restored": "已恢复你上次在此浏览器中的设置。",
    "remember_keys": "在此浏览器中记住 API Key（不勾选时，密钥只留在本标签页）",
    "probe_ok": "已连接 {where}：可选 {n} 个模型。",
    "probe_unreachable": "无法连接模型：{where}（{why}）。设置未应用。",
    "probe_rejected": "{where} 拒绝了 API Key（HTTP {status}），请检查密钥。设置未应用。",
    "probe_no_list": "{where} 没有列出模型（HTTP {status}），已按你填写的模型名称应用。",
    "probe_no_model": "{where} 没有可用的聊天模型：请填写模型名称。设置未应用。",
    "why_connect": "连接被拒绝或主机不存在",
    "why_timeout": "超时无响应",
    "server_endpoint": "服务器配置的模型地址",
    "stop": "停止",
    "busy": "上一个问题还在回答中：先点“停止”，或等它答完。",
    "queued": "排队中：服务器正在回答其他人的问题，轮到你时会自动开始。",
    "stopped": "已停止",
    "stopped_note": "已按你的要求停止。",
    "reset_conversation": "清空对话（聊天、轨迹和记忆）",
    "sent_supported": "有来源支持",
    "sent_unsupported": "来源不支持",
    "sent_uncited": "未注明来源",
    "origin_book": "书中",
    "origin_web": "网络",
    "origin_both": "书中和网络",
    "sent_tip": "{status}（{origin}）：{reason}",
    "sent_tip_plain": "{status}：{reason}",
    "answer_summary": "{n} 句中 {k} 句有来源支持",
    "answer_summary_detail": "（{bad} 句来源不支持，{uncited} 句未注明来源）",
    "cite_unsupported": "[{n}] 并不支持这句话",
    "checks_title": "逐句核对",
    "checks_off": "未做逐句核对（VERIFY_ANSWERS=off）",
    "parts_title": "问题的各部分",
    "part_verified": "已核实",
    "part_unverified": "未核实",
    "part_not_found": "未找到",
    "verified_means": "“已核实”指：代码在来源原文（或其章回标题）里找到了这段引文，引文所在的句子说的正是这一部分，并且写出了这个答案（人名、数字逐字相同，其余内容大部分相符，文言白话视同）。它不是对事实本身的担保。",
    "model_verdict": "模型自己的判断",
    "code_verdict": "代码核实后的结论",
    "judge_evidence": "证据模式",
    "judge_guarded": "双重把关模式",
    "judge_verdict": "判定模式",
    "found_in": "见于 [{n}]（{origin}）",
    "cited_as": "模型标注 [{n}]",
    "quote": "引文",
    "answer_word": "答案",
    "verified_quote": "已核实的引文：{part}",
    "how_hybrid": "关键词+向量",
    "how_keyword": "关键词",
    "how_vector": "向量",
    "scale_hybrid": "RRF 融合分",
    "scale_keyword": "BM25 分",
    "scale_vector": "余弦相似度",
    "rank_title": "检索排名第 {n}，由{how}检索找到；原始分数 {score}（{scale}，各方式的分数不可相互比较）",
    "rank_legend": "#n 为检索排名；悬停可查看原始分数。",
    "back_to_answer": "↩ 回到回答",
    "tab_sources": "来源",
    "nav_chat": "对话",
    "nav_trace": "轨迹",
    "nav_sources": "来源",
    "nav_books": "书库",
    "nav_settings": "设置",
    "scope_title": "提问范围",
    "chapter_from": "从第几章",
    "chapter_to": "到第几章",
    "read_up_to": "我读到了第几章（防剧透）",
    "allow_web_spoilers": "允许网络结果（可能剧透）",
    "scope_note": "留空表示整本书、不限制。",
    "stage_reading": "读取书籍",
    "stage_chunking": "切分段落",
    "stage_keyword": "建立关键词索引",
    "stage_keyword_done": "关键词检索已就绪：现在就可以提问",
    "stage_embedding": "后台向量化",
    "stage_ready": "就绪",
    "status_searchable_embedding": "可检索（关键词）· 向量化 {pct}%",
    "eta": "约 {time} 后完成",
    "minutes": "{n} 分钟",
    "seconds": "{n} 秒",
    "delete_book": "🗑 删除所选书籍",
    "delete_confirm": "再点一次确认删除《{title}》（进行中的向量化会一并取消）。",
    "delete_confirm_button": "确认删除《{title}》",
    "deleted": "已删除《{title}》。",
    "delete_not_allowed": "只能删除你在本次会话中上传的书。",
    "delete_none": "请先在“当前书籍”里选一本书。",
    "upload_cancel": "取消上传",
    "upload_cancelled": "已取消上传。",
    "demo_question": "孙悟空三打白骨精发生在原著第几回？这一情节在1986年央视版电视剧《西游记》中是第几集？",
    # -- labels added by the UI pages

    # -- labels added by the trace, sources and answer panels (rag.ui.render)

}

# node titles in the trace (rag.agent.names)
NODES: dict[str, str] = {
    "node.route_question": "路由问题",
    "node.retrieve_local": "检索本书",
    "node.evaluate": "评估是否足够",
    "node.web_search": "网络搜索",
    "node.generate": "生成回答",
    "node.verify_answer": "核对答案",
    "node.direct_answer": "直接回答",
    "node.fallback": "兜底回答",
    "node.retrieval_only": "仅检索（无模型）",
}

# books and the index (rag.index)
BOOKS: dict[str, str] = {
    # -- books and the index (rag.index)

}

# the agent's notices and fixed answer texts (rag.agent, rag.llm)
AGENT: dict[str, str] = {
    # -- the agent's nodes, prompts and model calls (rag.agent, rag.llm)

    # -- a turn's run and its failures (rag.agent.events)

}

# evidence and sentence checks (rag.checks)
CHECKS: dict[str, str] = {
    # -- evidence and sentence checks (rag.checks)

}

# web search (rag.search)
SEARCH: dict[str, str] = {
    # -- web search (rag.search)

}

# settings and the session (rag.config, rag.ui)
SETTINGS: dict[str, str] = {
    # -- settings and the session (rag.config, rag.ui)
    "settings.k_range": "k 必须在 1 到 50 之间",
    "settings.rounds_range": "网络搜索轮数必须在 0 到 5 之间",
    "settings.endpoints_forbidden": "本服务器不允许会话自选模型地址或 SearXNG 地址（ALLOW_SESSION_ENDPOINTS=false），请留空",
    "settings.base_url_scheme": "模型 Base URL 必须以 http:// 或 https:// 开头",
    "settings.searxng_scheme": "SearXNG 地址必须以 http:// 或 https:// 开头",
    "settings.no_make_deps": "此应用不能按会话更换模型或搜索引擎",
    "settings.invalid": "以下设置的值无效：{names}",

}


CATALOGUE: dict[str, str] = {**LABELS, **NODES, **BOOKS, **AGENT, **CHECKS, **SEARCH, **SETTINGS}
