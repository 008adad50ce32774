"""The checkable facts of an answer sentence (chapter numbers, numbers read with their unit or
counting word, ordinals, numerals that are part of a word, quoted speech) and whether a source
states each; read by the sentence checks (``rag.checks.sentences``). Pure: no model, no I/O."""

from __future__ import annotations

import re

from rag.checks.text import MEASURES, cn_to_int, contains, is_han, normalize

# a citation numbers a source: one or two digits ([2015] in 邯郸燕赵[2015]鉴字 is a document's number)
CITATION = re.compile(r"\[(\s*\d{1,2}(?:\s*[,，、-]\s*\d{1,2})*\s*)\]")
LIST_MARKER = re.compile(r"^\s*(?:\d+[.)、]|[一二三四五六七八九十]+、|[-*+•])\s*")
NUMBER = re.compile(r"\d+(?:[.:]\d+)*%?")
QUOTED = re.compile(r"[“\"「『]([^”\"」』]{2,40})[”\"」』]")
_CHAPTER = re.compile(r"第\s*([0-9零〇一二两三四五六七八九十百千]+)\s*[回章节集]|\b(?:chapter|episode)\s+(\d+)", re.I)
_TITLE = re.compile(r"《[^》]{1,30}》")
# Units a number is read with (三百六十岁 is 360岁, so a 360 that counts something else does not match);
# a number followed by anything else is checked as a number.
_UNITS = frozenset("年月日天岁回章集卷里丈尺寸斤两钱石斗升亩顷万千百")
# what else a number in digits is read with in modern prose (15号, 3楼, 8成, 5级, 2倍, 100余元, 20多人)
_DIGIT_UNITS = frozenset("号楼层成级倍余多期届路版款项栋户套台门罐箱袋包瓶盒份吨公")


# Words that ask (Chinese, then English wh-words): a sentence or clause with one reads as a question
ASKING = r"什么|谁|哪|几|多少|多久|多远|多大|多重|吗|如何|怎|为何|为什么|是否|是不是|有没有"
ASKING_EN = "what|who|whom|whose|which|where|when|why|how"
ASKS = re.compile(rf"{ASKING}|\b(?:{ASKING_EN})\b", re.I)  # a word that asks, in either language


# The cited text named as such ("这段资料", "材料中", "原文本身"): what a sentence says of its sources, not a
# claim about the book (attribution, a clause saying the text lacks something)
SOURCE_NOUN = (r"(?:该|这|此|本|两|各)?[份段篇则]?(?:资料|材料|原文|来源|引文|段落|文中|书中|文本)"
               r"(?:本身|中|里面|里|上)?")


# Words that stand where an answer should be ("藏在了某个地方", "放了若干双", "卖给了他人", "picked up some
# book"): a sentence that fills the question's gap with one of them says no more than the question, and
# an answer that is one of them names nothing. Not 某 alone, which anonymised names use (王1某, 某运输公司).
SOME = "某(?:个|一|种|些|处|地|时|天|位|件|样|人{more})"  # 某个, 某位…: "some" before what is not named
INDEFINITE = re.compile(SOME.format(more="") + r"(?:地方|时间|时候|东西|事情?|人|处)?|若干|"
                        r"一段(?:路|时间|距离)?|有人|他人|别人|其他人|旁人|"
                        r"\b(?:some(?:one|body|thing|where|time|how)?|a certain|certain|an? (?:unnamed|unspecified))\b",
                        re.I)


# A small number a sentence uses for its own items or the sources, not a fact of the book: "以上两件事",
# "这两段", "以下五人", "两处资料"; and the count of a list it has just given: "范疆、张达二人".
_SMALL = "一二两三四五六七八九"
_OWN_ITEMS = re.compile(rf"(?:以上|上述|以下|下列|下面|这|那)([{_SMALL}\d])"
                        rf"|([{_SMALL}\d])[处段条则份篇]?(?:资料|来源|段落|引文|出处|材料)"
                        # "两人膝下无子": opening a clause, "the two of them" names the pair just spoken of
                        rf"|^\s*(?:这|他们|她们)?([两二俩])(?=人|位|者)")
