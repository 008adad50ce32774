"""Chapter scopes of a question: a range the user chose (``--chapter 3-7``), and a spoiler limit
("I have read up to chapter N"). Pure functions, shared by the CLI, the graph's nodes and the index."""

from __future__ import annotations

import re

Chapters = tuple[int, int]


def parse_chapter_range(text: str) -> tuple[int, int]:
    """'27' -> (27, 27), '3-7' / '3..7' / '3–7' -> (3, 7). Raises ValueError on anything else."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:(?:-|–|\.\.|~|to)\s*(\d+))?\s*", text or "")
    if not m:
        raise ValueError(f"not a chapter or chapter range: {text!r} (e.g. 27 or 3-7)")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if lo > hi:
        raise ValueError(f"empty chapter range: {text!r}")
    return lo, hi


def limit_chapters(chapters: Chapters | None, read_up_to: int | None) -> Chapters | None:
    """The chapter range to search under a spoiler limit ("read up to chapter N"): ``chapters``
    cut at N, or 0..N (front matter is chapter 0). An empty result (a range wholly after N) is
    returned as is, (a, b) with a > b, for the caller to report."""
    if read_up_to is None:
        return chapters
    if chapters is None:
        return (0, read_up_to)
    return (chapters[0], min(chapters[1], read_up_to))


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
