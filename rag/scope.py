"""The scope of a question, in one place: the chapters the reader chose ("3-7", "from 二十七"), the
spoiler limit ("I have read up to chapter N") and whether web results may spoil anyway.

- parse: ``parse_number`` (a chapter number as a reader or a heading writes it), ``parse_chapter_range``
  ("3-7"), ``chapter_range`` (two optional numbers), ``parse_scope`` (the page's and the script API's
  three fields), ``chapter_range_arg`` / ``chapter_arg`` (the command line's);
- validate: ``ScopeInvalid``, a message saying which field and why;
- describe: ``scope_summary``;
- apply: ``limit_chapters`` / ``Scope.searched``, the range to search under the spoiler limit.

``Scope`` is what ``rag.agent.events.run_turn`` takes; the page, the script API and the CLI build it
here. Pure functions, no I/O."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from rag.checks.text import cn_to_int
from rag.i18n import Msg

Chapters = tuple[int, int]
OPEN_END = 10**6  # the last chapter of a range with no end given ("from chapter 3")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
FIELDS = ("chapter_from", "chapter_to", "read_up_to")  # the i18n codes of the scope fields' labels


class ScopeInvalid(ValueError):
    """A scope field that is not a chapter number; ``msg`` says which and why."""

    def __init__(self, msg: Msg) -> None:
        self.msg = msg
        super().__init__(str(msg))


@dataclass(frozen=True)
class Scope:
    """A question's scope: ``chapters`` (inclusive, None: every chapter), ``read_up_to`` (the spoiler
    limit, None: none) and ``allow_web_spoilers`` (search the web despite the limit; results marked)."""

    chapters: Chapters | None = None
    read_up_to: int | None = None
    allow_web_spoilers: bool = False

    @property
    def whole_book(self) -> bool:
        return self.chapters is None and self.read_up_to is None

    @property
    def searched(self) -> Chapters | None:
        """The chapters to search: the range cut at the spoiler limit (``limit_chapters``)."""
        return limit_chapters(self.chapters, self.read_up_to)


# --------------------------------------------------------------------------- parse
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


def parse_chapter_range(text: str) -> Chapters:
    """'27' -> (27, 27), '3-7' / '3..7' / '3–7' -> (3, 7). Raises ValueError on anything else."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:(?:-|–|\.\.|~|to)\s*(\d+))?\s*", text or "")
    if not m:
        raise ValueError(f"not a chapter or chapter range: {text!r} (e.g. 27 or 3-7)")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if lo > hi:
        raise ValueError(f"empty chapter range: {text!r}")
    return lo, hi


def chapter_range(first: float | int | None, last: float | int | None) -> Chapters | None:
    """(first, last) from two optional chapter numbers (0 / empty = open end, read either way
    round); None for all."""
    a = int(first) if first else None
    b = int(last) if last else None
    if a is None and b is None:
        return None
    a, b = a or 1, b or OPEN_END
    if a < 1 or b < 1:
        raise ValueError("chapter numbers start at 1")
    return (min(a, b), max(a, b))


def chapter_field(value: Any, field: str) -> int | None:
    """One field: None when empty, else a chapter number ≥ 1; ``ScopeInvalid`` otherwise. Text
    fields keep an empty field empty (the whole book, no limit), never a hidden 0; a number may be
    written as ``27``, ``二十七`` or ``XII``."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number: int | None = int(value) if float(value).is_integer() else None
        if number == 0:
            return None  # the script API's "0: no limit"
    else:
        text = str(value).strip()
        if not text:
            return None
        number = parse_number(text)
    if number is None or number < 1:
        raise ScopeInvalid(Msg.of("scope_invalid", level="error", field=Msg.of(field), value=str(value)))
    return number


def parse_scope(first: Any, last: Any, read_to: Any, allow_web_spoilers: Any = False) -> Scope:
    """The three fields as a ``Scope`` (empty fields: the whole book; from > to is read the other way
    round); ``ScopeInvalid`` for a field that is not a chapter number."""
    a, b = chapter_field(first, "chapter_from"), chapter_field(last, "chapter_to")
    return Scope(chapters=chapter_range(a, b), read_up_to=chapter_field(read_to, "read_up_to"),
                 allow_web_spoilers=bool(allow_web_spoilers))


def chapter_range_arg(text: str) -> Chapters:
    """``argparse`` type for ``--chapter A-B``."""
    import argparse

    try:
        return parse_chapter_range(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def chapter_arg(text: str) -> int:
    """``argparse`` type for ``--read-up-to N`` (a chapter number, 0 or more)."""
    import argparse

    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"not a chapter number: {text!r}")
    return int(text)


# --------------------------------------------------------------------------- describe
def scope_summary(scope: Scope) -> Msg:
    """What Apply says: the whole book, or the range and the spoiler limit in words."""
    if scope.whole_book:
        return Msg.of("scope_whole_book")
    first, last = scope.chapters or (1, 0)
    parts = []
    if scope.chapters is not None:
        parts.append(Msg.of("scope_range_to", first=first, last=last) if last < OPEN_END
                     else Msg.of("scope_range_from", first=first))
    if scope.read_up_to is not None:
        parts.append(Msg.of("scope_read_to", n=scope.read_up_to))
    return Msg.of("scope_applied", parts=parts)


# --------------------------------------------------------------------------- apply
def limit_chapters(chapters: Chapters | None, read_up_to: int | None) -> Chapters | None:
    """The chapter range to search under a spoiler limit ("read up to chapter N"): ``chapters``
    cut at N, or 0..N (front matter is chapter 0). An empty result (a range wholly after N) is
    returned as is, (a, b) with a > b, for the caller to report."""
    if read_up_to is None:
        return chapters
    if chapters is None:
        return (0, read_up_to)
    return (chapters[0], min(chapters[1], read_up_to))