_LISTED = re.compile(rf"((?:[\u4e00-\u9fff]{{1,6}}[、和与及])+[\u4e00-\u9fff]{{1,6}}?)([{_SMALL}\d])[人位个名员将]")
# A small number with the word of the kinds a list is made of: "有两类：", "分三点：", "两个方面："
_LIST_WORD = "个|项|类|种|点|条|件|份|步|部分|方面"
_LIST_COUNT = re.compile(rf"([{_SMALL}\d])(?:{_LIST_WORD})")
# ... and such a count whose list follows within the sentence, after a colon or in brackets ("两份合同（…，
# 以及…）", "两个不同的案件：前者…，后者…")
_OPENS_LIST = re.compile(rf"([{_SMALL}])(?:{_LIST_WORD})[^，,。；;：:（(]{{0,12}}[：:（(]")
# Words that count a thing between a small number and the thing: 两个小童 / 二小童, 三位老者 / 三老者.
_CLASSIFIERS = "个位名只匹头条张把件枚座间口员支根项种类"
_NEXT_DAY = ("次日", "翌日", "明日", "次早", "翌早", "来日", "第2日", "第2天")
# clause breaks; a point, colon or comma between digits is part of a number (4765.82, 8:00, 1,200)
CLAUSES = re.compile(r"[，。！？；：!?;（）()\n]+|[.:](?!\d)|,(?!\d{3})")


def _in_name(text: str, span: tuple[int, int]) -> bool:
    """A number written in digits that is part of a name or code, not a quantity: glued to a Latin
    letter (施x4, a3, 3b), or before 某 (刘2某: a court record's redacted name)."""
    start, end = span
    if not text[start:end].strip() or not text[start].isdigit():
        return False  # a number written in words
    before, after = text[start - 1:start], text[end:end + 1]
    if (before.isascii() and before.isalpha()) or after == "某" or (after.isascii() and after.isalpha()):
        return True
    # between two Han characters with no counting word or unit after it (王0还与苏2及其兄): a coded name;
    # a quantity in digits is followed by what it counts (6间, 2016年, 11次)
    return (is_han(before) and before != "第" and is_han(after) and after not in MEASURES
            and after not in _UNITS and after not in _DIGIT_UNITS)


