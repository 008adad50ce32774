"""How a question is routed when the code decides (``CodeRoute``), and the check that decides it.

Book questions are not answered from memory: when the router says "simple" but the question
names things the loaded book itself talks about, the question goes to retrieval anyway.

Pure: given the question and the passages a search for it returned, which of the question's terms
does the book use? A term is a run of 2–6 Han characters (or a Latin word of 4+ letters) found
verbatim in several of the passages; words that any text has (什么, 一个, the...) never count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic.json_schema import SkipJsonSchema

from rag.checks import is_han
from rag.i18n import Msg
from rag.schemas import Passage, RouteDecision

# Runs that every Chinese text has, whatever the book: question words, pronouns, numerals, particles.
_COMMON = set("的了是在和有不也就都而及与之其这那个们被把为以于中上下一吗呢吧啊么什怎谁哪几多少我你他她它请问说")
_COMMON_EN = {"what", "which", "when", "where", "does", "that", "this", "with", "from", "have", "there", "their",
              "about", "book", "story", "would", "could", "should", "many", "much", "tell", "explain", "please"}
MIN_PASSAGES = 2  # a term of 3+ characters must occur in this many passages
MIN_PASSAGES_SHORT = 3  # a two-character term (沙僧, 唐僧) in this many


def _han_runs(text: str) -> list[str]:
    return re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", text)


def _candidates(question: str) -> list[str]:
    grams: set[str] = set()
    for run in _han_runs(question):
        for n in range(2, min(6, len(run)) + 1):
            for i in range(len(run) - n + 1):
                gram = run[i:i + n]
                if gram[0] not in _COMMON and gram[-1] not in _COMMON:
                    grams.add(gram)
    for word in re.findall(r"[A-Za-z]{4,}", question):
        if word.lower() not in _COMMON_EN:
            grams.add(word)
    return sorted(grams, key=lambda g: (-len(g), g))


def book_terms(question: str, passages: Sequence[Passage]) -> list[str]:
    """The question's terms that the book uses (longest first; a term inside a longer hit is dropped)."""
    texts = [p.text for p in passages]
    lowered = [t.lower() for t in texts]
    hits: list[str] = []
    for term in _candidates(question):
        if any(term in longer for longer in hits):
            continue
        latin = not is_han(term[0])
        found = sum(1 for t in (lowered if latin else texts) if (term.lower() if latin else term) in t)
        needed = MIN_PASSAGES_SHORT if len(term) == 2 or latin else MIN_PASSAGES
        if found >= needed:
            hits.append(term)
    return hits


class CodeRoute(RouteDecision):
    """A route the code decided or overrode. ``why`` says why as a message, rendered in the
    reader's language; ``reason`` keeps its English text (logs, the CLI), as a router's would be."""

    why: SkipJsonSchema[Msg]

    @classmethod
    def of(cls, why: Msg, strategy: str = "complex") -> CodeRoute:
        return cls(strategy=strategy, reason=str(why), why=why)  # type: ignore[arg-type]


def route_reason(route: RouteDecision) -> Msg | str:
    """Why ``route`` was taken: the code's message, else the router's own words."""
    return route.why if isinstance(route, CodeRoute) else route.reason


def by_code(terms: Sequence[str]) -> CodeRoute:
    """Retrieval decided by code, without a router call: the book uses ``terms``."""
    return CodeRoute.of(Msg.of("route.by_code", names=_names(terms)))


def book_chosen() -> CodeRoute:
    """Retrieval because the reader chose a book and the model is too small to be asked whether the
    question is about it (a 1.5B router sent book questions to its own memory)."""
    return CodeRoute.of(Msg.of("route.book_chosen"))


def router_failed(error: Msg | str) -> CodeRoute:
    """Retrieval because the router gave no usable decision."""
    return CodeRoute.of(Msg.of("route.router_failed", error=error))


def overruled(route: RouteDecision, terms: Sequence[str]) -> CodeRoute:
    """Retrieval although the router said "simple": the book uses ``terms`` (its reason is kept)."""
    return CodeRoute.of(Msg.of("route.book_terms", reason=route.reason, names=_names(terms)))


def _names(terms: Sequence[str]) -> str:
    return "、".join(terms[:3])
