"""Enough RAG web app. ``python app.py`` serves on http://127.0.0.1:7860 (0.0.0.0:7860 on a
Hugging Face Space). Settings come from the environment / ``.env`` (see rag.config.Settings)."""

from __future__ import annotations

from rag.ui import build_app, main

__all__ = ["build_app", "main"]

if __name__ == "__main__":
    main()
