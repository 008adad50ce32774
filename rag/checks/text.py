"""Text as the checks compare it: one normalisation (NFKC, lower case, Chinese numerals as digits,
no whitespace or punctuation) with a map back to the original, and the content a text carries
(its Han characters and Latin words, function words aside) with the older forms classical prose
uses for the words a modern reader writes (``variants``). Pure; no model, no I/O."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

# --------------------------------------------------------------------------- numbers
_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_CN_NUMERAL = re.compile("[零〇一二两三四五六七八九十百千万亿]+")
# Idioms and words in which a numeral character is not a number (kept as written).
_NOT_NUMBERS = ("一起", "一样", "一直", "一定", "一些", "一切", "一般", "统一", "万一", "千万", "一心", "一点", "唯一")
_CHAPTER_UNITS = tuple("回章节集卷篇")  # 第一回: a lone 一 that is a chapter number
# Counting words and units: a single numeral character is a number only before one of these (四只, 三年,
# 两字) or after 第; elsewhere it is part of a word or a name (五常, 安倍晋三, 三藏) and stays as written.
MEASURES = frozenset("个只位名人员匹条张把件枚座间支根株棵朵片块颗粒本部卷册篇首句字页层项种类"
                     "年月日天夜岁旬周时点分秒刻更回章节集次遍番趟场顿段处"
                     "里丈尺寸斤两钱石斗升亩顷米克元角倍艘辆架封碗杯盏坛瓶壶斛")
_EN_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
             "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
             "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_EN_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
            "ninety": 90}
_EN_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_EN_WORD = "|".join(sorted([*_EN_UNITS, *_EN_TENS, *_EN_SCALES], key=len, reverse=True))
# A run of English number words ("twenty-eight", "one hundred and five"); a lone "one" ("no one", "one
# of them") is a word, not a number.
# "five-and-twenty" is 25, as older English writes it
_EN_NUMBER = re.compile(rf"\b(?:{_EN_WORD})(?:(?:[\s-]+and[\s-]+|[\s-]+)(?:{_EN_WORD}))*\b", re.IGNORECASE)


def _en_to_int(text: str) -> int | None:
    words = [w for w in re.split(r"[\s-]+", text.lower()) if w and w != "and"]
    if not words or any(w not in _EN_UNITS and w not in _EN_TENS and w not in _EN_SCALES for w in words):
        return None
    total, section = 0, 0
    for w in words:
        if w in _EN_UNITS:
            section += _EN_UNITS[w]
        elif w in _EN_TENS:
            section += _EN_TENS[w]
        elif w == "hundred":
            section = (section or 1) * 100
        else:
            total += (section or 1) * _EN_SCALES[w]
            section = 0
    return total + section


def cn_to_int(text: str) -> int | None:
    """The one numeral parser of the checks: '五十四' -> 54, '十万八千' -> 108000, '一二三' -> 123 (digit by
    digit), 'twenty-eight' -> 28, 'one hundred and five' -> 105; None if not a number."""
    if text and text[0].isascii() and text[0].isalpha():
        return _en_to_int(text)
    if not text or any(ch not in _CN_DIGITS and ch not in _CN_SMALL_UNITS and ch not in _CN_BIG_UNITS
                       for ch in text):
        return None
    if all(ch in _CN_DIGITS for ch in text):  # 一九八六 -> 1986
        return int("".join(str(_CN_DIGITS[ch]) for ch in text)) if len(text) > 1 else _CN_DIGITS[text]
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in _CN_SMALL_UNITS:
            section += (1 if digit is None else digit) * _CN_SMALL_UNITS[ch]
            digit = None
        else:  # 万 / 亿
            section += digit or 0
            total += (section or 1) * _CN_BIG_UNITS[ch]
            section, digit = 0, None
    return total + section + (digit or 0)


def is_numeral(ch: str) -> bool:
    """A Chinese numeral character (一..九, 十, 百, 千, 万, 亿, 两, 零)."""
    return len(ch) == 1 and ch in _CN_NUMERAL.pattern and ch not in "[]+"


def _is_content(ch: str) -> bool:
    """Letters, digits and CJK ideographs count; whitespace, punctuation and symbols do not."""
    cat = unicodedata.category(ch)
    return cat[0] in ("L", "N")


def is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"


@dataclass(frozen=True)
class Norm:
    """Normalised text with, per character, the [start, end) span of the original it came from."""

    text: str
    spans: tuple[tuple[int, int], ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span covered by normalised characters [start, end)."""
        if not self.spans or end <= start:
            return (0, 0)
        return (self.spans[start][0], self.spans[end - 1][1])


