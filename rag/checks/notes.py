"""What a check's detail or reason says, for code that decides on it: the message codes it holds
(``Msg`` params nested, ``join`` items included), never its wording."""

from __future__ import annotations

from rag.i18n import Msg


def codes(note: Msg | str | None) -> set[str]:
    """Every code in ``note`` (a ``Msg`` with its nested messages); plain text holds none."""
    if not isinstance(note, Msg):
        return set()
    found = {note.code}
    for value in note.params.values():
        for item in value if isinstance(value, list) else [value]:
            found |= codes(item) if isinstance(item, Msg) else set()
    return found
