"""Stricter checks of a small model's pick (``rag.agent.extract``): the words it copied for a part of
the question, and the sentence it copied them from. A quote check (``verify_part``) accepts an answer
the quote's surroundings state; a 1.5B model that copies the one name of a sentence about something
else for "who" then passes it (measured on the dev sets' tune halves: false "enough" on 8 of 12
not-enough cases). A pick is refused, with the reason, when:

- the words are the question's own (谁, a name the part already says): no answer; or a bare yes or
  no, which says nothing code could compare with the sentence;
- the part is in another script than the sentence (an English question on a Chinese book): code
  cannot tell whether the sentence answers it, so it is not taken from a small model;
- the part asks where (在哪, 什么地方, where) and the copied words name only a time or a number;
- the kind of thing asked about (the word after 什么 / 几只 / 多少: 什么线, 几只小鸭; "what colour")
  is named neither in the sentence nor the one before it;
- the sentence and the one before it share no content word with the part, the copied words aside, or
  name none of the names a Chinese part writes in Latin letters (Qwest);
- they do not say what stands on each side of the question word (蒙古人带谁去日本当长官: the one
  who sent Han officials to Central Asia answers only one side); a side the named kind ties to the
  part, or that names the sources' own people, need not be said (measured on the dev sets' recorded
  replies: false "enough" 10 -> 4 of 193 not-enough cases, answerable judged enough 52 -> 49).

Pure: no model, no I/O."""

from __future__ import annotations

import re

from rag.checks.quotes import is_yes_no
from rag.checks.text import (
    MEASURES,
    STOP_HAN,
    content,
    found_in,
    han_pairs,
    is_han,
    latin_names,
    normalize,
    script_of,
    stem,
)
from rag.i18n import Msg

# Words after 什么/哪 that name no particular kind of thing: they say nothing a sentence must repeat.
GENERIC = frozenset(["地方", "时候", "东西", "事情", "样子", "办法", "意思", "原因", "缘故", "人", "事", "话",
                     "名字", "结果", "方法", "关系", "用途", "目的", "作用", "身份", "职业", "程度"])
_KIND_AFTER = re.compile(r"(?:什么|哪种|哪一种|哪类|何种|哪位|哪一位|哪个|哪一个|哪家|哪国|几|多少)([\u4e00-\u9fff]{1,3})")
_KIND_BEFORE = re.compile(r"([\u4e00-\u9fff]{2})(?:叫什么|姓什么|是谁|是哪位)")  # 那个医生叫什么 -> 医生
_PRONOUNS = frozenset(["他们", "她们", "我们", "你们", "那人", "此人", "这人", "那个", "这个", "他的", "她的", "自己"])
# a question of place (在哪, 什么地方, where), and an answer that names only a time or a number
_ASKS_WHERE = re.compile(r"哪里|哪儿|在哪(?![一个]?[年月日天时])|何处|何地|什么地方|\bwhere\b", re.I)
_ONLY_TIME = re.compile(r"(?:[\d零〇一二两三四五六七八九十百千万年月日号时点分秒至到前后左右初底末间\s,，.:/~～\-—]"
                        r"|\b(?:january|february|march|april|may|june|july|august|september|october|november|december|"
                        r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b|\b(?:to|and|until|in|on|at)\b)+",
                        re.I)
_SUFFIXES = "子儿头们"  # 板子, 鸟儿: the head of the word is its first character
_QUESTION_WORDS = frozenset(["谁", "什么", "哪", "哪里", "几", "多少", "怎么", "怎样", "为什么", "who", "what",
                             "where", "when", "which", "how", "why"])