def _reads_as_number(text: str, i: int, run: str, end: int) -> bool:
    """Whether the numeral run ``run`` at ``text[i:end]`` is a number: a run of two or more numerals
    (五十四, 十万八千) that is not inside a name of the digit-by-digit kind, or one numeral after 第 or
    before a counting word or unit (四只, 三年, 第一回). 五常, 三藏, 安倍晋三 stay words."""
    nxt = text[end:end + 1]
    prev = text[i - 1:i]
    if prev and prev in "第老":  # 第一回, 老三; 第一次 stays (often "the first time", not a count)
        return run != "一" or nxt in _CHAPTER_UNITS
    if len(run) > 1 or run in "十百千":
        return True
    return run not in "一万亿" and nxt in MEASURES  # 一 alone is mostly "a" (一个人, 一声)


def _scaled(out: list[str], words: str, value: int | None) -> tuple[int, str] | None:
    """A number in digits just before a scale word ("1.9 million", "30 thousand"): how many characters of
    ``out`` it takes, and the value written in digits; None otherwise."""
    if value is None or words.lower().split()[0] not in _EN_SCALES or not out or not out[-1].isdigit():
        return None
    n, point = 0, False
    while n < len(out):
        ch = out[-1 - n]
        if ch == "." and not point and n:
            point = True
        elif not ch.isdigit():
            break
        n += 1
    if out[len(out) - n] == ".":
        n -= 1
    number = Decimal("".join(out[len(out) - n:])) * value
    return n, format(number.normalize(), "f")


