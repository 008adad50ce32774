"""The message type and its rendering.

``Msg(code, params, level)``: ``code`` names an entry of the catalogues (``rag.i18n.en`` /
``rag.i18n.zh``); ``params`` fill its ``{name}`` fields and may themselves be messages (or lists of
messages, joined by the language's separator), so a notice can carry the detail that caused it;
``level`` (info, warning, error) is the emitter's, not read from the wording. A param that is a
plain string is data (a file name, a provider's own error text) and is shown as it is; a ``PerLang``
is a word said differently per language (a book's word for a chapter). A param left out, or left
empty, is the catalogue's default for it where it has one (``param.<name>``): the neutral word for a
chapter where the book's own is not known.

A ``Msg`` is a frozen pydantic model: it sits in the graph's state, survives the checkpointer and
dumps to JSON as ``{"code", "params", "level"}``. ``str(msg)`` is its English text (for logs and the
CLI's English output). Every text function takes the language first: ``t(lang, code, **params)``,
``text(lang, msg)``.
"""

from __future__ import annotations

import logging
import string
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)

Lang = Literal["zh", "en"]
LANGS: tuple[Lang, ...] = ("zh", "en")
Level = Literal["info", "warning", "error"]

#: The code of a message that is only its ``items`` joined (``join``).
JOIN = "join"
_SEPARATOR = {"zh": "；", "en": "; "}
_LEVELS: tuple[Level, ...] = ("info", "warning", "error")


class Msg(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    params: dict[str, Param] = Field(default_factory=dict)
    level: Level = "info"

    @classmethod
    def of(cls, code: str, /, level: Level = "info", **params: Any) -> Msg:
        """``Msg.of("book.empty_file", name="a.txt")``. ``code`` is positional only, so a message may
        have a param named ``code`` (a provider's error code)."""
        return cls(code=code, params=params, level=level)

    def text(self, lang: str = "en") -> str:
        return text(lang, self)

    def __str__(self) -> str:
        return text("en", self)


class PerLang(BaseModel):
    """A param said differently in each language, chosen when the message is rendered: e.g. a
    book's word for a chapter in its Chinese headings (回, 章) and in its English ones (part). ""
    where it has none: the catalogue's default for the param then (``param.<name>``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    zh: str = ""
    en: str = ""


Param = Union[Msg, list[Msg], PerLang, str, int, float, bool, None]  # noqa: UP007 - pydantic reads it at run time
Msg.model_rebuild()


def join(items: list[Msg | str], level: Level | None = None) -> Msg:
    """One message that shows ``items`` one after another ("a; b" in English, "a；b" in Chinese)."""
    msgs = [m if isinstance(m, Msg) else Msg.of("text", value=m) for m in items]
    worst: Level = "info"
    for m in msgs:
        if _LEVELS.index(m.level) > _LEVELS.index(worst):
            worst = m.level
    return Msg(code=JOIN, params={"items": msgs}, level=level or worst)


def codes(message: object) -> set[str]:
    """Every code in ``message``: its own and those of the messages in its params (nested, joined)."""
    if not isinstance(message, Msg):
        return set()
    found = {message.code}
    for value in message.params.values():
        for item in value if isinstance(value, list) else [value]:
            found |= codes(item)
    return found


def _catalogue(lang: str) -> dict[str, str]:
    from rag.i18n import en, zh  # the catalogues are plain dicts; imported on first use

    return zh.CATALOGUE if lang == "zh" else en.CATALOGUE


def _default(key: str, lang: str) -> str | None:
    """The catalogue's default for the param ``key`` (``param.<key>``), None when it has none."""
    return _catalogue(lang).get(f"param.{key}") or _catalogue("en").get(f"param.{key}")


class _Fields(dict):
    """A message's params (rendered); a param it was not given, or given empty where the catalogue
    has a default for it (``param.<name>``), is that default: e.g. the word for a chapter when the
    page does not know the book's own, or the book has no numbered headings to tell it."""

    def __init__(self, values: dict[str, Any], lang: str) -> None:
        super().__init__({k: v for k, v in values.items() if v != "" or _default(k, lang) is None})
        self.lang = lang

    def __missing__(self, key: str) -> str:
        default = _default(key, self.lang)
        return default if default is not None else "{" + key + "}"


def _param(value: Any, lang: str) -> Any:
    if isinstance(value, Msg):
        return text(lang, value)
    if isinstance(value, PerLang):
        return value.zh if lang == "zh" else value.en
    if isinstance(value, (list, tuple)):
        return _SEPARATOR.get(lang, "; ").join(str(_param(v, lang)) for v in value)
    if value is None:
        return ""
    return value


def text(lang: str, message: Msg | str | None) -> str:
    """``message`` in ``lang`` (``zh`` or ``en``). A code missing from the language's catalogue
    falls back to English, then to the code itself; a plain string is returned as it is."""
    if message is None:
        return ""
    if isinstance(message, str):
        return message
    if message.code == JOIN:
        return str(_param(message.params.get("items") or [], lang))
    if message.code == "text":
        return str(message.params.get("value") or "")
    template = _catalogue(lang).get(message.code) or _catalogue("en").get(message.code)
    if template is None:
        logger.warning("no text for message code %r", message.code)
        return message.code
    fields = _Fields({k: _param(v, lang) for k, v in message.params.items()}, lang)
    try:
        return string.Formatter().vformat(template, (), fields)
    except (ValueError, IndexError, KeyError, TypeError):
        logger.warning("message code %r: its params do not fit its text", message.code)
        return template


def with_params(message: Msg, **params: Param) -> Msg:
    """``message`` with ``params`` added to it and to every message nested in its params, where a
    message does not have them already: context the emitter did not know (the book's own word for
    a chapter, which the page knows) for whichever of its texts uses it."""
    def add(value: Any) -> Any:
        if isinstance(value, Msg):
            return with_params(value, **params)
        if isinstance(value, list):
            return [add(v) for v in value]
        return value

    own = {k: add(v) for k, v in message.params.items()}
    return Msg(code=message.code, params={**params, **own}, level=message.level)


def t(lang: str, key: str, **params: Any) -> str:
    """A UI label or fixed text by its code, in ``lang``, with ``params`` filled in."""
    return text(lang, Msg(code=key, params=params))


def node_title(lang: str, node: str) -> str:
    """A node's title in the trace; an unknown node shows its own name."""
    code = f"node.{node}"
    return t(lang, code) if code in _catalogue("en") else node


def pick_language(setting: str | None, accept_language: str | None = None) -> Lang:
    """The UI language: an explicit ``zh``/``en`` setting wins; ``auto`` follows the browser's
    Accept-Language header (first of zh/en by quality order), defaulting to Chinese."""
    for lang in LANGS:
        if setting == lang:
            return lang
    if accept_language:
        ranked: list[tuple[float, int, str]] = []
        for pos, part in enumerate(accept_language.split(",")):
            bits = part.strip().split(";")
            tag = bits[0].strip().lower()
            quality = 1.0
            for bit in bits[1:]:
                bit = bit.strip()
                if bit.startswith("q="):
                    try:
                        quality = float(bit[2:])
                    except ValueError:
                        quality = 0.0
            ranked.append((-quality, pos, tag))
        for _, _, tag in sorted(ranked):
            primary = tag.split("-")[0]
            for lang in LANGS:
                if primary == lang:
                    return lang
    return "zh"
