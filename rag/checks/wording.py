"""How an answer sentence words what it does not claim: the words that attribute it to its text ("资料
只说明", "并指出"), quoted words it denies its text uses or takes from the question, and a number it works
out from numbers its text states; a sentence whose subject its text never names; and what of a sentence
its text does not state word for word, in its order. Read by the sentence checks
(``rag.checks.sentences``). Pure."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from rag.checks.facts import ASKS, CLAUSES, LIST_MARKER, NUMBER, QUOTED, SOURCE_NOUN, facts_of
from rag.checks.negation import is_negated, sources_lack
from rag.checks.text import (
    FUNCTION_WORDS,
    STOP_EN,
    STOP_HAN,
    VARIANTS,
    Names,
    content,
    found_in,
    is_han,
    latin_words,
    normalize,
    stem,
)

# Words that attribute a claim to the cited text ("资料只说明", "并指出", "材料中记载"): the sentence says
# the text says it; they are not part of what is claimed
ATTRIBUTION = re.compile(rf"{SOURCE_NOUN}|指出|说明|提到|提及|写道|写明|记载|谈到|讲述|描述|叙述|表明|显示"
                         r"|持(?:这种|这一|此|该|同样的?)?(?:观点|看法|意见)")


def sum_of(fact: str, stated: Sequence[str]) -> bool:
    """A number the sentence works out from numbers its sources state ("代偿款30345.92元加保险费17044.26元
    （合计47390.18元）"): the sum of two of them, or of all."""
    def value(f: str) -> Decimal | None:
        m = NUMBER.match(f)
        try:
            return Decimal(m.group(0)) if m and "%" not in m.group(0) and ":" not in m.group(0) else None
        except InvalidOperation:
            return None

    target = value(fact)
    parts = [v for v in (value(f) for f in stated) if v is not None]
    if target is None or len(parts) < 2:
        return False
    return target == sum(parts) or any(a + b == target for i, a in enumerate(parts) for b in parts[i + 1:])


def unclaimed_quotes(body: str, question: str | None) -> list[str]:
    """Quoted words a sentence does not claim its sources say: those it denies they use ("资料本身没有用
    “聚众斗殴”来定性": a negation just before, in the same clause, or a clause on what the sources lack)
    and the question's own words it speaks of ("问题中的“人民币”")."""
    asked = normalize(question or "").text
    out = []
    for m in QUOTED.finditer(body):
        word = normalize(m.group(1)).text
        clause = CLAUSES.split(body[:m.start()])[-1]
        lead = clause[-_QUOTE_LEAD:]
        # a clause that says the sources do not say it ("资料并没有说…“不能解决”") denies it, however far
        if (asked and word and word in asked) or (lead and is_negated(lead)) or sources_lack(clause):
            out.append(m.group(0))
    return out


_QUOTE_LEAD = 12  # characters of its clause before a quote within which a negation denies it


def missing_subject(body: str, everything: str, names: Names, question: str | None) -> str | None:
    """A sentence opening with two content characters (a name: 宋江 of "宋江把那株绿杨树带根拔起") neither
    of which its cited sources have anywhere (``everything``) nor the question (the scene it sets,
    "取经成功后…", is not a claim of the sources): the claim is about someone else. Only the sentence's
    first clause: later ones open with what the subject did (自称, 并说), as often as not in other words."""
    asked = normalize(question or "").text
    for clause in [c for c in CLAUSES.split(body) if normalize(c).text][:1]:
        norm = normalize(clause).text
        head = norm[:2]
        if len(norm) < 4 or len(head) < 2 or not all(is_han(ch) and ch not in STOP_HAN for ch in head):
            continue
        if any(w in VARIANTS or w in FUNCTION_WORDS for w in (head[0], head, norm[:3])) or any(
                norm.startswith(n) for n in names):
            continue
        if not any(found_in(frozenset({ch}), everything) or ch in asked for ch in head):
            return head
    return None


# what the sentence may say in its own words: function words ("原著", "发生", "后来") and a chapter number,
# which is checked against the headings (rag.checks.sentences), not against the text's sentences
_GLUE = re.compile("|".join(sorted(map(re.escape, FUNCTION_WORDS), key=len, reverse=True)) + r"|第\d+[回章节]?")


def unaligned(claim: str, region: str, *, latin: bool = False) -> list[str]:
    """The content of ``claim`` that ``region`` (the sentences that state most of it) does not say in the
    claim's own order: Han characters other than function characters, digits and letters (both texts
    normalised), or, for texts in Latin script (``latin``, both as written), the stems of its content
    words. Empty when the claim is the region's own words (function words apart). A claim whose words
    are all somewhere in the region can still say another thing: "李某某持匕首将窦某某划伤" where the region says 窦某某 did it to
    李某某, 转让 where it says 授权; only its words in their order show code that the region says it."""
    if not latin:
        def keep(ch: str) -> bool:
            return ch.isalnum() and not (is_han(ch) and ch in STOP_HAN)
        a, b = list(_GLUE.sub(" ", claim)), list(region)
    else:
        def keep(ch: str) -> bool:
            return True
        a = [stem(w) for w in latin_words(claim) if len(w) >= 3 and w not in STOP_EN]
        b = [stem(w) for w in latin_words(region) if len(w) >= 3 and w not in STOP_EN]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    said = [False] * len(a)
    for block in matcher.get_matching_blocks():
        said[block.a:block.a + block.size] = [True] * block.size
    runs: list[str] = []
    last = -2
    for i, item in enumerate(a):
        if said[i] or not keep(item):
            continue
        if i == last + 1 and runs:
            runs[-1] += f" {item}" if latin else item
        else:
            runs.append(item)
        last = i
    return runs


# The words of a label of the answer's own making ("附带说明：", "相关情况：", "注意区分：")
LABEL_WORDS = "说明|情况|区分|补充|注意|结论|答案|总结|回答|要点|依据|背景|备注|提示|简答"
# A label the answer puts before a claim ("**蒯越说的不吉利之处**：", "附带说明：", "关于许某为何未找到所长："):
# it names the part of the question the rest answers
LABEL = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)、]\s*)?(?:\*\*[^*]{1,30}\*\*"
                   # a plain label of the answer's own making ("附带说明：", "相关情况：", "注意区分：")
                   rf"|[\u4e00-\u9fff]{{0,4}}(?:{LABEL_WORDS})"
                   # "关于许某为何未找到所长：": the part of the question it answers next
                   r"|关于[^:：。！？!?\n]{1,30})"
                   r"\s*[:：]\s*")
