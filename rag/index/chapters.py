"""A book as chapters, whatever file it came from: ``Chapter`` and ``LoadedBook``, the chapter
headings ("第二十七回 ...", "Chapter 12"), their numbers and the book's own word for a chapter, and
the clean-up every reader shares.
The one numeral parser is ``rag.checks.text.cn_to_int``; ``rag.scope.parse_number`` adds Arabic and
Roman numerals to it (a chapter number as a heading or a reader writes it)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from rag.scope import parse_number  # a chapter number as a heading writes it

SUPPORTED = ".epub, .txt, .md"  # the formats a book may come in, as messages name them

#: A chapter number as a heading or a question writes it ("二十七", "一零八", "27", "２７", "xii").
NUMBER = r"[0-9０-９零〇一二三四五六七八九十百千两]+"
# "第二十七回 ...", optionally after a short prefix such as "《》目录 " (seen in real files); ``unit``
# is the book's word for a chapter ("回", "章", "节"...).
CN_HEADING = re.compile(rf"^(?:\S{{0,8}}\s+)?(第\s*({NUMBER})\s*(?P<unit>[回章节卷部篇集])(?:[\s:：、.·—-].*)?)$")
EN_HEADING = re.compile(r"^((?:chapter|book|part)\s+([0-9]+|[ivxlcdm]+)\b.*)$", re.IGNORECASE)


@dataclass
class Chapter:
    num: int | None
    title: str
    text: str  # paragraphs separated by "\n", no leading/trailing blanks


@dataclass
class LoadedBook:
    title: str
    source: str  # file name
    format: str  # "epub" | "txt" | "md"
    chapters: list[Chapter] = field(default_factory=list)
    author: str = ""  # from the book's own metadata (a Gutenberg header, YAML, the EPUB's dc:creator)

    @property
    def chars(self) -> int:
        return sum(len(c.text) for c in self.chapters)


def heading_number(title: str) -> int | None:
    """The number of a chapter heading ("第二十七回 ..." -> 27, "Chapter XII" -> 12), else None."""
    m = CN_HEADING.match(title.strip()) or EN_HEADING.match(title.strip())
    return parse_number(m.group(2)) if m else None


def chapter_word(titles: Iterable[str]) -> tuple[str, str]:
    """(the Chinese word, the English word) for a chapter that the numbered headings among
    ``titles`` use most ("回", "章", "节"...; "chapter", "part", "book"), "" for a script whose
    headings are not numbered. Labels and notices that count a book's chapters say them in its words."""
    zh: Counter[str] = Counter()
    en: Counter[str] = Counter()
    for title in titles:
        title = title.strip()
        if m := CN_HEADING.match(title):
            zh[m.group("unit")] += 1
        elif m := EN_HEADING.match(title):
            en[m.group(1).split()[0].lower()] += 1
    return (zh.most_common(1)[0][0] if zh else "", en.most_common(1)[0][0] if en else "")


# Front and back matter: sections a book labels outside its chapter numbering ("序", "楔子",
# "Preface", "Letter 3", "Epilogue", "附录一"). A label is the whole line, or the label and a short title.
_MATTER_CN = r"序|序言|序章|自序|代序|前言|引子|引言|楔子|凡例|后记|後記|跋|尾声|尾聲|附录|附錄|番外|题记|題記"
_MATTER_EN = (r"preface|foreword|prologue|introduction|epilogue|afterword|appendix|postscript|"
              r"(?:letter|appendix)\s+(?:[0-9]+|[ivxlcdm]+|[a-z])|letters|author's note|note on the text|front matter")
MATTER_HEADING = re.compile(
    rf"^(?:(?:《[^》]{{1,20}}》)?(?:{_MATTER_CN})(?:[一二三四五六七八九十0-9０-９]{{1,3}})?(?:[\s:：、.·—-].{{0,40}})?"
    rf"|(?:{_MATTER_EN})(?:\s*[.:—–-]\s*.{{0,50}}|\s+to\s+.{{0,40}})?\.?)$",
    re.IGNORECASE,
)
#: A contents list's own heading ("目录", "Contents", "Table of Contents").
CONTENTS_HEADING = re.compile(r"^(?:目\s*录|目\s*錄|(?:table\s+of\s+)?contents)[:：.]?$", re.IGNORECASE)
CONTENTS_GAP = 80  # characters between two headings of a contents list at most
CONTENTS_RUN = 3  # headings in a row with no more between them make a contents list


