"""Query rewriting for ``retrieve_local``: the standalone question turned, by the model, into a query
in the book's language and search keywords, with the names the book itself uses for a person
(孔明 for 诸葛亮). The index fuses them with the question (``BookIndex.search(queries=...)``).

Injected through ``Deps.rewriter`` (built by ``rag.agent.wiring`` when a model is configured and
``QUERY_REWRITE`` is on); without it, retrieval searches the question alone. Its call is timed on
its own, so the trace and ``bench/retrieval.py`` report it apart from the search."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from rag.agent.context import query_rewrite_messages
from rag.lang import detect_lang

MAX_QUERIES = 3
MAX_QUERY_CHARS = 200
_NUMBERING = re.compile(r"^\s*(?:(?:\d+[.)、:：]|[-*•]|(?:query|queries|keywords?|关键词|检索词|问题)\s*[:：])\s*)+",
                        re.IGNORECASE)


@dataclass
class Rewritten:
    queries: list[str] = field(default_factory=list)  # what to search besides the question
    seconds: float = 0.0  # the model call


def book_language(book_title: str | None) -> str:
    """The language a book is written in, as far as its title tells (Chinese unless the title is not)."""
    if not book_title:
        return "the book's own language (Chinese for a Chinese book)"
    return "Chinese" if detect_lang(book_title) == "zh" else "the language of its title"


def parse_queries(text: str, question: str) -> list[str]:
    """The model's lines as queries: numbering, bullets and quotes removed, the question itself and
    repeats dropped, at most ``MAX_QUERIES`` of at most ``MAX_QUERY_CHARS``."""
    out: list[str] = []
    for line in (text or "").splitlines():
        line = _NUMBERING.sub("", line).strip().strip("\"'“”‘’「」`").strip()
        if not line or line == question.strip() or line in out:
            continue
        out.append(line[:MAX_QUERY_CHARS])
    return out[:MAX_QUERIES]


class QueryRewriter:
    """Rewrites a question for the book index with a chat model (temperature 0)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def rewrite(self, question: str, book_title: str | None = None) -> Rewritten:
        """Raises what the model call raises; the node turns that into a notice."""
        title = (book_title or "").strip().strip("《》")
        messages = query_rewrite_messages(question, title, book_language=book_language(title))
        started = time.perf_counter()
        reply = self.llm.invoke(messages)
        content = reply.content if isinstance(reply.content, str) else ""
        return Rewritten(parse_queries(content, question), time.perf_counter() - started)