# words a label may use whatever the question's (its own label words, a reference to the question's
# parts, a negation the question words otherwise: 未找到 for 没有找到)
_OWN_LABEL = re.compile(rf"未|没有|没|不|第[一二三四五六七八九十\d]+(?:问|个问题|部分)|问题[一二三四五六七八九十\d]*|关于|附带|相关|"
                        rf"{LABEL_WORDS}")


def label_known(label: str, known: str, names: Names) -> bool:
    """Whether every word of a sentence's label ("关于许某为何未找到所长：") is in ``known`` (the
    normalised question and cited texts): a label naming what neither has ("关于猕猴为何…：") is checked
    with its sentence."""
    said = _OWN_LABEL.sub(" ", ASKS.sub(" ", LIST_MARKER.sub("", label)))  # its number, asking and own words aside
    return _all_known(said, known, names)


def _all_known(text: str, known: str, names: Names) -> bool:
    return all(found_in(forms, known) for _, forms in content(text, names).terms)


# the words that say a list follows ("该段情节如下：", "as follows:"), and all the words that open one
# ("诉讼请求包括：", "作案工具分别是：")
FOLLOWS = "如下|以下|下列|the following|as follows"
_OPENS = re.compile(rf"{FOLLOWS}|包括|包含|分别|主要|具体|有|是|为|涉及|列举|include[sd]?|are|were", re.IGNORECASE)


def lead_in(sentence: str, known: str, names: Names) -> bool:
    """Whether a sentence only opens what follows ("原告的诉讼请求包括[1]："): it ends in a colon, states no
    number and no negation, and its words, besides those that open a list, are the question's or the
    cited texts' (``known``, normalised). Its list's sentences make the claims."""
    body = sentence.rstrip()
    if not body.endswith((":", "：")) or facts_of(body) or is_negated(body):
        return False
    return _all_known(_OPENS.sub(" ", ASKS.sub(" ", LIST_MARKER.sub("", body))), known, names)
