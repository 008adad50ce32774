"""Other names of a person, read from the book itself (no model): novels of this kind introduce a
person once as 姓X，名Y，字Z ("覆姓诸葛，名亮，字孔明"; "字长生，后改云长") and then mostly use the
courtesy name: 三国演义 says 孔明 ten times as often as 诸葛亮, 玄德 six times as often as 刘备. A
question that says 诸葛亮 is also searched (by keyword) as if it said 孔明, and the other way round.

A name two people share is left out. Built from a book's chunks in a few milliseconds when first needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_HAN = r"[\u4e00-\u9fff]"
_INTRODUCTION = re.compile(
    rf"姓({_HAN}{{1,2}})[，,、]?\s*名({_HAN}{{1,2}})[，,、]\s*字({_HAN}{{2}})(?:[，,]\s*后改({_HAN}{{2}}))?")


def build_aliases(texts: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """name -> the other names of the same person, from the book's introductions of people."""
    people: list[set[str]] = []
    for text in texts:
        for m in _INTRODUCTION.finditer(text):
            surname, given, courtesy, later = m.groups()
            names = {surname + given, courtesy, surname + courtesy}
            if later:
                names |= {later, surname + later}
            if not any(names <= known for known in people):
                people.append(names)
    owners: dict[str, set[int]] = {}
    for i, names in enumerate(people):
        for name in names:
            owners.setdefault(name, set()).add(i)
    merged: dict[str, set[str]] = {}
    for name, who in owners.items():
        if len(who) == 1:
            merged.setdefault(name, set()).update(n for n in people[next(iter(who))] if len(owners[n]) == 1)
    return {name: tuple(sorted(others - {name}, key=lambda n: (len(n), n))) for name, others in merged.items()
            if others - {name}}


def alias_queries(query: str, aliases: dict[str, tuple[str, ...]], limit: int = 2) -> list[str]:
    """``query`` with the names it uses replaced by their other names (at most ``limit`` variants)."""
    names = sorted((n for n in aliases if n in query), key=len, reverse=True)
    names = [n for i, n in enumerate(names) if not any(n in longer for longer in names[:i])]  # 诸葛亮, not 亮
    variants: list[str] = []
    for k in range(limit):
        text = query
        for name in names:
            others = aliases[name]
            text = text.replace(name, others[min(k, len(others) - 1)])
        if names and text != query and text not in variants:
            variants.append(text)
    return variants