WORD_NUMERAL = re.compile(r"[二两三四五六七八九][\u4e00-\u9fff]")
# a date is one fact: 2017年1月6日 is not stated by a source that has 2018年 and 1月6日 for two events
_DATE = re.compile(r"(?<!\d)(?:(\d{2,4})年)?(\d{1,2})月(?:(\d{1,2})[日号])?")
# a redacted or coded name (孙x10, 王1某, 刘2某): one token, stated only as written (孙x1 is not 孙x10)
_CODE_NAME = re.compile(r"[\u4e00-\u9fff][a-zA-Z×]?\d+某?(?!\d)")
_MONTHS = ("", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二")


def _dates(norm: str) -> list[tuple[str, tuple[int, int]]]:
    """The dates of a normalised clause that name at least two of year, month, day: (fact, span)."""
    found = []
    for m in _DATE.finditer(norm):
        year, month, day = m.groups()
        if (year is None and day is None) or not 1 <= int(month) <= 12:
            continue
        found.append((f"{year + '年' if year else ''}{int(month)}月{str(int(day)) + '日' if day else ''}", m.span()))
    return found


_DATE_FACT = re.compile(r"(?:(\d+)年)?(\d+)月(?:(\d+)日)?")  # a fact of ``_dates``: with a year or a day


def _date_in(fact: str, haystack: str) -> bool | None:
    """Whether ``haystack`` states the date ``fact`` (its month in digits or words); None when ``fact``
    is no date of ``_dates`` (a month alone, 5月, is a number with its unit)."""
    m = _DATE_FACT.fullmatch(fact)
    if not m or not (m.group(1) or m.group(3)):
        return None
    year, month, day = m.groups()
    rest = f"(?:0?{month}|{_MONTHS[int(month)]})月" + (f"0?{day}[日号]" if day else "")
    if re.search(rf"(?<!\d){year + '年' if year else ''}{rest}", haystack):
        return True
    # "同年9月初": the year is the one the text last named
    return bool(year) and any(_last_year(haystack, m.start()) == year for m in re.finditer(rf"{_SAME_YEAR}{rest}", haystack))


_SAME_YEAR = "(?:同年|当年|是年|该年|本年)"


def date_in_context(fact: str, region: str, whole: str) -> bool:
    """A date with its year whose month and day ``region`` states while its year is named before it in
    the ``whole`` text ("同年11月18日" sixty characters after "2014年"): the passage states the date, the
    sentences around it do not repeat the year."""
    m = _DATE_FACT.fullmatch(fact)
    if not m or not (m.group(1) and m.group(3)):
        return False
    year, month, day = m.groups()
    if not _date_in(f"{int(month)}月{int(day)}日", region):
        return False
    # "2012年9月份……9月13日": a day without its year is in the year the text last named
    days = re.finditer(rf"(?<![\d年])(?:0?{int(month)}|{_MONTHS[int(month)]})月0?{int(day)}[日号]", whole)
    return bool(_date_in(fact, whole)) or any(_last_year(whole, d.start()) == year for d in days)


def _last_year(text: str, end: int) -> str | None:
    years = re.findall(r"(?<!\d)(\d{4})年", text[:end])
    return years[-1] if years else None


def _own_counts(clause: str, listing: bool = False) -> list[int]:
    """Small numbers of ``clause`` that count the answer's own items or a list it has just given;
    ``listing``: the clause opens a list the answer gives next ("作案工具有两类："), whose count it is."""
    found = [cn_to_int(m.group(1) or m.group(2) or m.group(3).replace("俩", "两")) for m in _OWN_ITEMS.finditer(clause)]
    if listing:
        found += [cn_to_int(m.group(1)) for m in _LIST_COUNT.finditer(clause)]
    for m in _LISTED.finditer(clause):
        items = len(re.findall(r"[、和与及]", m.group(1))) + 1
        if cn_to_int(m.group(2)) == items:
            found.append(items)
    return [n for n in found if n is not None]


def facts_of(sentence: str) -> list[str]:
    """Checkable facts in a sentence, normalised: chapter numbers, other numbers (Chinese numerals
    included) with the Han character that follows them in the same clause (三百六十岁 -> 360岁, so a
    number that occurs elsewhere in the source for something else does not count), and quoted speech.
    A small number is read with its word (两个小童 -> "2个小": 二小童 states it too), as an ordinal
    (第四种 -> "第4种", 第二天 -> "第2天", 老三 -> "老3"), or not at all when it counts the sentence's own
    items (以上两件事, 范疆、张达二人)."""
    body = _TITLE.sub(" ", LIST_MARKER.sub("", CITATION.sub(" ", sentence)))  # 《三国演义》 is a title, not 3
    facts = []
    for m in _CHAPTER.finditer(body):
        raw = m.group(1) or m.group(2)
        value = cn_to_int(raw)
        facts.append(f"第{value if value is not None else raw}")
    chapters = {f[1:] for f in facts}
    clauses = CLAUSES.split(body.replace("*", ""))
    # a sentence ending in a colon opens a list: its last clause may count the list's items
    last = max((k for k, c in enumerate(clauses) if c.strip()), default=-1) if body.rstrip().endswith((":", "：")) else -1
    opening = [m.group(0)[:-1] for m in _OPENS_LIST.finditer(body.replace("*", ""))]
    for k, clause in enumerate(clauses):
        opens = any(o in clause for o in opening)
        own = _own_counts(clause, listing=k == last or opens)
        normed = normalize(clause)
        norm = normed.text
        dates = _dates(norm)
        facts += [d for d, _ in dates]
        codes = [m for m in _CODE_NAME.finditer(norm) if _in_name(clause, normed.original_span(
            m.start() + 1 + (not m.group(0)[1].isdigit()), m.end() - m.group(0).endswith("某")))]
        facts += [m.group(0) for m in codes]
        for m in NUMBER.finditer(norm):
            number = m.group(0)
            if number in chapters or _in_name(clause, normed.original_span(m.start(), m.end())):
                continue
            if any(a <= m.start() < b for _, (a, b) in dates):
                continue
            before, nxt, after = norm[m.start() - 1:m.start()], norm[m.end():m.end() + 1], norm[m.end() + 1:m.end() + 2]
            small = number.isdigit() and int(number) < 10  # 一/二/三 count anything: read a small number with its word
            if small and int(number) in own:
                own.remove(int(number))
            elif before == "第" and nxt == "问":  # 关于第二问: the question's own part, not a fact
                continue
            elif small and before == "第":
                facts.append(f"第{number}天" if nxt in ("天", "日") else f"第{number}{nxt if is_han(nxt) else ''}")
            elif small and before == "老":
                facts.append(f"老{number}")
            elif small and nxt and nxt in _CLASSIFIERS and after and is_han(after):
                facts.append(number + nxt + after)
            else:
                facts.append(number + nxt if nxt and (nxt in _UNITS or (small and is_han(nxt))) else number)
        # a numeral that is part of a word (八卦炉, 五常, 三藏) is checked as that word as written
        facts += [w for w in WORD_NUMERAL.findall(norm) if not ((k == last or opens) and _LIST_COUNT.match(w))]
    facts += [normalize(q).text for q in QUOTED.findall(body)]
    return [f for f in facts if f]


def fact_in(fact: str, haystack: str) -> bool:
    """A fact of ``facts_of`` in the cited sources: a chapter number as such ("第7", in a heading or the
    text); an ordinal as an ordinal or the number with its thing (第六夜: 第六, or 六夜); the second
    day as 次日 / 翌日 too; a number with a counting word as the
    number and the thing, with or without the word (2个小 in 二小童, 3魔 in 三个魔头); a number of 10 or more as a
    whole number whatever its unit (classical and modern prose count differently: 二十名 / 二十人);
    anything else as written."""
    if _CODE_NAME.fullmatch(fact) and not fact[1:].isdigit():
        # normalised text has no punctuation: "王x2，2014年" reads 王x22014年 (a number glued on after it)
        return re.search(rf"{re.escape(fact)}(?!\d)|{re.escape(fact)}(?=\d{{3,}})", haystack) is not None
    # 王0 (a coded name), or 有3 where the source says 有三
    coded = re.fullmatch(r"([\u4e00-\u9fff])(\d+)", fact) if not fact.startswith("第") else None
    if coded:
        head, digits = coded.groups()
        return re.search(rf"{re.escape(head)}{_num(digits)}(?!\d)", haystack) is not None
    date = _date_in(fact, haystack)
    if date is not None:
        return date
    if fact.startswith("第") and fact[1:].isdigit():
        return re.search(rf"(?:第|chapter|episode){fact[1:]}(?!\d)", haystack) is not None
    if fact.startswith("第") and fact.endswith("天"):
        n = fact[1:-1]
        return bool(re.search(rf"第{n}[天日]", haystack)) or (n == "2" and any(w in haystack for w in _NEXT_DAY))
    ordinal = re.fullmatch(r"第(\d)([\u4e00-\u9fff])", fact)  # 第四种: 第四 in the source, or 四种 (祈禳已及六夜)
    if ordinal:
        n, thing = ordinal.groups()
        return re.search(rf"第{n}(?!\d)", haystack) is not None or contains(haystack, n + thing)
    counted = re.fullmatch(rf"(\d)([{_CLASSIFIERS}])(.)", fact)
    if counted:
        n, word, thing = counted.groups()
        # 四只 / 母子四虎: in the sentences that state the claim, the count with another counting word
        return (contains(haystack, n + word) or re.search(rf"{_num(n)}[{_CLASSIFIERS}]?{re.escape(thing)}", haystack)
                is not None or _in_compound(n, haystack))
    thing = re.fullmatch(r"(\d)([\u4e00-\u9fff])", fact)  # 三魔 where the source says 三个魔头
    if thing and re.search(rf"{_num(thing.group(1))}[{_CLASSIFIERS}]?{re.escape(thing.group(2))}", haystack):
        return True
    word = re.fullmatch(r"([二两三四五六七八九])([\u4e00-\u9fff])", fact)  # 八卦, 五常: a word as written
    if word:
        n = str(cn_to_int(word.group(1)))
        return re.search(rf"{_num(n)}[{_CLASSIFIERS}]?{re.escape(word.group(2))}", haystack) is not None
    small = re.match(r"(\d)(?!\d)", fact)
    if small and fact[1:2] and not fact[1:2].isdigit() and _in_compound(small.group(1), haystack):
        return True
    number = NUMBER.match(fact)
    if number and (not number.group(0).isdigit() or int(number.group(0)) >= 10) and contains(haystack, number.group(0)):
        return True
    return contains(haystack, fact)


HAN_NUMERALS = ("零〇", "一", "二两", "三", "四", "五", "六", "七", "八", "九")


def _in_compound(digit: str, haystack: str) -> bool:
    """A small number written as part of a word in the source, without a counting word (四只 / 母子四虎)."""
    return any(m.group(1) not in MEASURES for m in re.finditer(rf"[{HAN_NUMERALS[int(digit)]}]([\u4e00-\u9fff])", haystack))


def _num(digit: str) -> str:
    """A pattern for a small number as a digit or a numeral character (2, 二, 两)."""
    return f"[{digit}{HAN_NUMERALS[int(digit)]}]" if len(digit) == 1 else digit
