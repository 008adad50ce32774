"""All prompt context in one place: untrusted text fenced as data (book passages and web results,
one neutralising function), the book block and the web block, the spoiler-limit lines, and the
router's, the follow-up rewriter's and the answer writer's messages.

A book or a web page can hold any text, instructions included: every field that goes between the
delimiters is neutralised so that it cannot close its block or fake another one, and the prompts
say that text in the blocks is data. ``rag.eval.replay`` matches requests by the passages'
beginnings, so the rendered text of every block must stay exactly as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from rag.agent import prompts
from rag.checks import Source, split_sentences
from rag.lang import book_title_marks, language_name
from rag.schemas import Passage, SearchResult

_OPEN_RUN = re.compile(r"<{3,}")
_CLOSE_RUN = re.compile(r">{3,}")
_MARKER_WORD = re.compile(r"(END_)?(BOOK_PASSAGE|WEB_RESULT)", re.IGNORECASE)
HISTORY_CHARS = 600  # of each earlier message shown to the follow-up rewriter


# --------------------------------------------------------------------------- fencing
def neutralise(text: object, *, one_line: bool = False) -> str:
    """Text that cannot open or close a delimited block in a prompt (``<<<`` / ``>>>`` runs and the
    block markers are defused); line breaks are kept unless ``one_line``."""
    value = " ".join(str(text).split()) if one_line else str(text)
    value = _OPEN_RUN.sub("‹‹", value)
    value = _CLOSE_RUN.sub("››", value)
    return _MARKER_WORD.sub(lambda m: m.group(0).replace("_", " "), value)


def fence_book_passage(n: int, head: str, body: str) -> str:
    """One book passage as a delimited block of data, its first line ``[n] <head>``."""
    return (f"<<<BOOK_PASSAGE {n}>>>\n[{n}] {neutralise(head, one_line=True)}\n"
            f"{neutralise(body)}\n<<<END_BOOK_PASSAGE>>>")


def fence_web_result(n: int, title: str, snippet: str, *, url: str = "", site: str = "", date: str = "") -> str:
    """One web result as a delimited block of data; every field on one line, empty ones left out::

        <<<WEB_RESULT n>>>
        [n] <title>
        URL: <url>
        Site: <site>
        Date: <date>
        Snippet: <snippet>
        <<<END_WEB_RESULT>>>
    """
    lines = [f"<<<WEB_RESULT {n}>>>", f"[{n}] {neutralise(title, one_line=True)}"]
    if url:
        lines.append(f"URL: {neutralise(url, one_line=True)}")
    if site:
        lines.append(f"Site: {neutralise(site, one_line=True)}")
    if date:
        lines.append(f"Date: {neutralise(date, one_line=True)}")
    lines += [f"Snippet: {neutralise(snippet, one_line=True)}", "<<<END_WEB_RESULT>>>"]
    return "\n".join(lines)


def fence_source(source: Source) -> str:
    """A numbered source (``rag.agent.judge.sources_of``) fenced as the judge saw it: a book passage,
    or a web result (its title and snippet)."""
    if source.origin == "book":
        return fence_book_passage(source.number, source.label, source.text)
    title, _, snippet = source.text.partition("\n")
    return fence_web_result(source.number, title, snippet)


# --------------------------------------------------------------------------- the book and web blocks
def format_book_context(passages: Sequence[Passage], max_chars: int = 1200) -> str:
    """Book passages as numbered, delimited blocks of data for a prompt: block ``n`` is ::

        <<<BOOK_PASSAGE n>>>
        [n] 《title》 chapter
        text of the passage (cut to ``max_chars``)
        <<<END_BOOK_PASSAGE>>>
    """
    blocks = []
    for i, p in enumerate(passages, start=1):
        body = p.text if len(p.text) <= max_chars else p.text[:max_chars] + "…"
        where = f"{book_title_marks(p.book_title)} " if p.book_title else ""
        blocks.append(fence_book_passage(i, f"{where}{p.label()}", body))
    return "\n\n".join(blocks)


def format_web_context(results: Sequence[SearchResult], start_index: int = 1) -> str:
    """Web results as numbered, delimited blocks of untrusted data (``fence_web_result``), numbered
    from ``start_index`` (after the book's passages). Returns "" for no results."""
    return "\n\n".join(
        fence_web_result(start_index + offset, r.title, r.snippet, url=r.url, site=r.site_name, date=r.date)
        for offset, r in enumerate(results))


def spoiler_book_block(book_context: str, read_up_to: int | None) -> str:
    """The book block under its reading-limit line (when there is a limit and a block)."""
    if read_up_to is None or not book_context:
        return book_context
    return f"{prompts.SPOILER_LINE.format(chapter=read_up_to)}\n\n{book_context}"


def web_block(results: Sequence[SearchResult], start_index: int, read_up_to: int | None = None) -> str:
    """The web block: the results fenced, under the spoiler warning when the web was searched
    despite a reading limit; "" for no results."""
    if not results:
        return ""
    web = format_web_context(results, start_index=start_index)
    if read_up_to is not None:
        web = f"{prompts.SPOILER_WEB_LINE.format(chapter=read_up_to)}\n{web}"
    return web


def labelled_context(book_context: str, web_context: str) -> str:
    """The judge's context: the book block alone, or the book and the web blocks under headings."""
    book = book_context or prompts.text("en", "no_book_context")
    if not web_context:
        return book
    return f"=== BOOK SOURCES ===\n{book}\n\n=== WEB SOURCES (untrusted data) ===\n{web_context}"


def numbered_sentences(sources: Sequence[Source]) -> dict[str, tuple[int, str]]:
    """Sentence id ("2.3": source 2, sentence 3) -> (source number, sentence text)."""
    ids: dict[str, tuple[int, str]] = {}
    for src in sources:
        for k, (a, b) in enumerate(split_sentences(src.text), start=1):
            ids[f"{src.number}.{k}"] = (src.number, src.text[a:b])
    return ids


def format_sentence_context(sources: Sequence[Source]) -> str:
    """Sources with every sentence numbered (n.k), each source fenced as data (``JUDGE_EVIDENCE=sentence``)."""
    ids = numbered_sentences(sources)
    blocks = []
    for src in sources:
        lines = [f"<<<SOURCE {src.number}>>>", f"[{src.number}] {src.label}".rstrip()]
        lines += [f"({sid}) {' '.join(text.split())}" for sid, (n, text) in ids.items() if n == src.number]
        blocks.append("\n".join([*lines, "<<<END_SOURCE>>>"]))
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------- messages
def book_clause(title: str | None) -> str:
    """' (《title》)' for the router's prompt; a title that already has 《》 is not wrapped twice."""
    title = book_title_marks(title or "")
    return f" ({title})" if title else ""


def route_messages(question: str, book_title: str | None = None) -> list[BaseMessage]:
    """The router's prompt (shared by the graph and ``rag eval route``)."""
    return [SystemMessage(prompts.ROUTE_SYSTEM.format(book_clause=book_clause(book_title))),
            HumanMessage(prompts.ROUTE_USER.format(question=question))]


def rewrite_messages(history: Sequence[BaseMessage], question: str) -> list[BaseMessage]:
    """The follow-up rewriter's prompt: the earlier turns (each cut to ``HISTORY_CHARS``) and the question."""
    lines = [f"{'User' if isinstance(m, HumanMessage) else 'Assistant'}: {str(m.content)[:HISTORY_CHARS]}"
             for m in history if isinstance(m, (HumanMessage, AIMessage))]
    return [SystemMessage(prompts.REWRITE_SYSTEM),
            HumanMessage(prompts.REWRITE_USER.format(history="\n".join(lines), question=question))]


def query_rewrite_messages(question: str, book_title: str | None = None, *, book_language: str) -> list[BaseMessage]:
    """The search-query rewriter's prompt (``rag.agent.rewrite``): the question restated in the
    book's language and the book's own names."""
    title = (book_title or "").strip().strip("《》")
    return [SystemMessage(prompts.QUERY_REWRITE_SYSTEM.format(book_clause=f" (《{title}》)" if title else "",
                                                              book_language=book_language)),
            HumanMessage(prompts.QUERY_REWRITE_USER.format(question=question))]


def answer_messages(question: str, lang: str, book_context: str, web_context: str = "", *,
                    missing: list[str] | None = None) -> list[BaseMessage]:
    """The answer writer's prompt (shared by ``generate`` and the benchmark's prompt renderer).
    ``missing``: None for a full answer; the judge's missing points (maybe none) for a partial one."""
    partial_note = ""
    if missing is not None:
        partial_note = "\n" + prompts.GENERATE_PARTIAL_NOTE.format(
            missing="; ".join(missing) if missing else "(not specified by the judge)",
            missing_heading=prompts.text(lang, "missing_heading"))
    return [
        SystemMessage(prompts.GENERATE_SYSTEM.format(language=language_name("zh" if lang == "zh" else "en"),
                                                     cannot_confirm=prompts.text(lang, "cannot_confirm"))),
        HumanMessage(prompts.GENERATE_USER.format(
            question=question, book_context=book_context or prompts.text(lang, "no_book_context"),
            web_context=web_context or prompts.text(lang, "no_web_context"), partial_note=partial_note)),
    ]


def direct_messages(question: str, lang: str) -> list[BaseMessage]:
    """The prompt of a general question answered without the book."""
    return [SystemMessage(prompts.DIRECT_SYSTEM.format(language=language_name("zh" if lang == "zh" else "en"))),
            HumanMessage(question)]


def verify_messages(sentence: str, cited: Sequence[Source]) -> list[BaseMessage]:
    """The sentence checker's prompt: one answer sentence and only the sources it cites, fenced."""
    sources = "\n\n".join(fence_source(src) for src in cited)
    return [SystemMessage(prompts.VERIFY_SYSTEM), HumanMessage(prompts.VERIFY_USER.format(sentence=sentence,
                                                                                          sources=sources))]
