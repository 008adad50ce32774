"""English questions on a Chinese book without a model (rag.crosslingual): names read as pinyin
and matched in the book's own text, other words by CC-CEDICT gloss, only words the book uses; and the
search itself, which adds the Chinese terms as one more query and says so."""

from __future__ import annotations

from pathlib import Path

from conftest import make_settings
from index_fakes import BigramEmbedder, MemoryVectors

from rag.crosslingual import BookText, Glossary, chinese_terms, glossary, script_of, segmentations
from rag.index import BookIndex, IndexConfig

# CC-CEDICT lines, as the dictionary writes them (a handful: enough to test the lookups)
LINES = """\
# CC-CEDICT test excerpt
囚禁 囚禁 [qiu2 jin4] /to imprison/captivity/
監禁 监禁 [jian1 jin4] /to imprison/to jail/
山 山 [shan1] /mountain/hill/CL:座[zuo4]/
九 九 [jiu3] /nine/
琵琶 琵琶 [pi2 pa5] /pipa, Chinese lute/
琵 琵 [pi2] /see 琵琶/
琶 琶 [pa2] /see 琵琶/
朱 朱 [Zhu1] /surname Zhu/vermilion/
紫 紫 [zi3] /purple/violet/
珠 珠 [zhu1] /bead/pearl/
子 子 [zi3] /son/child/
竹 竹 [zhu2] /bamboo/
國王 国王 [guo2 wang2] /king/
重 重 [zhong4] /heavy/weight/
洞 洞 [dong4] /cave/hole/
貓 猫 [mao1] /cat/
青 青 [qing1] /green/
龍 龙 [long2] /dragon/
龍王 龙王 [Long2 wang2] /Dragon King (mythology)/
""".splitlines()

BOOK = ("朱紫国的国王病了三年。行者到了朱紫国，揭了皇榜。朱紫国王请他诊脉。"
        "那妖精被囚禁在琵琶洞里，洞前有一座大山。珠子落在地上。")


def test_capitalised_names_are_found_in_the_book_by_their_pinyin() -> None:
    g = Glossary.from_lines(LINES)
    book = BookText([BOOK])
    # 朱紫 is in no dictionary here; the book spells "Zhuzi" that way three times (珠子 only once)
    assert chinese_terms("How did the doctor treat the king of Zhuzi?", book, g)[:2] == ["朱紫", "国王"]
    assert "琵琶" in chinese_terms("Who was imprisoned in Pipa Cave?", book, g)
    assert segmentations("zhuzi", g.syllables) == [["zhu", "zi"]]
    assert segmentations("monkey", g.syllables) == []


def test_spelled_finds_every_string_a_scan_of_the_text_finds() -> None:
    import itertools
    import random
    from collections import Counter

    g = Glossary.from_lines(LINES)
    rng = random.Random(7)
    alphabet = "朱紫珠子竹国王重洞山九琵琶猫青龙，。"
    text = "".join(rng.choice(alphabet) for _ in range(3000)) + BOOK + "朱紫"  # a match at the very end
    book = BookText([text])

    def scan(syllables: list[str]) -> list[str]:  # every window whose characters read as the syllables
        n = len(syllables)
        hits = Counter(text[p : p + n] for p in range(len(text) - n + 1)
                       if all(text[p + i] in g.chars_of.get(s, ()) for i, s in enumerate(syllables)))
        top = max(hits.values(), default=0)
        return [w for w, c in hits.most_common(3) if c >= max(2, top / 4)]

    readings = sorted(g.syllables)
    tried = 0
    for syllables in itertools.chain(itertools.product(readings, repeat=2), itertools.product(readings[:6], repeat=3)):
        assert book.spelled(list(syllables), g) == scan(list(syllables)), syllables
        tried += bool(scan(list(syllables)))
    assert tried > 20  # many readings are really found, not only empty answers
    # the book's last characters count too: 朱紫 twice, once at the very end
    assert BookText(["朱紫国王来了，青朱紫"]).spelled(["zhu", "zi"], g) == ["朱紫"]
    assert book.spelled(["zhu", "zi"], g)[0] in {"朱紫", "珠子", "竹子", "朱子", "珠紫", "竹紫"}


def test_words_by_gloss_undo_inflections_and_keep_only_what_the_book_uses() -> None:
    g = Glossary.from_lines(LINES)
    book = BookText([BOOK])
    terms = chinese_terms("Where was the demon imprisoned under a mountain?", book, g)
    assert "囚禁" in terms and "山" in terms
    assert "监禁" not in terms  # the dictionary's other word for it, which this book never uses
    assert chinese_terms("Is the cat green?", book, g) == []  # 猫, 青: not in the book


def test_capitalised_english_words_are_not_read_as_pinyin() -> None:
    g = Glossary.from_lines(LINES)
    assert g.is_english("Nine") and g.is_english("Dragon")
    assert not g.is_english("Pipa")  # the gloss of 琵琶 is its own pinyin: a name
    assert not g.is_english("Zhuzi")
    book = BookText(["九龙王的洞。"])
    assert chinese_terms("What did the Nine see?", book, g) == ["九"]


def test_script_of() -> None:
    assert script_of("Under which mountain did the Buddha imprison Sun Wukong?") == "latin"
    assert script_of("如来佛祖用什么山压住了孙悟空？") == "han"
    assert script_of("孙悟空 Sun Wukong") == ""
    assert BookText([BOOK]).script == "han"


def test_the_bundled_dictionary_loads_and_finds_real_entries() -> None:
    g = glossary()
    assert "孙悟空" in g.by_gloss["sun wukong"]
    assert "囚禁" in g.by_gloss["imprison"]
    assert glossary() is g  # loaded once per process


def test_an_english_question_searches_a_chinese_book_in_its_own_words(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    chapters = ["第一回 朱紫国", "朱紫国的国王病了三年，宫里的太医都治不好。行者揭了皇榜，要给国王诊脉。" * 3,
                "第二回 琵琶洞", "那女妖住在琵琶洞里，洞前是一座高山，山下有条小河。" * 3,
                "第三回 火焰山", "火焰山上寸草不生，过往的客商都要绕道走，只有牛王不怕热。" * 3]
    book.write_text("《小书》\n\n" + "\n\n".join(chapters), encoding="utf-8")
    index = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                      config=IndexConfig())
    info = index.ingest(book, background=False)
    found = index.search("Which cave does the demon live in, Pipa?", k=1, book_id=info.id, mode="keyword")
    assert found.passages and found.passages[0].chapter_num == 2
    assert any("琵琶" in note and "CC-CEDICT" in note for note in map(str, found.notes))
    off = BookIndex(make_settings(data_dir=tmp_path / "data"), embedder=BigramEmbedder(), vectors=MemoryVectors(),
                    config=IndexConfig(crosslingual=False))
    assert off.search("Which cave does the demon live in, Pipa?", k=1, book_id=info.id, mode="keyword").passages == []
    chinese = index.search("琵琶洞", k=1, book_id=info.id, mode="keyword")
    assert not any("CC-CEDICT" in note for note in map(str, chinese.notes))  # a Chinese question is searched as typed
