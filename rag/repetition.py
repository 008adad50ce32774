"""A small model's loops ("武松筛杯酒，武松筛杯酒，…" until the token cap): llama.cpp's repeat and
DRY penalties that make one less likely (``repetition_options``, request fields for self-hosted
servers), and the check that stops a streamed reply caught in one anyway (``repeated_tail``)."""

from __future__ import annotations

from typing import Any

from rag.config import Settings

#: llama.cpp's repetition penalties (request fields of its server, and of the embedded runtime's).
REPETITION_KEYS = ("repeat_penalty", "repeat_last_n", "dry_multiplier", "dry_base", "dry_allowed_length",
                   "dry_penalty_last_n")


def repetition_options(settings: Settings) -> dict[str, Any]:
    """llama.cpp's repeat and DRY penalties as request fields (``LLM_REPEAT_PENALTY``,
    ``LLM_DRY_MULTIPLIER``...), for self-hosted servers only: a small model otherwise loops on a
    clause to its token cap. A penalty that is off (repeat 1.0, DRY 0) is not sent."""
    options: dict[str, Any] = {}
    if settings.llm_repeat_penalty != 1.0:
        options.update(repeat_penalty=settings.llm_repeat_penalty, repeat_last_n=settings.llm_repeat_last_n)
    if settings.llm_dry_multiplier > 0:
        options.update(dry_multiplier=settings.llm_dry_multiplier, dry_base=settings.llm_dry_base,
                       dry_allowed_length=settings.llm_dry_allowed_length,
                       dry_penalty_last_n=settings.llm_dry_penalty_last_n)
    return options


#: A loop: the same clause of at least REPEAT_MIN_CHARS (and at most REPEAT_MAX_CHARS) characters
#: REPEAT_TIMES times in a row at the end of the text; one with fewer than two different letters,
#: digits or CJK characters in it ("------", "| --- ", "0000") is a layout, not a loop.
REPEAT_MIN_CHARS = 6
REPEAT_MAX_CHARS = 200
REPEAT_TIMES = 3
_SENTENCE_ENDS = "。！？!?.\n"


def repeated_tail(text: str, *, min_chars: int = REPEAT_MIN_CHARS, times: int = REPEAT_TIMES,
                  max_chars: int = REPEAT_MAX_CHARS) -> int | None:
    """Where ``text`` should end if its tail repeats one clause ``times`` times in a row: just
    after the clause's first time (the text up to there is kept); None when it does not."""
    n = len(text)
    for size in range(min_chars, min(max_chars, n // times) + 1):
        if text[-1] != text[-1 - size]:
            continue
        span = size * (times - 1)
        if text[n - span:] != text[n - span - size:n - size]:
            continue
        if len({ch for ch in text[n - size:] if ch.isalnum()}) < 2:
            continue
        start = n - span - size  # the periodic run reaches back as far as the text repeats itself
        while start > 0 and text[start - 1] == text[start - 1 + size]:
            start -= 1
        return start + size
    return None


def capped(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, after the last sentence end in its second
    half when there is one."""
    head = text[:max_chars]
    end = max(head.rfind(ch) for ch in _SENTENCE_ENDS)
    return head[:end + 1] if end + 1 > max_chars // 2 else head