def asked_kind(part: str) -> str | None:
    """The kind of thing the part asks about, as the part writes it (什么线 -> 线, 几只小鸭 -> 小鸭,
    多少板子 -> 板子); None when it names none or only a generic one (什么地方)."""
    for m in _KIND_AFTER.finditer(part):
        word = m.group(1)
        if any(word.startswith(g) for g in GENERIC):
            continue
        if word[0] in MEASURES and len(word) > 1:  # 几只小鸭: the counting word, then the thing
            word = word[1:]
        elif word[0] in MEASURES:  # 几天, 多少斤: the unit is all it asks for, and a number answers it
            continue
        word = "".join(ch for ch in word[:2] if is_han(ch) and ch not in STOP_HAN)
        if word and not any(word.startswith(g) for g in GENERIC):
            return word
    for m in _KIND_BEFORE.finditer(part):
        word = m.group(1)
        if word not in _PRONOUNS and not any(ch in STOP_HAN for ch in word) and word not in GENERIC:
            return word
    return None


def pick_refused(part: str, answer: str, sentence: str, before: str = "",
                 common: frozenset[str] = frozenset()) -> Msg | None:
    """Why a small model's pick is refused (see the module docstring), or None when nothing here
    refuses it. ``sentence``: the one it copied from; ``before``: the sentence before it; ``common``:
    words the sources repeat (``frequent_words``: mostly their people and places), which alone do not
    show that a sentence speaks of what the part asks."""
    answer_norm, part_norm = normalize(answer).text, normalize(part).text
    if not answer_norm or answer_norm in part_norm or answer.strip().lower() in _QUESTION_WORDS:
        return Msg.of("check.pick_echo")
    if is_yes_no(answer):
        return Msg.of("check.pick_yes_no")
    if script_of(part) != script_of(sentence):
        return Msg.of("check.pick_other_language")
    window = normalize(f"{before}{sentence}").text
    where = _ASKS_WHERE.search(part)
    if where and _ONLY_TIME.fullmatch(answer.strip()):  # a place asked, a date or a count copied
        return Msg.of("check.pick_time_for_place")
    kind = asked_kind(part)
    # the head of the word names the kind (戒严令 is a 命令, 小鸭 a 鸭): its last character, or its
    # first before a suffix (板子)
    head = None if kind is None else (kind[0] if len(kind) > 1 and kind[-1] in _SUFFIXES else kind[-1])
    if kind is not None and _KIND_BEFORE.search(part) and kind in part and not _KIND_AFTER.search(part):
        head = kind  # 医生 of 那个医生叫什么: one character of it (生) says nothing
    if head is not None and normalize(head).text not in window:
        return Msg.of("check.pick_other_kind", kind=kind)
    if not _speaks_of(part, answer, window, common):
        return Msg.of("check.pick_not_about")
    # a name a Chinese part writes in Latin letters (Qwest, UGSS) is what it asks of: a sentence
    # with none of them is about something else
    names = latin_names(part) - latin_names(answer) if script_of(part) == "han" else set()
    if names and not any(normalize(name).text in window for name in names):
        return Msg.of("check.pick_not_about")
    # what is asked is said next to the question word (在什么地方找到了, 居住在哪, 戒指是谁给的): a
    # sentence that names the part's people but none of the words around its question word is about
    # another moment of theirs (找出北门 for 找到了); each side must be said (below)
    # the sources' own people and places (``common``) a sentence may leave out: it is theirs
    sides = [side for side in _beside_question(part_norm) if not any(p in common for p in side)]
    if kind is not None:
        # the named kind (什么韵, 多少个家庭) ties its own side to the part; of the other side one
        # character is enough (他买了几只小鸭 / 他买小鸭，一共四只), but none is not (每平方英里有多少个家庭
        # / 共有140,079户家庭)
        kind_norm = normalize(kind).text
        others = [side for side in sides if not any(kind_norm in p or p in kind_norm for p in side)]
        if any(side and not any(ch in window for p in side for ch in p if ch not in STOP_HAN) for side in others):
            return Msg.of("check.pick_not_about")
    elif any(side and not any(_said(p, window) for p in side) for side in sides):
        return Msg.of("check.pick_not_about")
    return None


_ASPECT = "了过着的"


