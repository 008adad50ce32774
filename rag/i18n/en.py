"""The English catalogue: every text the reader sees, by code (``rag.i18n.text``).

One dict per area so that each area's codes sit together; ``CATALOGUE`` joins them. A code's
``{name}`` fields are filled from its ``Msg``'s params. ``rag.i18n``'s tests check that the English and
Chinese catalogues hold the same codes with the same fields.
"""

from __future__ import annotations

# UI labels and fixed texts (rag.ui)
LABELS: dict[str, str] = {
    "app_title": "Enough RAG · Ask the book",
    "app_subtitle": "Searches the book, judges whether that is enough, searches the web if not. Every step is shown on the right.",
    "language": "Language",
    "chat": "Chat",
    "question": "Question",
    "question_placeholder": "Ask something about the book...",
    "send": "Send",
    "new_conversation": "New conversation",
    "examples": "Example questions",
    "trace_thought": "Reasoning trace",
    "thinking": "Thinking...",
    "error_prefix": "Something went wrong",
    "empty_question": "Please type a question.",
    "tab_trace": "Trace",
    "tab_books": "Books",
    "tab_settings": "Settings",
    "trace": "Trace",
    "trace_empty": "Ask a question and every step shows up here, live.",
    "sources": "Sources",
    "sources_empty": "No sources yet.",
    "book_sources": "Book passages",
    "web_sources": "Web sources",
    "earlier_question": "Earlier question",
    "evaluations_json": "Evaluations (JSON)",
    "total_time": "Total",
    "running": "running",
    "failed": "failed",
    "rewritten": "Standalone question",
    "strategy": "Strategy",
    "strategy_simple": "simple (answer directly)",
    "strategy_complex": "complex (needs the book)",
    "reason": "Reason",
    "hits": "{n} hits",
    "no_hits": "No matching passages",
    "round": "Round {n}",
    "verdict_enough": "enough",
    "verdict_not_enough": "not enough",
    "web_query": "Query",
    "provider": "Provider",
    "no_results": "No results",
    "answer_mode": "Answer mode",
    "mode_direct": "direct",
    "mode_full": "full",
    "mode_partial": "partial (some facts missing)",
    "mode_fallback": "fallback",
    "mode_retrieval_only": "retrieval only",
    "banner_model": "Model connected: {model}",
    "banner_model_unreachable": "Cannot reach the model {model} at {where}",
    "banner_retrieval_only": "Retrieval-only mode: no model configured, showing the most relevant passages",
    "banner_web_on": "Web search: {provider}",
    "banner_web_off": "Web search disabled",
    "banner_custom": "This session uses custom settings",
    "upload": "Upload a book (EPUB / TXT / MD)",
    "books": "Books",
    "active_book": "Active book",
    "all_books": "All books",
    "no_books": "No books yet.",
    "no_index": "No book index is attached to this app.",
    "col_title": "Title",
    "col_chapters": "Chapters",
    "col_chunks": "Chunks",
    "col_embedded": "Embedded",
    "col_status": "Status",
    "status_keyword_ready": "searchable (keyword) · waiting to embed",
    "status_embedding": "embedding",
    "status_ready": "ready",
    "status_error": "error",
    "indexed": "Indexed “{title}”: {chapters} chapters, {chunks} chunks. You can ask now (keyword search); vectors are computed in the background, then search becomes hybrid.",
    "index_failed": "Could not index this book: {message}",
    "indexing": "Indexing...",
    "settings_note": "Applies to this browser only, never written to the server's disk or logs; the browser keeps the non-secret settings, and the keys only if you tick the box below. Leave blank for the server defaults.",
    "llm_base_url": "LLM base URL (OpenAI-compatible)",
    "llm_model": "Model name",
    "llm_api_key": "LLM API key",
    "search_provider": "Search provider",
    "search_api_key": "Search API key (Bocha / Tavily)",
    "searxng_url": "SearXNG URL",
    "set_on_server": "set on the server (leave empty to use it)",
    "retrieval_k": "Passages to retrieve (k)",
    "web_rounds": "Max web search rounds",
    "apply": "Apply settings",
    "reset": "Reset to defaults",
    "settings_applied": "Settings applied.",
    "settings_reset": "Back to the default settings.",
    "settings_unavailable": "This app cannot change settings per session.",
    "settings_failed": "Invalid settings: {message}",
    "settings_restored": "Your settings from this browser were restored.",
    "remember_keys": "Remember API keys in this browser (unticked, keys stay in this tab only)",
    "probe_ok": "Reached {where}: {n} model(s) to choose from.",
    "probe_unreachable": "Cannot reach the model at {where} ({why}). Settings not applied.",
    "probe_rejected": "{where} rejected the API key (HTTP {status}): check the key. Settings not applied.",
    "probe_no_list": "{where} lists no models (HTTP {status}); applied with the model name you gave.",
    "probe_no_model": "{where} serves no chat model: give a model name. Settings not applied.",
    "why_connect": "connection refused or no such host",
    "why_timeout": "no answer in time",
    "server_endpoint": "the server's model endpoint",
    "stop": "Stop",
    "busy": "The previous question is still being answered: press Stop or wait for it to finish.",
    "queued": "Queued: the server is answering other people's questions; yours starts automatically.",
    "stopped": "stopped",
    "stopped_note": "Stopped at your request.",
    "reset_conversation": "Clear the conversation (chat, trace and memory)",
    "sent_supported": "supported",
    "sent_unsupported": "not supported by its sources",
    "sent_uncited": "no source cited",
    "origin_book": "the book",
    "origin_web": "the web",
    "origin_both": "the book and the web",
    "sent_tip": "{status} ({origin}): {reason}",
    "sent_tip_plain": "{status}: {reason}",
    "answer_summary": "{k} of {n} sentences supported by their sources",
    "answer_summary_detail": " ({bad} not supported, {uncited} without a source)",
    "cite_unsupported": "[{n}] does not support this sentence",
    "checks_title": "Sentence check",
    "checks_off": "no sentence check (VERIFY_ANSWERS=off)",
    "parts_title": "Parts of the question",
    "part_verified": "verified",
    "part_unverified": "unverified",
    "part_not_found": "not found",
    "verified_means": "\"Verified\" means: code found the quote in the source's text (or its chapter heading), the quote's sentence speaks of this part, and it states the answer (names and numbers as written, most of the rest too, classical or modern wording alike). It is not a guarantee of the fact itself.",
    "model_verdict": "The model says",
    "code_verdict": "The code decides",
    "judge_evidence": "evidence mode",
    "judge_guarded": "guarded mode",
    "judge_verdict": "verdict mode",
    "found_in": "found in [{n}] ({origin})",
    "cited_as": "cited as [{n}]",
    "quote": "Quote",
    "answer_word": "Answer",
    "verified_quote": "verified quote: {part}",
    "how_hybrid": "keyword + vector",
    "how_keyword": "keyword",
    "how_vector": "vector",
    "scale_hybrid": "RRF fusion score",
    "scale_keyword": "BM25 score",
    "scale_vector": "cosine similarity",
    "rank_title": "rank {n}, found by {how} search; raw score {score} ({scale}; scores of different searches are not comparable)",
    "rank_legend": "#n is the search rank; hover for the raw score.",
    "back_to_answer": "↩ Back to the answer",
    "tab_sources": "Sources",
    "nav_chat": "Chat",
    "nav_trace": "Trace",
    "nav_sources": "Sources",
    "nav_books": "Books",
    "nav_settings": "Settings",
    "scope_title": "What to search",
    "chapter_from": "From chapter",
    "chapter_to": "To chapter",
    "read_up_to": "I have read up to chapter",
    "allow_web_spoilers": "Allow web results (may spoil)",
    "scope_note": "Leave empty for the whole book, no limit.",
    "stage_reading": "Reading the book",
    "stage_chunking": "Splitting into passages",
    "stage_keyword": "Building the keyword index",
    "stage_keyword_done": "Keyword search ready: you can ask now",
    "stage_embedding": "Embedding in the background",
    "stage_ready": "Ready",
    "status_searchable_embedding": "searchable (keyword) · embedding {pct}%",
    "eta": "about {time} left",
    "minutes": "{n} min",
    "seconds": "{n} s",
    "delete_book": "🗑 Delete the selected book",
    "delete_confirm": "Click again to delete “{title}” (an embedding in progress is cancelled).",
    "delete_confirm_button": "Confirm: delete “{title}”",
    "deleted": "Deleted “{title}”.",
    "delete_not_allowed": "You can only delete books you uploaded in this session.",
    "delete_none": "Pick a book under “Active book” first.",
    "upload_cancel": "Cancel the upload",
    "upload_cancelled": "The upload was cancelled.",
    "demo_question": "In which chapter of the novel does Sun Wukong beat the White Bone Demon three times, and in which episode of the 1986 CCTV Journey to the West series?",
    # -- labels added by the UI pages

    # -- labels added by the trace, sources and answer panels (rag.ui.render)

}

# node titles in the trace (rag.agent.names)
NODES: dict[str, str] = {
    "node.route_question": "Route question",
    "node.retrieve_local": "Search the book",
    "node.evaluate": "Is it enough?",
    "node.web_search": "Web search",
    "node.generate": "Write the answer",
    "node.verify_answer": "Check the answer",
    "node.direct_answer": "Direct answer",
    "node.fallback": "Fallback answer",
    "node.retrieval_only": "Retrieval only (no model)",
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
    "settings.k_range": "k must be between 1 and 50",
    "settings.rounds_range": "web rounds must be between 0 and 5",
    "settings.endpoints_forbidden": "this server does not let sessions choose the LLM base URL or SearXNG URL (ALLOW_SESSION_ENDPOINTS=false); leave them empty",
    "settings.base_url_scheme": "the LLM base URL must start with http:// or https://",
    "settings.searxng_scheme": "the SearXNG URL must start with http:// or https://",
    "settings.no_make_deps": "this app cannot change the model or search provider per session",
    "settings.invalid": "invalid values for {names}",

}


CATALOGUE: dict[str, str] = {**LABELS, **NODES, **BOOKS, **AGENT, **CHECKS, **SEARCH, **SETTINGS}
