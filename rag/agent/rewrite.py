"""Query rewriting for ``retrieve_local``: the standalone question turned, by the model, into a query
in the book's language and search keywords, with the names the book itself uses for a person
(孔明 for 诸葛亮). The index fuses them with the question (``BookIndex.search(queries=...)``).

Injected through ``Deps.rewriter`` (built by ``rag.agent.wiring`` when a model is configured and
``QUERY_REWRITE`` is on); without it, retrieval searches the question alone. Its call is timed on
its own, so the trace and ``bench/retrieval.py`` report it apart from the search."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from rag.agent.context import query_rewrite_messages
from rag.lang import detect_lang

logger = logging.getLogger(__name__)

MAX_QUERIES = 3
MAX_QUERY_CHARS = 200
_NUMBERING = re.compile(r"^\s*(?:(?:\d+[.)、:：]|[-*•]|(?:query|queries|keywords?|关键词|检索词|问题)\s*[:：])\s*)+",
                        re.IGNORECASE)


# A line that asks (a question mark or a question word) is a query, whatever else it holds.
_ASKS = re.compile(r"[?？]|谁|什么|哪|几|多少|多久|多重|多长|多大|多高|多远|怎|如何|为何|何时|何处|吗|呢"
                   r"|\b(?:who|whom|whose|what|when|where|which|why|how)\b", re.IGNORECASE)
# Verbs that state a fact: being, naming, dying, playing a part.
_STATES = re.compile(r"是|乃|即|为|叫|名叫|称为|去世|逝世|死于|生于|出生|扮演|饰演|重达?"
                     r"|\b(?:is|are|was|were|died|born|played|weighs?|weighed)\b", re.IGNORECASE)
_FINAL = ("。", ".", "！", "!")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*|[零〇一二两三四五六七八九十百千万亿]{2,}")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}")
_SENTENCE_END = re.compile(r"(?<=[?？!！。])\s*|(?<=\.)\s+")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:[ '-][A-Z][a-z]+)*")


@dataclass
class Rewritten:
    queries: list[str] = field(default_factory=list)  # what to search besides the question
    seconds: float = 0.0  # the model call
    refused: list[str] = field(default_factory=list)  # lines that stated an answer instead of a query


def _new_facts(line: str, question: str) -> list[str]:
    """What ``line`` says that ``question`` does not: a number or date, or a name after a verb of
    being (the Han run or capitalised words that follow it, not in the question)."""
    lowered = question.lower()
    facts = [n for n in _NUMBER.findall(line) if n not in question]
    for verb in _STATES.finditer(line):
        after = line[verb.end():]
        names = [run for run in _HAN_RUN.findall(after)[:1] if run not in question
                 and sum(1 for ch in run if ch not in question) >= 2]
        names += [w for w in _CAPITALISED.findall(after)[:1] if w.lower() not in lowered]
        facts += names
    return facts


def _new_chars(line: str, question: str) -> int:
    """How many Han characters of ``line`` the question does not have."""
    return sum(1 for ch in line if "\u3400" <= ch <= "\u9fff" and ch not in question)


def states_fact(line: str, question: str) -> bool:
    """Whether a rewrite line is an answer rather than a query. A line that asks (a question mark or
    word) is a query. A line that states something and brings a number, date or name the question
    does not have is an answer: a sentence ending in 。/. that fills in what the question asks
    ("车迟国鹿力大仙要和唐僧赌酒。" for "...赌什么？"), or a verb of being with a new name or number
    ("吴承恩是1927年去世的", "孙悟空的扮演者是张国立", "Wu Cheng'en died in 1927"). A list of keywords
    is a query unless it carries a number the question asks for and does not give ("奎木狼 下界 100年").
    A line of several sentences is an answer when one of them is ("What title is he given? He is
    given the title 武吉.", the 1.5B's)."""
    sentences = [part for part in _SENTENCE_END.split(line.strip()) if part.strip()]
    if len(sentences) > 1:
        return any(_states_fact(part, question) for part in sentences)
    return _states_fact(line, question)


def _states_fact(line: str, question: str) -> bool:
    text = line.strip()
    if not text or _ASKS.search(text):
        return False
    asks = bool(_ASKS.search(question))
    new_numbers = [n for n in _NUMBER.findall(text) if n not in question]
    final = text.endswith(_FINAL)
    if not final and len(text.split()) >= 3:  # a list of keywords, as the prompt's second line asks for
        return asks and bool(new_numbers)
    if final and asks and (new_numbers or _new_chars(text, question) >= 1):
        return True
    if not (final or _STATES.search(text)):
        return False
    return bool(_new_facts(text, question))


def book_language(book_title: str | None, lang: str | None = None) -> str:
    """The language a book is written in, for the prompt: its text's (``BookInfo.lang``), else as far
    as its title tells (a title in Latin letters may be a file name: "the language of its title")."""
    if lang in ("zh", "en"):
        return "Chinese" if lang == "zh" else "English"
    if not book_title:
        return "the book's own language (Chinese for a Chinese book)"
    return "Chinese" if detect_lang(book_title) == "zh" else "the language of its title"


def split_queries(text: str, question: str) -> tuple[list[str], list[str]]:
    """(queries, refused): the model's lines as queries (numbering, bullets and quotes removed, the
    question itself and repeats dropped, at most ``MAX_QUERIES`` of at most ``MAX_QUERY_CHARS``), and
    the lines that state an answer (``states_fact``). When any line is refused there are no queries:
    a model that answered has likely put its guess in its keywords too, so the question is searched alone."""
    out: list[str] = []
    refused: list[str] = []
    for line in (text or "").splitlines():
        line = _NUMBERING.sub("", line).strip().strip("\"'“”‘’「」`").strip()
        if not line or line == question.strip() or line in out or line in refused:
            continue
        (refused if states_fact(line, question) else out).append(line[:MAX_QUERY_CHARS])
    return ([] if refused else out[:MAX_QUERIES]), refused[:MAX_QUERIES]


def parse_queries(text: str, question: str) -> list[str]:
    """The queries of ``split_queries`` (none when a line stated an answer)."""
    return split_queries(text, question)[0]


class QueryRewriter:
    """Rewrites a question for the book index with a chat model (temperature 0)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def rewrite(self, question: str, book_title: str | None = None, book_lang: str | None = None) -> Rewritten:
        """Raises what the model call raises; the node turns that into a notice. ``book_lang``: the
        language of the book's text ("zh" | "en"), which the rewrite is written in."""
        title = (book_title or "").strip().strip("《》")
        messages = query_rewrite_messages(question, title, book_language=book_language(title, book_lang))
        started = time.perf_counter()
        reply = self.llm.invoke(messages)
        content = reply.content if isinstance(reply.content, str) else ""
        queries, refused = split_queries(content, question)
        if refused:
            logger.info("query rewrite refused: %d line(s) stated an answer", len(refused))
        return Rewritten(queries, time.perf_counter() - started, refused)
