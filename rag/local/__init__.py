"""The embedded local model: llama.cpp in this process (``rag.local.runtime``)."""

from rag.local.runtime import LocalRuntime, LocalRuntimeError

__all__ = ["LocalRuntime", "LocalRuntimeError"]
