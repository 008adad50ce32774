"""Enough RAG: agentic RAG over a book that judges whether what it found is enough.

Importing this package does no I/O and creates no clients.
"""

__version__ = "0.1.0"
