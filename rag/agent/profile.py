"""The turn profile (``TURN_PROFILE``): how many and how long the model calls of one turn are.

- ``full``: every call as designed (router, query rewrite, the judge with its few-shot examples,
  passages up to ``MAX_PASSAGE_CHARS``, the answer writer's own prompt).
- ``compact``, for a small model on a CPU (measured: the 1.5B spent 43-152 s on a route or a rewrite
  call and 360-400 s judging): the router is called only when the book-term check does not decide,
  no query rewrite, no judge few-shot, passages cut so that the judge's prompt and the answer fit a
  4k context, and the answer is asked for after the judge's own prompt, so that llama.cpp reuses the
  cached prefix (system prompt + sources) instead of reading the sources again.
- ``small``, the compact profile's successor for the same models: code chooses the sentences of the
  passages that bear on the question and the model only picks, for each part of the question, the
  sentence that states the answer and copies its words (``rag.agent.extract``: one call of ~1,000
  tokens); the answer shown is those words with their quote, checked, or the chosen sentences under a
  line that says they were found but not confirmed. No second call writes prose.
- ``auto`` (default): small when the model is the embedded local one (``rag.llm.is_local_model``) or
  its name says 3B parameters or fewer ("qwen2.5-1.5b-instruct", "0.5b", "llama-3.2-3b", "270m").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from rag.config import Settings
from rag.llm import endpoint_host, is_local_model, model_name, self_hosted

Profile = Literal["full", "compact", "small"]
SMALL_MAX_B = 3.0  # parameters, in billions, of the largest model the compact profile is for
COMPACT_CTX = 4096  # tokens, the context the compact profile fits (LOCAL_CTX when that is smaller)
# What the compact prompt needs besides the sources: the judge's system prompt and question (~500
# tokens), the judge's findings and the answer request (~350), the answer itself (~600), slack.
COMPACT_RESERVED_TOKENS = 1600
TOKENS_PER_CHAR = 0.85  # Qwen2.5's tokenizer on the sample guide's Chinese: 716 tokens for 859 characters
MIN_PASSAGE_CHARS = 160  # never cut a passage shorter than this, however many there are

def model_size_b(name: str) -> float | None:
    """The largest parameter count a model name states, in billions ("qwen2.5-coder-1.5b" -> 1.5,
    "qwen3-30b-a3b" -> 30, "gemma-3-270m" -> 0.27); None when the name states none."""
    sizes = []
    for part in re.split(r"[-_:/\s]+", name.lower()):
        # the size as a word of its own ("1.5b", "a3b") or after the family's name ("qwen1.5b")
        m = re.fullmatch(r"[a-z]*?(\d+(?:\.\d+)?)([bm])", part)
        if m:
            value = float(m.group(1))
            sizes.append(value if m.group(2) == "b" else value / 1000)
    return max(sizes) if sizes else None


def is_small(name: str) -> bool:
    size = model_size_b(name)
    return size is not None and size <= SMALL_MAX_B


def small_model(llm: Any | None) -> bool:
    """Whether ``llm`` is the embedded model or a small one by its name: the judge's "enough" is then
    not taken for the parts code cannot decide (``JudgeConfig.strict``). Measured on the recorded
    replies: a 1.5B model's invented coverage, taken where code could not decide, raised its false
    "enough" from 2 to 7 of 86 not-enough cases; a capable model's stayed where it was."""
    return llm is not None and (is_local_model(llm) or is_small(model_name(llm)))


def hosted_capable(llm: Any | None) -> bool:
    """Whether ``llm`` is a hosted API's model that is not small (OpenAI, DeepSeek, DashScope...): the
    one the ``auto`` model checks ask (a short call per verified part and per cited sentence). Not a
    self-hosted server (often a small model on a CPU: each call costs seconds to minutes), nor a chat
    model that is not an OpenAI-compatible client."""
    return llm is not None and not small_model(llm) and endpoint_host(llm) is not None and not self_hosted(llm)


def turn_profile(settings: Settings, llm: Any | None) -> Profile:
    """The profile a turn runs with: the setting, or for ``auto`` what the model is."""
    chosen = settings.turn_profile
    if chosen != "auto":
        return chosen
    if llm is None:
        return "full"
    if is_local_model(llm):  # the embedded model (rag.local)
        return "small"
    return "small" if is_small(model_name(llm)) else "full"


@dataclass(frozen=True)
class ProfileTraits:
    """What a profile changes in a turn, as data (``PROFILES``): the nodes read these, never the
    profile's name."""

    route_by_code_first: bool  # the book-term check before the router: a question naming the book's terms skips it
    rewrite_query: bool  # the query rewrite before the book search
    few_shot: bool  # the judge's few-shot examples (when the setting allows them)
    fit_passages: bool  # passages cut so that the judge's prompt and the answer fit ``context_tokens``
    answer_after_judge: bool  # the answer asked for after the judge's own prompt (llama.cpp's cached prefix)
    extract_answer: bool = False  # the model copies the answer out of sentences code chose; code writes the answer
    ask_router: bool = True  # with a book chosen, the router is asked whether a question is about it


PROFILES: dict[Profile, ProfileTraits] = {
    "full": ProfileTraits(route_by_code_first=False, rewrite_query=True, few_shot=True, fit_passages=False,
                          answer_after_judge=False),
    "compact": ProfileTraits(route_by_code_first=True, rewrite_query=False, few_shot=False, fit_passages=True,
                             answer_after_judge=True),
    # small: the prompt holds chosen sentences, not passages: nothing to fit
    "small": ProfileTraits(route_by_code_first=True, rewrite_query=False, few_shot=False, fit_passages=False,
                           answer_after_judge=False, extract_answer=True, ask_router=False),
}


def context_tokens(settings: Settings) -> int:
    """The context the compact profile fits: 4096 tokens, or ``LOCAL_CTX`` when that is smaller
    (a longer prompt costs a small model on a CPU more time than it gains)."""
    return max(512, min(int(settings.local_ctx), COMPACT_CTX))


def passage_budget(settings: Settings) -> float:
    """Characters the compact prompt holds for all book passages together."""
    return max(0, context_tokens(settings) - COMPACT_RESERVED_TOKENS) / TOKENS_PER_CHAR


def chars_each(budget: float | None, max_chars: int, n_passages: int) -> int:
    """Characters of each of ``n_passages`` book passages: ``max_chars``, or with a ``budget`` for all
    of them together their share of it (at most ``max_chars``, at least ``MIN_PASSAGE_CHARS``)."""
    if budget is None:
        return max_chars
    per = int(budget // max(1, n_passages))
    return max(MIN_PASSAGE_CHARS, min(max_chars, per))


def passage_chars(settings: Settings, n_passages: int) -> int:
    """Characters of each of ``n_passages`` book passages the compact prompt can hold (at most
    ``MAX_PASSAGE_CHARS``, at least ``MIN_PASSAGE_CHARS``)."""
    return chars_each(passage_budget(settings), settings.max_passage_chars, n_passages)
