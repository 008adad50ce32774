"""What the page says about the active book, read from the book itself: its own word for a chapter
(回, 章, 节, Chapter, Part… from its chapter headings) for the labels that count chapters, and an
example question made from its title and one of its chapter titles. No table of any one book: all
of it comes from the index's chapter titles. The bundled sample guide keeps the page's own example.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from rag.i18n import t
from rag.index.chapters import CN_HEADING, EN_HEADING, chapter_word, heading_kind

logger = logging.getLogger(__name__)

SAMPLE_SOURCE = "xiyouji-guide.epub"  # the bundled sample (rag.ui.serve.SAMPLE_BOOK): today's example
_EVENT_SPLIT = re.compile(r"[\s，,、；;：:。.!?！？]+")
EVENT_MIN_CHARS, EVENT_MAX_CHARS = 4, 40
EXAMPLE_AT = 4  # the example is taken a quarter into the book's chapters (past its opening)


@dataclass(frozen=True)
class BookFacts:
    """``unit_zh``: the book's word for a chapter in its Chinese headings ("" when they are not);
    ``unit_en``: in its English headings ("chapter", "part", "book"; "" when not); ``event``: words of
    one chapter title for the example question ("" when no heading has any); ``sample``: the
    bundled sample guide (its example is the page's own). A book with no title of its own is asked
    about as a whole."""

    title: str
    unit_zh: str = ""
    unit_en: str = ""
    event: str = ""
    numbered: bool = False  # ``event`` is from a numbered heading ("第二十三回 ..."), not a section's title
    sample: bool = False

    def unit(self, lang: str) -> str:
        """The word the labels use for a chapter of this book, in ``lang``."""
        own = self.unit_zh if lang == "zh" else self.unit_en
        return own or t(lang, "param.unit")

    def example(self, lang: str) -> str:
        """The example question in ``lang``: about this book (a chapter's event, else a section,
        else the book as a whole), or the page's own for the sample guide."""
        if self.sample:
            return t(lang, "demo_question")
        if self.event and self.numbered:
            return t(lang, "demo_question_book", title=self.title, event=self.event, unit=self.unit(lang))
        if self.event:
            return t(lang, "demo_question_section", title=self.title, event=self.event)
        return t(lang, "demo_question_title", title=self.title)


def heading_words(title: str) -> str:
    """A numbered heading's words after its number ("第二十三回 横海郡柴进留宾 景阳冈武松打虎" ->
    "景阳冈武松打虎", its last phrase: the event a couplet ends on); "" for a bare heading."""
    title = title.strip()
    m = CN_HEADING.match(title)
    if m:
        rest = re.sub(r"^.*?第\s*[^\s回章节卷部篇集]+\s*[回章节卷部篇集]", "", m.group(1), count=1)
        phrases = [p for p in _EVENT_SPLIT.split(rest) if p]
        return phrases[-1] if phrases else ""
    m = EN_HEADING.match(title)
    if m:
        rest = re.sub(r"^\S+\s+\S+", "", m.group(1), count=1)
        return rest.strip(" .:—–-\t")
    return ""


def pick_event(titles: list[str]) -> tuple[str, bool]:
    """The words of one chapter heading, a quarter into the book (the same every time), and whether
    it is a numbered one (a question may then ask for its number). Without numbered headings, a
    section's own title ("孔乙己"); front and back matter never."""
    numbered: list[str] = []
    sections: list[str] = []
    for title in titles:
        kind = heading_kind(title)
        words = heading_words(title) if kind == "chapter" else title.strip() if kind is None else ""
        if EVENT_MIN_CHARS // 2 <= len(words) <= EVENT_MAX_CHARS:
            (numbered if kind == "chapter" else sections).append(words)
    numbered = [w for w in numbered if len(w) >= EVENT_MIN_CHARS]
    events = numbered or sections
    return (events[len(events) // EXAMPLE_AT] if events else ""), bool(numbered)


def facts_of(title: str, source: str, titles: list[str]) -> BookFacts:
    unit_zh, unit_en = chapter_word(titles)
    event, numbered = pick_event(titles)
    return BookFacts(title=title, unit_zh=unit_zh, unit_en=unit_en, event=event, numbered=numbered,
                     sample=source == SAMPLE_SOURCE)


class BookFactsCache:
    """``BookFacts`` of each book, read once from its chunks' chapter titles (a book's chunks do not
    change while its id stays; a book indexed again is read again: its chunk count is in the key)."""

    def __init__(self) -> None:
        self._facts: dict[tuple[str, int], BookFacts] = {}
        self._lock = threading.Lock()

    def get(self, library: Any, book_id: str | None) -> BookFacts | None:
        """The facts of ``book_id`` in ``library`` (the page's view of the index); None without a
        book or when the book cannot be read."""
        if library is None or not book_id:
            return None
        try:
            info = library.book(book_id)
            key = (str(book_id), int(info.chunks or 0))
            with self._lock:
                if key in self._facts:
                    return self._facts[key]
            titles = list(dict.fromkeys(c.chapter_title for c in library.chunks(book_id)))
        except Exception as exc:  # noqa: BLE001 - the labels fall back to the page's own words
            logger.info("no chapter titles for book %s: %s", book_id, type(exc).__name__)
            return None
        facts = facts_of(str(info.title or ""), str(info.source or ""), titles)
        with self._lock:
            self._facts[key] = facts
        return facts
