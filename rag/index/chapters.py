"""A book as chapters, whatever file it came from: ``Chapter`` and ``LoadedBook``, the chapter
headings ("第二十七回 ...", "Chapter 12") and their numbers, and the clean-up every reader shares.
The one numeral parser is ``rag.checks.text.cn_to_int``; ``parse_number`` adds Arabic and Roman
numerals to it."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rag.checks.text import cn_to_int

SUPPORTED = ".epub, .txt, .md"  # the formats a book may come in, as messages name them

#: A chapter number as a heading or a question writes it ("二十七", "一零八", "27", "２７", "xii").
NUMBER = r"[0-9０-９零〇一二三四五六七八九十百千两]+"
# "第二十七回 ...", optionally after a short prefix such as "《》目录 " (seen in real files).
CN_HEADING = re.compile(rf"^(?:\S{{0,8}}\s+)?(第\s*({NUMBER})\s*[回章节卷部篇集](?:[\s:：、.·—-].*)?)$")
EN_HEADING = re.compile(r"^((?:chapter|book|part)\s+([0-9]+|[ivxlcdm]+)\b.*)$", re.IGNORECASE)
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


@dataclass
class Chapter:
    num: int | None
    title: str
    text: str  # paragraphs separated by "\n", no leading/trailing blanks


@dataclass
class LoadedBook:
    title: str
    source: str  # file name
    format: str  # "epub" | "txt" | "md"
    chapters: list[Chapter] = field(default_factory=list)

    @property
    def chars(self) -> int:
        return sum(len(c.text) for c in self.chapters)


def parse_number(token: str) -> int | None:
    """'二十七' -> 27, '一百零八' and '一零八' -> 108, '27' -> 27, 'xii' -> 12; None when it is not
    a number. Chinese numerals are read by ``rag.checks.text.cn_to_int``."""
    token = unicodedata.normalize("NFKC", token.strip()).lower()
    if not token:
        return None
    if token.isdigit():
        return int(token)
    if re.fullmatch(r"[ivxlcdm]+", token):
        total = 0
        for i, ch in enumerate(token):
            v = _ROMAN[ch]
            total += -v if i + 1 < len(token) and _ROMAN[token[i + 1]] > v else v
        return total
    return cn_to_int(token)


def heading_number(title: str) -> int | None:
    """The number of a chapter heading ("第二十七回 ..." -> 27, "Chapter XII" -> 12), else None."""
    m = CN_HEADING.match(title.strip()) or EN_HEADING.match(title.strip())
    return parse_number(m.group(2)) if m else None


def number_chapters(chapters: list[Chapter]) -> list[Chapter]:
    """Use the number in the heading ("第二十七回" -> 27) when every numbered heading is increasing;
    otherwise number chapters 1..n in reading order. Front matter before chapter 1 gets 0."""
    parsed = [heading_number(c.title) for c in chapters]
    numbered = [p for p in parsed if p is not None]
    use_parsed = len(numbered) >= max(1, len(chapters) // 2) and all(
        a < b for a, b in zip(numbered, numbered[1:], strict=False)
    )
    out: list[Chapter] = []
    seq = 0
    for chapter, num in zip(chapters, parsed, strict=True):
        if use_parsed:
            chapter.num = num if num is not None else (0 if not out or out[-1].num in (None, 0) else None)
        else:
            seq += 1
            chapter.num = seq
        out.append(chapter)
    return out


def clean_paragraphs(text: str) -> str:
    """Strip every line, drop blank ones, collapse inner runs of spaces (keeps paragraph breaks)."""
    lines = []
    for raw in text.splitlines():
        line = re.sub(r"[ \t\u00a0\u3000]+", " ", raw).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


# A chapter's last line that only says the chapter (or book) ends: "(本章完)", "（全书完）", "本回完",
# "(未完待续)". It carries nothing to retrieve and made every chapter's last chunk alike.
_TRAILER = re.compile(r"^[(（\[【]?\s*(?:本[章回卷节]完|全书完|全文完|未完待续|待续|完)\s*[)）\]】]?$")


def drop_trailers(text: str) -> str:
    """``text`` without its trailing end-of-chapter lines."""
    lines = text.split("\n")
    while lines and (not lines[-1].strip() or _TRAILER.match(lines[-1].strip())):
        lines.pop()
    return "\n".join(lines)