def normalize(text: str, *, numerals: bool = True) -> Norm:
    """See the module docstring. Deterministic; ``normalize(normalize(x).text).text == normalize(x).text``.
    A decimal point, a percent sign and a time's colon between digits are kept (4765.82, 8.4%, 8:00);
    English number words become digits (twenty-eight -> 28)."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    protected = _protected_ranges(text) if numerals else []
    english = {m.start(): m for m in _EN_NUMBER.finditer(text)} if numerals else {}
    i = 0
    n = len(text)
    while i < n:
        if english and i in english:
            words = english[i]
            value = cn_to_int(words.group(0))
            scaled = _scaled(out, words.group(0), value)
            if scaled is not None:  # "1.9 million" is 1900000, not 1.9 followed by 1000000
                kept = len(out) - scaled[0]
                start = spans[kept][0]
                del out[kept:], spans[kept:]
                for digit in scaled[1]:
                    out.append(digit)
                    spans.append((start, words.end()))
                i = words.end()
                continue
            if value is not None and words.group(0).lower() != "one":
                for digit in str(value):
                    out.append(digit)
                    spans.append((i, words.end()))
                i = words.end()
                continue
        if numerals and text[i] in _CN_NUMERAL.pattern:
            m = _CN_NUMERAL.match(text, i)
            if m and not any(a <= i < b for a, b in protected):
                run = m.group(0)
                value = cn_to_int(run)
                if value is not None and _reads_as_number(text, i, run, m.end()):
                    for digit in str(value):
                        out.append(digit)
                        spans.append((i, m.end()))
                    i = m.end()
                    continue
        ch0 = text[i]
        if ch0 in ".:：%％" and out and out[-1].isdigit() and (
                ch0 in "%％" or (i + 1 < n and text[i + 1].isdigit())):
            out.append("%" if ch0 in "%％" else ("." if ch0 == "." else ":"))
            spans.append((i, i + 1))
            i += 1
            continue
        for ch in unicodedata.normalize("NFKC", text[i]).lower():
            if _is_content(ch):
                out.append(ch)
                spans.append((i, i + 1))
        i += 1
    return Norm("".join(out), tuple(spans))


def _protected_ranges(text: str) -> list[tuple[int, int]]:
    ranges = []
    for word in _NOT_NUMBERS:
        start = text.find(word)
        while start != -1:
            ranges.append((start, start + len(word)))
            start = text.find(word, start + 1)
    return ranges


def content_weight(norm_text: str) -> float:
    """Han characters count 1, Latin letters and digits 1/3: 4 Han == 12 Latin (the minimum quote)."""
    return sum(1.0 if is_han(ch) else 1 / 3 for ch in norm_text)



def contains(haystack: str, needle: str) -> bool:
    """``needle`` in ``haystack`` (both normalised), a number only as a whole number: 108 is not in 108000."""
    if not needle:
        return False
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        before_ok = not (needle[0].isdigit() and start > 0 and haystack[start - 1].isdigit())
        after_ok = not (needle[-1].isdigit() and end < len(haystack) and haystack[end].isdigit())
        if before_ok and after_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


# --------------------------------------------------------------------------- content and its older forms
# Function characters: they do not make two texts "about the same thing", in modern or classical prose.
STOP_HAN = frozenset("的了是在和有不也就都而及与之其这那个们被把为以于中上下一吗呢吧啊么什怎谁哪几多少"
                     "着过得地很还又再才却便即乃则矣也焉哉乎耶欤兮曰云道言说问答将")
STOP_EN = frozenset({
    "the", "a", "an", "of", "in", "on", "at", "to", "is", "are", "was", "were", "be", "and", "or", "for",
    "by", "with", "does", "did", "do", "what", "which", "who", "whom", "how", "when", "where", "why",
    "that", "this", "it", "its", "as", "from", "his", "her", "their", "he", "she", "they",
    "long", "many", "much", "far", "old", "whose", "there", "been", "has", "have", "had", "into", "not",
    "yes", "no", "him", "them", "then", "after", "before", "so", "but", "if", "would", "could", "should",
})

# A modern word -> the forms older prose writes it in (西游记, 三国演义 and their kind). A reader asks
# "他喝了酒再去的吗"; the book says "酒且斟下，某去便来". Used in both directions by ``same_content``.
_VARIANT_TABLE = """
喝:饮,酌,吃 吃:食,啖,餐,吞 说:曰,言,道,云,谓 告诉:告,谓,言 问:询,问 回答:答,对 叫:唤,呼,名,号,称
去:往,赴,之,行 来:至,到,来 到:至,抵,达,到 地方:处,地,所,方 回来:归,还,回 回去:归,还 离开:去,辞,别 走:行,去,奔 跑:奔,走,驰 逃:走,遁,奔,逃
看:见,视,观,望,览 看见:见,睹 听:闻,听 知道:知,晓,识 认识:识 想:思,念,欲 要:欲,要,须 想要:欲
能:能,可 可以:可 会:能 让:令,使,教,遣,命 派:遣,差,使 命令:令,命 带:引,领,率,携,将 领:引,率
拿:执,持,取,提,拿 抓:擒,捉,拿,获,执 抓住:擒,拿,获 放:置,放,纵 给:与,予,赐,授,付 送:送,赠,献
用:以,使,用 打:击,打,攻,鞭,殴 杀:斩,诛,杀,戮 杀死:斩,诛,杀 死:亡,卒,薨,殁,崩,丧,死 去世:卒,薨,亡,殁,崩,丧
打败:败,破,胜 战胜:胜,克,破 赢:胜 投降:降,归顺 攻打:攻,伐,击,讨 追:追,赶,逐 救:救,援 收服:收,降,伏,缚,服 降服:降,伏,缚 帮:助,佐 帮助:助
烧:焚,烧,火 等:候,待,俟 找:寻,觅,求 寻找:寻,觅 住:居,住,宿 睡:寝,卧,眠 坐:坐 站:立 骑:乘,骑
哭:泣,哭,啼 笑:笑,哂 骂:骂,叱,詈,辱 生气:怒,恼 高兴:喜,悦 害怕:惧,畏,恐,怕 担心:忧,虑 相信:信
穿:著,着,披,穿 写:书,题,写 读:读,诵 念:诵,念 变:化,变 变成:化,变 成为:为,作 做:为,作
他:其,彼,之 她:其,彼 它:其 你:汝,尔,君,卿 我:吾,余,予,某,俺 我们:吾等,我等 他们:其,彼等,众
这:此,是,斯 这个:此 那:彼 那个:彼 什么:何 为什么:何故,为何,因何 怎么:如何,何以,怎 怎样:如何 哪里:何处,安
没有:未,无,不,没 没:未,无 不是:非 是:乃,为,即 都:皆,俱,尽,悉 也:亦 又:复,又 再:复,再 只:惟,唯,但,只
已经:已,既 还:尚,犹,仍 一起:同,共,俱 如果:若,如,倘 因为:因,以 所以:故 但是:然,但 就:便,即,乃
马上:即,便,遂 立刻:即,遂,便 后来:后,遂 最后:终,遂,竟 开始:始,初 当时:时,是时 时候:时
很:甚,极,颇 非常:甚,极 多:多,众 少:寡,少 大:大,巨 小:小,细 头:首,头 眼睛:目,眼 脸:面
衣服:衣 房子:屋,宅,舍 家:家,宅 朋友:友 父母:父,母,爹,娘,儿子,养,生 父亲:父 母亲:母 儿子:子 女儿:女 妻子:妻 丈夫:夫
皇帝:帝,天子 大臣:臣 士兵:兵,军,卒 军队:军,兵 将军:将 船:舟 路:道,途 钱:金,银
原来:本,原,乃 称号:称,号,封,名号 名号:名,号,称,名为 丈夫:夫,妻,夫君 妻子:妻,夫,娘子 年纪:年,岁 岁数:岁,寿 寿命:寿,年 酒:酒 温:温,暖,热 热:热,温 冷:寒,冷 天:日 晚上:夜,晚 早上:晨,旦
"""
def _norm_forms(forms: list[str]) -> frozenset[str]:
    """Table entries as the checks see text (三藏 is 3藏 once numerals are digits); a name ending in 儿
    also without it (红孩儿, 红孩)."""
    out = set()
    for form in forms:
        norm = normalize(form).text
        out.add(norm)
        if len(norm) > 2 and norm.endswith("儿"):
            out.add(norm[:-1])
    return frozenset(out)


VARIANTS: dict[str, frozenset[str]] = {}
for _entry in _VARIANT_TABLE.split():
    _word, _, _forms = _entry.partition(":")
    VARIANTS[normalize(_word).text] = _norm_forms([_word, *_forms.split(",")])
_MAX_WORD = max(len(w) for w in VARIANTS)
# Modern function and question words: matched whole (so their characters are not read as content),
# but they are not content themselves.
FUNCTION_WORDS = frozenset(["什么", "为什么", "怎么", "怎样", "哪里", "这", "这个", "那", "那个", "他", "她", "它", "你", "我", "我们", "他们", "没有", "没", "不是", "是", "都", "也", "又", "再", "只", "已经", "还", "一起", "如果", "因为", "所以", "但是", "就", "马上", "立刻", "后来", "最后", "开始", "当时", "时候", "很", "非常", "多少", "哪个", "哪些", "是否", "是不是", "可以", "能", "会", "要", "想要", "结果", "然后", "于是", "最终", "东西", "事情", "资料", "材料", "显示", "说明", "根据", "据", "此外", "另外", "另据", "记载", "提到", "书中", "原文", "文中", "其中", "之前", "之后", "以后", "以前", "这段", "这里", "那里", "一共", "总共", "分别", "同时", "随后", "随即", "此后", "当初", "当年", "当地", "起初", "由此", "可见", "表明", "因此", "不过", "然而", "其实", "自己", "对方", "正文", "该段", "理由", "起因", "回目", "段落", "所给", "章回", "所写", "所说", "书里", "需要", "也就是", "就是", "即为", "原著", "发生", "情节", "故事", "小说", "描写", "讲述", "写道", "写到", "提及", "这一", "此回", "该回", "本回"])
FUNCTION_WORDS = frozenset(normalize(w).text for w in FUNCTION_WORDS)
for _w in FUNCTION_WORDS:
    VARIANTS.setdefault(_w, frozenset({_w}))

@dataclass(frozen=True)
class Content:
    """What a text says, as the checks compare it: its content terms, each with the set of forms any
    of which counts as the same term in another text (a Han word or character with its older forms
    and other names; a Latin word's stem; a number with its unit)."""

    terms: tuple[tuple[str, frozenset[str]], ...]


_LATIN_WORD = re.compile(r"[a-z][a-z0-9'-]*")
Names = dict[str, frozenset[str]]  # a name (normalised) -> all forms of that person's name


def name_groups(aliases: Mapping[str, Sequence[str]] | None) -> Names:
    """The book's other names of its people (``rag.aliases``: name -> other names) as the checks see
    them: every form of a person's name maps to all of them."""
    groups: Names = {}
    for name, others in (aliases or {}).items():
        group = _norm_forms([name, *others])
        for form in group:
            groups[form] = groups.get(form, frozenset()) | group
    return groups


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # pure Python; the Snowball project's English stemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """An English word's stem ("laments" -> "lament", "thinking" -> "think", "died" -> "die")."""
    return str(_stemmer().stemWord(word.strip("'-")))


def latin_words(text: str) -> list[str]:
    """The Latin words of ``text`` (NFKC, lower case), numbers written as words included."""
    return _LATIN_WORD.findall(unicodedata.normalize("NFKC", text).lower())


_LATIN_NAME = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9&.+-]*[A-Za-z0-9]")


