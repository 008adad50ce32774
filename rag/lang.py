"""Tiny language helpers: the answer follows the question's language."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

Lang = Literal["zh", "en"]


def detect_lang(text: str) -> Lang:
    """'zh' when the text has Chinese characters and no more Latin letters than them, else 'en'."""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf")
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    if cjk == 0:
        return "en"
    # A Chinese question often holds a few Latin words (TV, CCTV, EPUB): count words, not letters.
    latin_words = len([w for w in "".join(c if c.isascii() and c.isalpha() else " " for c in text).split() if w])
    return "zh" if cjk >= latin_words or cjk * 2 >= latin else "en"


SAMPLE_CHARS = 20_000  # how much of a book tells its language


def text_lang(texts: Iterable[str]) -> Lang:
    """The language a book is written in, from its first ``SAMPLE_CHARS`` characters."""
    sample: list[str] = []
    size = 0
    for text in texts:
        sample.append(text[: SAMPLE_CHARS - size])
        size += len(sample[-1])
        if size >= SAMPLE_CHARS:
            break
    return detect_lang("".join(sample))


def language_name(lang: Lang) -> str:
    return "Simplified Chinese (简体中文)" if lang == "zh" else "English"


def book_title_marks(title: str) -> str:
    """A title in 《》 once: 'X' -> '《X》'; '《X》' and '《西游记》阅读指南' (marks already there) stay."""
    title = title.strip()
    if not title or "《" in title or "》" in title:
        return title
    return f"《{title}》"
