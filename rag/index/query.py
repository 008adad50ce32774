"""What a question says about where to look: the chapters it names ("第二十七回", "第27回",
"chapter 27"), for ``retrieve``'s chapter hint. ("第几回" names none.)"""

from __future__ import annotations

import re

from rag.index.chapters import NUMBER, parse_number

_NAMED = re.compile(
    rf"第\s*({NUMBER})\s*[回章节]"
    r"|\b(?:chapter|chap\.|ch\.)\s*([0-9]+|[ivxlcdm]+)\b",
    re.IGNORECASE,
)


def named_chapters(question: str) -> list[int]:
    """Chapter numbers named in ``question``, in order, without repeats."""
    found: list[int] = []
    for m in _NAMED.finditer(question or ""):
        number = parse_number(m.group(1) or m.group(2))
        if number is not None and number not in found:
            found.append(number)
    return found