def latin_names(text: str) -> set[str]:
    """The names a Han text writes in Latin letters (Qwest, USGS, Internet2), lower case: words of two
    letters or more with a capital; the x of a coded name (张x1) and a lower-case unit (km) are not."""
    text = unicodedata.normalize("NFKC", text)
    return {w.lower().rstrip(".") for w in _LATIN_NAME.findall(text)
            if sum(ch.isalpha() for ch in w) >= 2 and any(ch.isupper() for ch in w)}


def script_of(text: str) -> str | None:
    """"han" or "latin": the script most of ``text``'s content is in (a Han character weighs as much as
    a Latin word); None when it has neither."""
    han = sum(1 for ch in text if is_han(ch))
    latin = len(latin_words(text))
    if not han and not latin:
        return None
    return "han" if han >= latin else "latin"


def content(text: str, names: Names | None = None) -> Content:
    """The content terms of ``text`` (see ``Content``): the book's names (``names``, ``name_groups``)
    and modern words found by the longest match, then single Han characters that are not function
    characters (a numeral character that is part of a word, 三 of 三藏, also as its digit); numbers
    with the counting word or unit after them (500年); the stems of Latin words of 3+ letters that
    are not stop words."""
    names = names or {}
    norm = normalize(text).text
    longest = max(_MAX_WORD, max((len(n) for n in names), default=0))
    terms: list[tuple[str, frozenset[str]]] = []
    i = 0
    while i < len(norm):
        ch = norm[i]
        if ch.isdigit():
            j = i
            while j < len(norm) and (norm[j].isdigit() or norm[j] in ".:%"):
                j += 1
            while j > i and not norm[j - 1].isdigit() and norm[j - 1] != "%":
                j -= 1
            unit = norm[j] if j < len(norm) and is_han(norm[j]) and norm[j] not in STOP_HAN else ""
            number = norm[i:j]
            terms.append((number + unit, frozenset({number + unit})))
            i = j + len(unit)
            continue
        if not is_han(ch):  # Latin words are read from the text with its spaces (below)
            i += 1
            continue
        for size in range(min(longest, len(norm) - i), 1, -1):
            piece = norm[i:i + size]
            forms = names.get(piece) or VARIANTS.get(piece)
            if forms is not None:
                if piece not in FUNCTION_WORDS:
                    terms.append((piece, forms))
                i += size
                break
        else:
            if ch not in STOP_HAN and ch not in FUNCTION_WORDS:
                forms = VARIANTS.get(ch, frozenset({ch}))
                value = cn_to_int(ch) if is_numeral(ch) else None
                terms.append((ch, forms | {str(value)} if value is not None else forms))
            i += 1
    for word in latin_words(text):
        if len(word) >= 3 and word not in STOP_EN and cn_to_int(word) is None:
            root = stem(word)  # the word as written too: "heavy" is "heavi" to the stemmer
            terms.append((root, frozenset({root, word})))
    return Content(tuple(terms))