def heading_kind(title: str) -> str | None:
    """"chapter" (a numbered heading), "matter" (front / back matter), "contents" or None."""
    title = title.strip()
    if not title:
        return None
    if heading_number(title) is not None:
        return "chapter"
    if CONTENTS_HEADING.match(title):
        return "contents"
    return "matter" if MATTER_HEADING.match(title) else None


def _key(title: str) -> str:
    """What a contents entry and its heading share: the unit and number of a numbered heading
    ("CHAPTER I.   Down the Hole" and "Chapter I." -> "chapter1"), else the title without spaces."""
    num = heading_number(title)
    if num is not None:
        m = re.search(r"第\s*[^\s回章节卷部篇集]*([回章节卷部篇集])", title)
        return f"{m.group(1) if m else title.split()[0].lower()}{num}"
    return re.sub(r"[\s\u3000.:：、·—–-]+", "", unicodedata.normalize("NFKC", title)).lower()


def contents_entries(titles: list[str], gaps: list[int]) -> set[int]:
    """The headings (indices) that are a contents list, not sections: a "目录" / "Contents" heading
    and the headings after it that come again later, and every run of ``CONTENTS_RUN`` or more
    headings with at most ``CONTENTS_GAP`` characters of text after each whose titles mostly come
    again later (a list that repeats the headings; short real chapters do not). The heading that ends a run is part of it when
    its title comes again later. ``gaps[i]`` is the text's length between heading i and the next."""
    keys = [_key(t) for t in titles]
    last = {key: k for k, key in enumerate(keys)}  # where each title is seen last
    n = len(titles)
    out: set[int] = set()
    for c, title in enumerate(titles):
        if heading_kind(title) == "contents":
            out.add(c)
            k = c + 1
            while k < n and last[keys[k]] > k:  # the entries a "目录" lists come again as headings
                out.add(k)
                k += 1
    i = 0
    while i < n:
        j = i
        while j < n and gaps[j] <= CONTENTS_GAP and j not in out:
            j += 1
        run = range(i, j)
        if len(run) >= CONTENTS_RUN and 2 * sum(last[keys[k]] >= j for k in run) >= len(run):
            out.update(run)
            if j < n and last[keys[j]] > j:
                out.add(j)  # the last entry, followed by text that is not its chapter
        i = j + 1
    return out


# Section titles a book marks by layout alone (a collection of stories: "狂人日记", "孔乙己", with no
# "第N回"): a short line standing alone after a wider blank gap than the book's paragraphs use.
TITLE_MAX_CHARS = 24
_TITLE_PUNCT = re.compile(r"[。！？；，、：…!?;,:]|[.”\"’]$")
_TITLE_OPENERS = "“\"‘'「『(（[【<《—-*·•"
TITLE_MIN_RUN = 3  # titles found in the book at least this many times
TITLE_MIN_SPACING = 500  # median characters between two layout titles at least (sections, not stray lines)
TITLE_LONG_SPAN = 3  # a stretch between headings this many times the median chapter may hold layout titles


