"""English questions on a Chinese book without a model (rag.crosslingual): names read as pinyin
and matched in the book's own text, other words by CC-CEDICT gloss, only words the book uses; and the
search itself, which adds the Chinese terms as one more query and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
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


# -- issue 24: the book's name table (n-gram counts and boundary variety, pinyin, CC-CEDICT names)
NAME_LINES = """\
# CC-CEDICT test excerpt: names and the characters' readings
赤壁 赤壁 [Chi4 bi4] /Chibi, county-level city in Xianning 咸寧市|咸宁市[Xian2 ning2 shi4], Hubei/Chibi or Red Cliff \
in Huangzhou district 黃州區|黄州区[Huang2 zhou1 qu1], Hubei, scene of the famous battle of Red Cliff of 208/
湖北 湖北 [Hu2 bei3] /Hubei province (Hupeh) in central China, abbr. 鄂, capital Wuhan 武漢|武汉/
董 董 [Dong3] /surname Dong/
董 董 [dong3] /to supervise/to direct/director/
卓 卓 [zhuo1] /outstanding/
孫 孙 [sun1] /grandson/
悟 悟 [wu4] /to comprehend/
空 空 [kong1] /empty/air/sky/
花 花 [hua1] /flower/
果 果 [guo3] /fruit/
檀 檀 [tan2] /sandalwood/
谈 谈 [tan2] /to speak/
曹 曹 [cao2] /surname Cao/
操 操 [cao1] /to grasp/to drill/
聞 闻 [wen2] /to hear/
溪 溪 [xi1] /creek/rivulet/
""".splitlines()

FILLER_CHARS = "的了是在有他我你说道去来看见上下大小那这又只得便将与"


def generated_book(names: dict[str, int], seed: int = 3) -> str:
    """Sentences of random filler around each name (``names``: how many times), shuffled: every name
    has many different characters before and after it."""
    import random

    rng = random.Random(seed)
    sentences = [("".join(rng.choice(FILLER_CHARS) for _ in range(rng.randint(1, 4))) + name
                  + "".join(rng.choice(FILLER_CHARS) for _ in range(rng.randint(1, 4))) + rng.choice("。，！"))
                 for name, times in names.items() for _ in range(times)]
    rng.shuffle(sentences)
    return "".join(sentences)


NAMES = {"赤壁": 12, "董卓": 30, "青龙偃月刀": 6, "孙悟空": 20, "花果山": 8, "檀溪": 5, "曹操": 25, "谈话": 4}


def test_the_name_table_holds_the_books_standalone_strings_with_their_counts() -> None:
    from rag.nametable import discover_terms

    text = generated_book(NAMES)
    found = discover_terms(text)
    for name, times in NAMES.items():
        assert found.get(name) == text.count(name) >= times, name
    # parts of a name are not names of their own: 孙悟 is always followed by 空, 龙偃月 by 刀
    assert "孙悟" not in found and "龙偃月" not in found and "悟空" not in found
    # a string seen fewer times than the minimum is left out, however varied its neighbours
    assert "谈话" not in discover_terms(text, min_count=5) and "谈话" in found
    assert discover_terms("") == {} and discover_terms("abc，。") == {}


def test_name_keys_are_the_names_a_definition_gives() -> None:
    from rag.crosslingual import name_keys

    assert name_keys("Chibi or Red Cliff in Huangzhou district 黃州區|黄州区[Huang2 zhou1 qu1], Hubei, scene of "
                     "the famous battle of Red Cliff of 208")[:2] == ["chibi", "red cliff"]
    assert name_keys("Dong Zhuo (-192), top general of late Han") == ["dong zhuo"]
    assert name_keys("Romance of the Three Kingdoms") == ["romance three kingdoms"]  # of, the: left out of keys
    assert name_keys("to imprison") == [] and name_keys("surname Dong") == []


def test_english_and_pinyin_names_come_out_of_the_books_name_table() -> None:
    g = Glossary.from_lines(NAME_LINES)
    book = BookText([generated_book(NAMES)])
    assert chinese_terms("What happened at the Red Cliffs?", book, g)[:1] == ["赤壁"]  # CC-CEDICT's name
    assert chinese_terms("Who killed Dong Zhuo?", book, g)[:1] == ["董卓"]  # no entry: its pinyin in the book
    assert chinese_terms("Sun Wukong", book, g) == ["孙悟空"]
    assert chinese_terms("where was sun wu kong born", book, g)[:1] == ["孙悟空"]  # lower-case pinyin
    # composed word by word from generic words and pinyin, kept because the book uses the whole
    assert chinese_terms("Who carried the Green Dragon Crescent Blade?", book, g)[:1] == ["青龙偃月刀"]
    assert chinese_terms("Where is Mount Huaguo?", book, g)[:1] == ["花果山"]
    assert chinese_terms("Who leapt over Tan Creek?", book, g)[:1] == ["檀溪"]
    # "Hubei" names 湖北 first: it is not a name of 赤壁 although 赤壁's definition says it
    assert "赤壁" not in chinese_terms("Is Hubei far?", book, g)
    # a plain lower-case English word does not join a name: "Cao Cao heard" is 曹操, not 曹操闻
    heard = BookText([generated_book({**NAMES, "曹操闻": 10})])
    assert chinese_terms("What had Cao Cao heard?", heard, g)[:1] == ["曹操"]
    assert chinese_terms("the sun is hot", book, g) == []  # English words, not pinyin


def test_the_name_table_is_built_once_per_book() -> None:
    g = Glossary.from_lines(NAME_LINES)
    book = BookText([generated_book(NAMES)])
    table = book.names(g)
    assert book.names(g) is table and "董卓" in table.counts and table.by_english["red cliff"] == ["赤壁"]
    assert "dongzhuo" in table.readings("董卓", g)  # pypinyin's reading


@pytest.mark.corpus
def test_names_on_the_real_novels_with_the_bundled_dictionary() -> None:
    from conftest import CORPUS

    g = glossary()
    sanguo = BookText([(CORPUS / "sanguoyanyi.txt").read_text(encoding="utf-8")])
    xiyouji = BookText([(CORPUS / "xiyouji.txt").read_text(encoding="utf-8")])
    for question, name in (("Red Cliffs", "赤壁"), ("Dong Zhuo", "董卓"), ("Green Dragon Crescent Blade", "青龙偃月刀"),
                           ("Tan Creek", "檀溪"), ("Tong Pass", "潼关")):
        assert chinese_terms(question, sanguo, g)[:1] == [name], question
    for question, name in (("Sun Wukong", "孙悟空"), ("sun wu kong", "孙悟空"), ("Mount Huaguo", "花果山"),
                           ("the golden-hooped rod", "金箍棒")):
        assert chinese_terms(question, xiyouji, g)[:1] == [name], question
    assert len(sanguo.names(g)) < 40_000  # small: tens of thousands of strings, a few MB


def test_a_title_before_a_surname_finds_the_books_name_with_the_title_after_it() -> None:
    # English translations write "Granny Liu", "Lady Wang", "Abbot Zhizhen"; the book 刘姥姥, 王夫人, 智真长老
    g = Glossary.from_lines([*NAME_LINES, "劉 刘 [Liu2] /surname Liu/", "王 王 [Wang2] /surname Wang/",
                             "王 王 [wang2] /king/", "智 智 [zhi4] /wisdom/", "真 真 [zhen1] /really/"])
    book = BookText([generated_book({"刘姥姥": 12, "王夫人": 15, "智真长老": 6, "曹操": 25})])
    assert chinese_terms("What did Granny Liu bring?", book, g)[:1] == ["刘姥姥"]
    assert chinese_terms("Why was Lady Wang angry?", book, g)[:1] == ["王夫人"]
    assert chinese_terms("What did Abbot Zhizhen write?", book, g)[:1] == ["智真长老"]
    assert "刘姥姥" not in chinese_terms("What did Granny Cao bring?", book, g)  # only the book's own names