def _said(pair: str, window: str) -> bool:
    """Whether ``window`` writes the two characters of ``pair`` together or with one between them
    (给的 in 给我的: a sentence words what is asked in its own way), or a verb with another aspect
    word (来了 in 来的是何先生)."""
    if pair in window or re.search(re.escape(pair[0]) + "." + re.escape(pair[1]), window):
        return True
    return pair[1] in _ASPECT and re.search(re.escape(pair[0]) + f"[{_ASPECT}]", window) is not None


_HAN_QUESTION = re.compile(r"什么地方|什么时候|为什么|什么|哪里|哪儿|哪|谁|几|多少|怎么|怎样|何")


# Adverbs of time and order a sentence leaves out when it says the same thing (老张最后在哪找到了老李
# / 老张在河边找到了老李): not what is asked
_ADVERBS = re.compile(r"最后|最终|最初|后来|当时|先前|起先|起初|曾经|已经|终于|首先|然后|随后|一共|总共|共计")


def _beside_question(norm: str) -> list[list[str]]:
    """The pairs of Han characters among the four before and the four after the first question word
    of a normalised part, one list a side, all but those of two function characters (偿还 and 到了
    count: a verb may end in one), its adverbs of time and order left out."""
    norm = _ADVERBS.sub("", norm)
    m = _HAN_QUESTION.search(norm)
    if m is None:
        return []
    sides = (norm[max(0, m.start() - 4):m.start()], norm[m.end():m.end() + 4])
    pairs = [[side[i:i + 2] for i in range(len(side) - 1)
              if is_han(side[i]) and is_han(side[i + 1]) and not (side[i] in STOP_HAN and side[i + 1] in STOP_HAN)]
             for side in sides]
    # a generic word right after the question word (什么职业, 什么原因) is what the answer names
    after = pairs[1]
    if after and after[0] == sides[1][:2] and any(after[0].startswith(g) for g in GENERIC):
        pairs[1] = []
    return pairs


def _speaks_of(part: str, answer: str, window: str, common: frozenset[str] = frozenset()) -> bool:
    """Whether ``window`` (normalised) states something the part names: two Han characters the part
    writes together (宝玉, 早起; one character alone, 玉 or 起, says little; the copied words may be
    among them: 整整哭了三天 for 整整哭了几天), or for a part without such pairs, one of its content
    terms besides the answer's."""
    if script_of(part) == "latin":
        return _speaks_of_latin(part, answer, window, common)
    pairs = han_pairs(normalize(part).text)
    # what the part says of its people (偷, 打折, 月例), not only who they are: a sentence that names
    # 孔乙己 and says nothing of what is asked about him is about something else
    telling = [p for p in pairs if p not in common]
    if telling:
        return any(p in window for p in telling)
    if pairs:
        return any(p in window for p in pairs)
    answer_terms = {t for t, _ in content(answer).terms}
    terms = [(t, forms) for t, forms in content(part).terms if t not in answer_terms and not t.isdigit()]
    return not terms or any(found_in(forms, window) for _, forms in terms)


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")
_SENTENCE_START = re.compile(r"(?:^|[?!]|(?<!\bMr|\bMs|\bDr|\bSt)(?<!\bMrs)\.)\W*$")


def _capitalised(part: str) -> set[str]:
    """The words an English part capitalises where a sentence does not start (its names), lower case."""
    words = {m.group(0).lower() for m in _CAPITALISED.finditer(part) if not _SENTENCE_START.search(part[:m.start()])}
    return words | {stem(w) for w in words}


def _speaks_of_latin(part: str, answer: str, window: str, common: frozenset[str]) -> bool:
    """For an English part: the window states one of its words (by stem) other than the answer's, the
    words the sources repeat (their people: Elizabeth, Jane) and the names the part capitalises
    (Lady Catherine, Hertfordshire), which alone say nothing of what is asked."""
    answer_terms = {t for t, _ in content(answer).terms}
    names = _capitalised(part)
    telling = [(t, forms) for t, forms in content(part).terms
               if t not in answer_terms and not t.isdigit() and not (forms & common) and not (forms & names)]
    return not telling or any(found_in(forms, window) for _, forms in telling)
