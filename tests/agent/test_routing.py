"""Book terms that force retrieval: names the book uses count, words every text has do not."""

from __future__ import annotations

from rag.agent.routing import book_terms
from rag.schemas import Passage

BOOK = [Passage(id=str(i), text=t) for i, t in enumerate([
    "孙悟空在花果山称王，手持金箍棒。", "唐僧收孙悟空为徒，赐名行者。", "孙悟空三打白骨精，唐僧不信。",
    "猪八戒贪吃，唐僧常护着他。", "沙僧挑着担子，跟着唐僧西行。", "火焰山挡路，孙悟空去借芭蕉扇。",
    "What is a novel? Sun Wukong appears here.", "Wukong again.", "Wukong once more.",
])]


def test_names_the_book_uses_are_found_longest_first() -> None:
    assert book_terms("孙悟空的金箍棒有多重？", BOOK) == ["孙悟空"]
    assert book_terms("唐僧是谁？", BOOK) == ["唐僧"]  # two characters: needs three passages
    assert book_terms("Who is Wukong?", BOOK) == ["Wukong"]


def test_general_questions_and_rare_words_do_not_count() -> None:
    assert book_terms("什么是章回体小说？", BOOK) == []
    assert book_terms("芭蕉扇是什么？", BOOK) == []  # in one passage only
    assert book_terms("What is a novel?", BOOK) == []
    assert book_terms("", BOOK) == [] and book_terms("孙悟空", []) == []
