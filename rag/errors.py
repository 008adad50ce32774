"""A tiny error hierarchy. Messages are meant for users; they never contain secrets."""

from __future__ import annotations


class RagError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(RagError):
    """Settings are missing or invalid (for example an API key that is not set)."""


class LLMError(RagError):
    """The language model could not be reached or answered with something unusable."""


class BookError(RagError):
    """A book could not be read or indexed (broken file, DRM, empty, wrong encoding...)."""


class IndexError_(RagError):
    """The book index (Chroma store or keyword index) failed."""


class SearchError(RagError):
    """A web search provider failed. ``provider`` names it; the message never holds a key."""

    def __init__(self, provider: str, message: str) -> None:
        self.provider = provider
        super().__init__(f"{provider}: {message}")
