"""The Gradio UI. ``build_app(deps, index=None, make_deps=None) -> gr.Blocks``; the pure
events -> UI state translation is in ``rag.ui.translate`` (no Gradio import there).

Importing this package does not import Gradio; ``build_app`` and ``main`` import it lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import gradio as gr

    from rag.agent.deps import Deps


def build_app(deps: Deps, index: Any | None = None, make_deps: Any | None = None, **kwargs: Any) -> gr.Blocks:
    """See ``rag.ui.blocks.build_app``."""
    from rag.ui.blocks import build_app as _build_app

    return _build_app(deps, index=index, make_deps=make_deps, **kwargs)


def main(argv: list[str] | None = None) -> None:
    """See ``rag.ui.serve.main``."""
    from rag.ui.serve import main as _main

    _main(argv)


__all__ = ["build_app", "main"]
