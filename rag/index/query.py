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


_WORD = re.compile(r"[A-Za-z]+")
# (suffix, what replaces it) to reach a word's stem, and the endings tried on a stem
_STEMS = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""), ("s", ""),
          ("ly", ""))
_ENDINGS = ("", "s", "es", "ed", "d", "ing", "ly")
MIN_STEM = 4  # shorter words ("was", "his") have no forms worth a search


def word_forms(question: str, stopwords: frozenset[str] = frozenset()) -> str:
    """The other forms of an English question's words ("wished" -> wish wishes wishing...), one query:
    the keyword index holds words as the book spells them, and a question seldom uses the book's form
    ("blush" for "blushed"). Forms the book does not use match nothing. Capitalised words (names) and
    ``stopwords`` are left out. "" when no word has any."""
    forms: list[str] = []
    for word in dict.fromkeys(w.lower() for w in _WORD.findall(question or "") if not w[0].isupper()):
        if word in stopwords or len(word) < MIN_STEM:
            continue
        stems = {word} | {word[: -len(suffix)] + repl for suffix, repl in _STEMS
                          if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM - 1}
        for stem in stems:
            base = stem[:-1] if stem.endswith("e") else stem
            for ending in _ENDINGS:
                form = (base if ending[:1] in ("e", "i") else stem) + ending
                if form != word and len(form) >= MIN_STEM and form not in forms:
                    forms.append(form)
    return " ".join(forms)
