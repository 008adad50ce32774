"""The loopback OpenAI-compatible stub lives in ``rag.testing.openai_stub`` (``rag eval --replay`` serves
recorded replies through it too); tests import it from here."""

from rag.testing.openai_stub import HANG, OpenAIStub, Responder, Trickle, request_kind

__all__ = ["HANG", "OpenAIStub", "Responder", "Trickle", "request_kind"]