def layout_titles(lines: list[str], headings: list[int]) -> list[int]:
    """The lines (indices) that title a section by layout: a short line with no sentence punctuation,
    not a numeral (a story's inner "一", "二") nor a repeated byline ("·鲁迅·"), with a blank line
    after it and, before it, a blank gap wider than the book's paragraph gaps (90 % of its lines
    follow a narrower one) and at least two lines. Taken only when ``TITLE_MIN_RUN`` of them or
    more lie where the ``headings`` the book already has (line indices) leave a stretch
    ``TITLE_LONG_SPAN`` times longer than their median chapter (anywhere when it has fewer than
    three), and when they recur ``TITLE_MIN_SPACING`` characters apart or more (median): a book
    cut by its numbered headings keeps exactly those."""
    blank = [not ln.strip(" \t\u3000\r") for ln in lines]
    gaps: list[int] = []  # blank lines before each line
    run = 0
    for is_blank in blank:
        gaps.append(run)
        run = run + 1 if is_blank else 0
    used = sorted(gaps[i] for i in range(len(lines)) if not blank[i])
    if len(used) < 20:
        return []
    wide = max(2, used[int(len(used) * 0.9)] + 1)
    taken = set(headings)

    def bare(i: int) -> str:
        return lines[i].strip(" \t\u3000\r")

    found = [i for i in range(1, len(lines) - 1)
             if not blank[i] and gaps[i] >= wide and gaps[i] < i and blank[i + 1] and i not in taken
             and len(bare(i)) <= TITLE_MAX_CHARS and not _TITLE_PUNCT.search(bare(i))
             and bare(i)[0] not in _TITLE_OPENERS and parse_number(bare(i)) is None]
    seen: dict[str, int] = {}
    for i in found:
        seen[bare(i)] = seen.get(bare(i), 0) + 1
    found = [i for i in found if seen[bare(i)] < 3]
    chars = [0]  # characters before each line
    for line in lines:
        chars.append(chars[-1] + len(line.strip()))
    bounds = sorted(taken)
    if len(bounds) >= 3:
        lengths = sorted(chars[b] - chars[a] for a, b in zip(bounds, bounds[1:], strict=False))
        limit = TITLE_LONG_SPAN * lengths[len(lengths) // 2]
        edges = [0, *bounds, len(lines)]
        spans = [(a, b) for a, b in zip(edges, edges[1:], strict=False) if chars[b] - chars[a] > limit]
        if sum(1 for i in found if any(a < i < b for a, b in spans)) < TITLE_MIN_RUN:
            return []
    if len(found) < TITLE_MIN_RUN:
        return []
    spacing = sorted(chars[b] - chars[a] for a, b in zip(found, found[1:], strict=False))
    return found if spacing[len(spacing) // 2] >= TITLE_MIN_SPACING else []


def number_chapters(chapters: list[Chapter], reading_order: bool = False) -> list[Chapter]:
    """Number chapters by the book's own numbers ("第一百零八回" -> 108, "Chapter XII" -> 12) when the
    numbered headings increase; front matter ("序", "Preface", "Letter 1", an untitled opening) is
    chapter 0, before chapter 1 under a spoiler limit; back matter ("Epilogue", "附录") and labelled
    sections between chapters get no number (outside every chapter range). When the numbers do not
    increase, the chapters are numbered 1..n in reading order (the labelled sections still outside);
    a book without numbered headings is numbered 1..n throughout. ``reading_order``: 1..n whatever
    the headings say (sections titled by layout, some with numbered parts of their own)."""
    parsed = [heading_number(c.title) for c in chapters]
    matter = [p is None and (not c.title.strip() or heading_kind(c.title) == "matter")
              for c, p in zip(chapters, parsed, strict=True)]
    numbered = [p for p in parsed if p is not None]
    if not numbered:
        for seq, chapter in enumerate(chapters, start=1):
            chapter.num = seq
        return chapters
    body = len(chapters) - sum(matter)
    use_parsed = not reading_order and len(numbered) >= max(1, body // 2) and all(
        a < b for a, b in zip(numbered, numbered[1:], strict=False)
    )
    seq = 0
    seen = False
    for chapter, num, is_matter in zip(chapters, parsed, matter, strict=True):
        if is_matter or (use_parsed and num is None):
            chapter.num = None if seen else 0
            continue
        seq += 1
        chapter.num = num if use_parsed else seq
        seen = True
    return chapters


def clean_paragraphs(text: str) -> str:
    """Strip every line, drop blank ones, collapse inner runs of spaces (keeps paragraph breaks)."""
    lines = []
    for raw in text.splitlines():
        line = re.sub(r"[ \t\u00a0\u3000]+", " ", raw).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


# A chapter's last line that only says the chapter (or book) ends: "(本章完)", "（全书完）", "本回完",
# "(未完待续)". It carries nothing to retrieve and made every chapter's last chunk alike.
_TRAILER = re.compile(r"^[(（\[【]?\s*(?:本[章回卷节]完|全书完|全文完|未完待续|待续|完)\s*[)）\]】]?$")


def drop_trailers(text: str) -> str:
    """``text`` without its trailing end-of-chapter lines."""
    lines = text.split("\n")
    while lines and (not lines[-1].strip() or _TRAILER.match(lines[-1].strip())):
        lines.pop()
    return "\n".join(lines)
