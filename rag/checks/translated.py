"""What a sentence in one language and a source's words in the other have in common, read through
the bundled dictionary (CC-CEDICT) and the pinyin of the names the source itself writes
(``rag.crosslingual``): the evidence code can stand behind when a model says that a translation
states its source, and the difference code can show when it does not.

- An English sentence on Chinese words: the Chinese words of the source that the sentence names (its
  pinyin names, "Xiren" -> 袭人; its words by gloss, "ring" -> 戒指).
- A Chinese sentence on English words: the sentence's words that are a gloss of the source's words
  ("letter" -> 信, "Elizabeth" -> 伊丽莎白). Names the dictionary lacks (most of a novel's people) give
  nothing: they are neither found nor missed.
Pure apart from the dictionary, which loads once per process (about 3 s) on the first such sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.checks.negation import is_negated
from rag.crosslingual import STOPWORDS, BookText, chinese_terms, english_forms, glossary, script_of

_WORD = re.compile(r"[A-Za-z]+")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]{3,}")
# characters of shared words that say a sentence speaks of the same thing (大 alone, a gloss of
# "father", does not)
MIN_GLOSS_CHARS = 2
# English words the dictionary glosses with so many Chinese words that a hit says nothing
MAX_GLOSSES = 12


def _han_glosses(english: str) -> dict[str, str]:
    """The Chinese words of at least ``MIN_GLOSS_CHARS`` characters that CC-CEDICT gives as the
    translation of ``english``'s words: Chinese word -> the English word it translates."""
    found: dict[str, str] = {}
    g = glossary()
    for word in _WORD.findall(english):
        low = word.lower()
        if low in STOPWORDS or len(low) < 3:
            continue
        for form in english_forms(low):
            heads = g.by_gloss.get(form, [])
            if len(heads) > MAX_GLOSSES:
                continue
            for head in heads:
                if len(head) >= MIN_GLOSS_CHARS:
                    found.setdefault(head, word)
    return found


def shared_across(sentence: str, window: str) -> list[str]:
    """The words a ``sentence`` in one script and a source ``window`` in the other share through the
    dictionary and the window's own names, as Chinese words."""
    # words of the source's own script that the sentence quotes ("I am inclined to believe it all
    # Darcy's" inside a Chinese sentence) are shared as they stand
    if script_of(window) == "han":
        quoted = [w for w in _HAN_RUN.findall(sentence) if w in window]
    else:
        written = {w.lower() for w in _WORD.findall(window)}
        quoted = [w for w in _WORD.findall(sentence) if len(w) >= 3 and w.lower() not in STOPWORDS and w.lower() in written]
    if script_of(window) == "han":
        words = [w for w in chinese_terms(sentence, BookText([window]), glossary()) if w in window]
        # single characters (坟, 药, 添) count only together: one alone is shared by chance
        if sum(len(w) for w in words) < MIN_GLOSS_CHARS:
            words = []
        return list(dict.fromkeys(quoted + words))
    return list(dict.fromkeys(quoted + [head for head in _han_glosses(window) if head in sentence]))


def words_across(question: str, texts: Sequence[str]) -> list[str]:
    """The words of ``texts`` (sources written in one script) that a ``question`` in the other script
    names, as the texts write them: for an English (or pinyin) question on Chinese texts, the Chinese
    words its names and words stand for (``chinese_terms`` over the texts: "Qinggeng Peak" -> 青埂峰,
    "jade" -> 玉); for a Chinese question on English texts, the English words of the texts whose
    translation the question writes ("舞会" -> ball, "伊丽莎白" -> Elizabeth). [] when both are in one
    script."""
    joined = "\n".join(texts)
    source, asked = script_of(joined[:20_000]), script_of(question)
    if not source or not asked or source == asked:
        return []
    if source == "han":
        return [w for w in chinese_terms(question, BookText(texts), glossary()) if w in joined]
    g = glossary()
    out: list[str] = []
    for word in dict.fromkeys(w.lower() for w in _WORD.findall(joined)):
        if len(word) < 3 or word in STOPWORDS:
            continue
        heads = [h for form in english_forms(word) for h in g.by_gloss.get(form, ())]
        if len(heads) <= MAX_GLOSSES and any(len(h) >= MIN_GLOSS_CHARS and h in question for h in heads):
            out.append(word)
    return out


def _name_spans(sentence: str) -> list[str]:
    """Runs of capitalised words that spell pinyin, one of them at least no English word: the pinyin
    names of an English sentence ("Wang Xing", "Song Jiang": Song is an English word too, Jiang is not;
    not "Knowing", "First", "Robert")."""
    g = glossary()
    spans: list[str] = []
    run: list[str] = []
    named = False
    for word in [*_WORD.findall(sentence), ""]:
        low = word.lower()
        if word and word[0].isupper() and low not in STOPWORDS and (low in g.syllables or not g.is_english(word)):
            run.append(word)
            named = named or not g.is_english(word)
            continue
        if run and named:
            spans.append(" ".join(run))
        run, named = [], False
    return spans


def names_elsewhere(sentence: str, window: str, source: str) -> list[str]:
    """The names an English ``sentence`` spells in pinyin that the cited ``source`` writes, when the
    quoted ``window`` writes none of them: the quote is about other people than the sentence."""
    if script_of(source) != "han":
        return []
    book = BookText([source])
    names = [t for span in _name_spans(sentence) for t in chinese_terms(span, book, glossary()) if len(t) >= 2]
    return [] if any(t in window for t in names) else list(dict.fromkeys(names))


def negation_apart(sentence: str, window: str) -> bool:
    """Whether the sentence is negated and the quoted words are not (a translation keeps its 'not')."""
    return is_negated(sentence) and not is_negated(window)
