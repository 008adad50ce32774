"""The scope panel's fields read and checked: "from chapter", "to chapter" and "I have read up to".
The fields are text, so an empty field is empty (the whole book, no limit), never a hidden 0 that
Gradio's preprocessing would refuse before the turn could say why; a chapter may be written as
``27``, ``二十七`` or ``XII`` (``rag.index.chapters.parse_number``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.i18n import Msg
from rag.index.chapters import parse_number
from rag.ui.api import chapter_range

FIELDS = ("chapter_from", "chapter_to", "read_up_to")  # the i18n codes of the fields' labels


class ScopeInvalid(ValueError):
    """A scope field that is not a chapter number; ``msg`` says which and why."""

    def __init__(self, msg: Msg) -> None:
        self.msg = msg
        super().__init__(str(msg))


@dataclass(frozen=True)
class Scope:
    chapters: tuple[int, int] | None = None
    read_up_to: int | None = None

    @property
    def whole_book(self) -> bool:
        return self.chapters is None and self.read_up_to is None


def chapter_field(value: Any, field: str) -> int | None:
    """One field: None when empty, else a chapter number ≥ 1; ``ScopeInvalid`` otherwise."""
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


def parse_scope(first: Any, last: Any, read_to: Any) -> Scope:
    """The three fields as a ``Scope`` (empty fields: the whole book; from > to is read the other way
    round); ``ScopeInvalid`` for a field that is not a chapter number."""
    a, b = chapter_field(first, "chapter_from"), chapter_field(last, "chapter_to")
    return Scope(chapters=chapter_range(a, b), read_up_to=chapter_field(read_to, "read_up_to"))


def scope_summary(scope: Scope) -> Msg:
    """What Apply says: the whole book, or the range and the spoiler limit in words."""
    if scope.whole_book:
        return Msg.of("scope_whole_book")
    first, last = scope.chapters or (1, 0)
    parts = []
    if scope.chapters is not None:
        parts.append(Msg.of("scope_range_to", first=first, last=last) if last < 10**6
                     else Msg.of("scope_range_from", first=first))
    if scope.read_up_to is not None:
        parts.append(Msg.of("scope_read_to", n=scope.read_up_to))
    return Msg.of("scope_applied", parts=parts)
