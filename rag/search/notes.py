"""What a search tells the trace, as message codes (the SEARCH dicts of ``rag.i18n``).

A search's notes ("budget 3/20", "cache hit (searxng, 527 s old)", "bocha failed ...") are the
``Msg``s of ``SearchOutcome.notes``; ``noted`` and ``outcome`` make the outcomes that carry them.

The agent's own search notices use ``failed`` and ``not_configured``; ``no_results`` is the note
for an answer without results, ``spoilers`` the one for web results past the spoiler limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.errors import RagError
from rag.i18n import Msg, PerLang
from rag.schemas import SearchOutcome


def noted(outcome: SearchOutcome, *, before: Sequence[Msg] = (), after: Sequence[Msg] = (),
          keep: bool = True, **changes: object) -> SearchOutcome:
    """``outcome`` with notes added ``before`` and ``after`` its own (dropped when ``keep`` is
    False) and other fields changed (``results``, ``cached``)."""
    notes = [*before, *(outcome.notes if keep else []), *after]
    fields = {"results": outcome.results, "provider": outcome.provider, "cached": outcome.cached, **changes}
    return SearchOutcome.model_validate({**fields, "notes": notes})


def outcome(results: object, provider: str, notes: Sequence[Msg] = ()) -> SearchOutcome:
    """A fresh outcome with its notes."""
    return SearchOutcome.model_validate({"results": results, "provider": provider, "notes": list(notes)})


# -- the notes


def budget(used: int, total: int | None, *, free: bool = False) -> Msg:
    """"budget 3/20" ("budget 3/unlimited"); ``free``: a cache hit that was not counted."""
    note = (Msg.of("search.budget_unlimited", used=used) if total is None
            else Msg.of("search.budget", used=used, total=total))
    return Msg.of("search.budget_free", budget=note) if free else note


def cache_hit(provider: str, age_s: float) -> Msg:
    return Msg.of("search.cache_hit", provider=provider, age=f"{age_s:.0f}")


def no_results(provider: str | None = None) -> Msg:
    """"no results", or "bocha: no results"."""
    return Msg.of("search.no_results") if provider is None else Msg.of("search.provider_no_results",
                                                                        provider=provider)


def failed(error: RagError | Msg | str) -> Msg:
    """The notice "web search failed: <why>" (an error)."""
    detail = error.msg if isinstance(error, RagError) else error
    return Msg.of("search.failed", level="error", detail=detail)


def not_configured() -> Msg:
    return Msg.of("search.not_configured", level="error")


def is_no_results(note: Msg) -> bool:
    """Whether ``note`` says the search found nothing (a provider's or the generic note)."""
    return note.code in {"search.no_results", "search.provider_no_results"}


def spoilers(limit: int, unit: PerLang | None = None) -> Msg:
    """"possible spoilers: web results may go beyond chapter 12" (a warning); ``unit``: the book's
    word for a chapter (None: the catalogue's neutral word)."""
    return Msg.of("search.spoilers", chapter=limit, unit=unit)
