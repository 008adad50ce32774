"""Every text a reader sees, in Chinese and English, from codes.

The code never writes a sentence for the reader: it emits ``Msg(code, params, level)`` and the UI
(or the CLI) renders it with ``text(lang, msg)`` from the language's catalogue (``rag.i18n.en``,
``rag.i18n.zh``). Decisions read a message's ``code`` and ``level``, never its wording. UI labels are
codes too: ``t(lang, "send")``.
"""

from __future__ import annotations

from rag.i18n.msg import (
           LANGS,
           Lang,
           Level,
           Msg,
           PerLang,
           codes,
           join,
           node_title,
           pick_language,
           t,
           text,
           with_params,
)

__all__ = ["LANGS", "Lang", "Level", "Msg", "PerLang", "codes", "join", "node_title", "pick_language", "t", "text",
           "with_params"]
