"""The message type and the two catalogues: same codes, same fields, rendering in both languages."""

from __future__ import annotations

import string

import pytest

from rag.agent.names import NODES
from rag.i18n import Msg, PerLang, en, join, node_title, t, text, zh


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_catalogues_hold_the_same_codes_with_the_same_fields():
    assert set(en.CATALOGUE) == set(zh.CATALOGUE)
    for code, english in en.CATALOGUE.items():
        assert english and zh.CATALOGUE[code], code
        assert _fields(english) == _fields(zh.CATALOGUE[code]), code


def test_area_dicts_do_not_overlap():
    areas = [en.LABELS, en.NODES, en.BOOKS, en.AGENT, en.CHECKS, en.SEARCH, en.SETTINGS]
    assert sum(len(a) for a in areas) == len(en.CATALOGUE)


def test_every_node_has_a_title_in_both_languages():
    for node in NODES:
        assert node_title("zh", node) != node and node_title("en", node) != node
    assert node_title("zh", "no_such_node") == "no_such_node"


def test_a_label_renders_with_its_params_and_an_unknown_code_shows_itself():
    assert t("en", "hits", n=3) == "3 hits"
    assert t("zh", "hits", n=3) == "命中 3 段"
    assert t("zh", "no.such.code") == "no.such.code"


def test_nested_messages_and_joins_render_in_the_language_asked():
    inner = Msg.of("hits", n=2)
    joined = join([inner, "HTTP 503"])
    assert text("en", joined) == "2 hits; HTTP 503"
    assert text("zh", joined) == "命中 2 段；HTTP 503"
    assert str(inner) == "2 hits"


def test_a_join_takes_the_worst_level_of_its_items():
    assert join([Msg.of("hits", n=1), Msg.of("hits", level="warning", n=2)]).level == "warning"


def test_a_message_survives_json():
    msg = join([Msg.of("hits", n=2, level="warning"), "x"])
    again = Msg.model_validate_json(msg.model_dump_json())
    assert again == msg and again.text("zh") == msg.text("zh")


@pytest.mark.parametrize("value", [None, ""])
def test_nothing_renders_empty(value):
    assert text("zh", value) == ""


def test_a_param_a_message_was_not_given_is_the_catalogues_default():
    assert t("zh", "chapter_from") == "从第几章" and t("en", "chapter_from") == "From chapter"
    assert t("zh", "chapter_from", unit="回") == "从第几回"


def test_with_params_reaches_nested_messages_and_keeps_their_own():
    from rag.i18n import with_params

    msg = Msg.of("scope_applied", parts=[Msg.of("scope_range_to", first=3, last=27), Msg.of("scope_read_to", n=5)])
    assert text("zh", with_params(msg, unit="回")) == "提问将检索：第 3 至 27 回；不用第 5 回之后的内容。"
    own = Msg.of("chapter_to", unit="节")
    assert text("zh", with_params(own, unit="回")) == "到第几节"
    assert text("zh", msg) == "提问将检索：第 3 至 27 章；不用第 5 章之后的内容。"  # unchanged, the default word


def test_a_per_language_param_is_chosen_when_rendered_and_an_empty_one_is_the_default():
    msg = Msg.of("agent.spoiler_limit", chapter=5, unit=PerLang(zh="回", en="part"))
    assert text("zh", msg) == "防剧透：只检索第 5 回及以前的内容"
    assert text("en", msg) == "spoiler limit: only parts up to 5 are searched"
    english_only = Msg.of("agent.spoiler_limit", chapter=5, unit=PerLang(en="part"))
    assert text("zh", english_only) == "防剧透：只检索第 5 章及以前的内容"  # no Chinese word: the default
    assert text("en", Msg.of("agent.spoiler_limit", chapter=5, unit=PerLang())) == \
        "spoiler limit: only chapters up to 5 are searched"
    assert t("zh", "chapter_from", unit="") == t("zh", "chapter_from", unit=None) == "从第几章"
    assert t("en", "hits", n="") == " hits"  # a param without a default stays as given
    again = Msg.model_validate_json(msg.model_dump_json())
    assert again == msg and isinstance(again.params["unit"], PerLang) and text("zh", again) == text("zh", msg)