_HAN_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


def frequent_words(text: str, size: int = 2, least: int = 2) -> list[str]:
    """Strings of ``size`` Han characters (no function character among them) that ``text`` uses at
    least ``least`` times, most used first: in a passage, mostly the people, places and things it is
    about (read from the passage itself, no table of names)."""
    counts: dict[str, int] = {}
    for run in _HAN_RUN.findall(text):
        for i in range(len(run) - size + 1):
            w = run[i:i + size]
            if not any(ch in STOP_HAN for ch in w):
                counts[w] = counts.get(w, 0) + 1
    return [w for w, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n >= least]


def han_pairs(norm: str) -> list[str]:
    """The pairs of adjacent Han characters of a normalised text, neither a function character, each
    once: 武松, 喝酒 say more of what a text is about than 松 or 酒 alone."""
    return list(dict.fromkeys(norm[i:i + 2] for i in range(len(norm) - 1)
                              if is_han(norm[i]) and is_han(norm[i + 1])
                              and norm[i] not in STOP_HAN and norm[i + 1] not in STOP_HAN))


def found_in(forms: frozenset[str], haystack: str) -> bool:
    """Any of ``forms`` in ``haystack`` (normalised text); numbers as whole numbers."""
    return any(contains(haystack, f) for f in forms)


def shared_terms(a: Content, haystack: str) -> list[str]:
    """The terms of ``a`` that ``haystack`` (normalised) states in one of their forms."""
    return [t for t, forms in a.terms if found_in(forms, haystack)]


def coverage(a: Content, haystack: str) -> float:
    """The share of ``a``'s terms found in ``haystack``; 1.0 when ``a`` has none."""
    if not a.terms:
        return 1.0
    return len(shared_terms(a, haystack)) / len(a.terms)

