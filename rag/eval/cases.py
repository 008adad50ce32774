"""Labelled benchmark cases and the corpus references they may point into.

A case file is JSON Lines, one case per line (blank lines and lines starting with ``#`` are
skipped). A judge case::

    {"id": "g01", "question": "...", "kind": "full", "label_enough": true,
     "context": [{"text": "...", "chapter": "第一回 ..."}],          # inline passages, and/or
     "refs": [{"chapter": 2, "start": 120, "end": 480, "sha": "ab12..."}],  # spans of a corpus file
     "corpus": "xiyouji.txt", "book": "西游记", "answer_strings": ["十万八千里"]}

``refs`` are resolved against ``corpus`` (a file in the corpus directory, by default
``../shared/corpus`` next to the repository, e.g. ``"xiyouji.txt"`` or ``"dev/hongloumeng.txt"``),
so no book text is stored in the repository. ``chapter`` is the chapter number; ``start``/``end``
are character offsets (Python string indices, end exclusive) into that chapter's body, i.e. the text
after its heading line up to the next heading (line ends read as ``\n``, CRLF or not). ``sha``
(optional) is the first 12 hex digits of the SHA-256 of the resolved span: when present the loader
checks it, so a changed corpus file cannot silently give other text. ``title`` (optional) must equal
the chapter's label when given, a readable check that the number means the section meant.

How a file is cut into chapters:

- numbered headings (the default): "第一回 ..." / "第一一八回 ..." (numerals read by
  ``rag.index.chapters.parse_number``, the project's one numeral parser) or, in an English book,
  "Chapter 12" / "CHAPTER XII" (indented or not). A contents list that repeats the headings is
  skipped as the app's loader skips it (``rag.index.chapters.contents_entries``), and a Project
  Gutenberg file is cut to what lies between its START and END lines first.
- ``"split": "titles"`` on the case: a collection of stories or essays with no numbered headings
  (鲁迅《呐喊》): every short line standing alone between blank lines that is not a numeral, a
  numbered heading or a byline (a line repeated three times or more, such as "·鲁迅·") starts a
  section. Sections are numbered 1..n in reading order - the app's own rule for a book without
  numbered headings (``rag.index.chapters.number_chapters``) - and labelled with their title.
- a ``.json`` file in SQuAD form (``{"data": [{"title"?, "paragraphs": [{"context", "qas": [{"id",
  ...}]}]}]}``: CAIL2019, Chinese SQuAD 2.0): every paragraph is a chapter, numbered 1..n in file
  order and labelled with its article's title (else its ``casename``, else "段落 N"). A ref may name
  the paragraph by one of its questions instead of a number: ``{"qid": "1_2", "start": 0, "end": 596,
  "sha": ...}`` (with ``chapter`` too, both must agree).

``answer_strings``: for a case labelled enough, strings that answer the question and must appear
in the context; for a case labelled not enough, strings that would answer the missing part and
must NOT appear in it (``scripts/verify_cases.py`` checks both). A case whose label comes from a
dataset's own human annotation (``"label_source": "dataset"``, e.g. a SQuAD 2.0 question marked
unanswerable) may be labelled not enough without answer strings: nobody knows the answer it lacks.

A router case is ``{"id", "question", "label_strategy": "simple"|"complex", "kind"?}``; a judge
case file also works for the router, every one of its questions being about the book ("complex").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import RagError
from rag.index.chapters import EN_HEADING, contents_entries, heading_number, parse_number
from rag.index.loaders import gutenberg_text
from rag.schemas import Passage

KINDS: tuple[str, ...] = ("full", "half", "related_not_containing", "unrelated", "multihop_both", "multihop_one")
#: The kinds whose label must be "enough"; every other kind is "not enough".
ENOUGH_KINDS = frozenset({"full", "multihop_both"})
STRATEGIES = ("simple", "complex")

#: Environment variable that overrides the corpus directory (the CLI has ``--corpus-dir``).
CORPUS_DIR_ENV = "EVAL_CORPUS_DIR"

_HEADING = re.compile(r"^(?:《[^》\n]*》目录\s*)?第([零〇一二两三四五六七八九十百千0-9]+)([回章])[ \t\u3000]*(.*)$",
                      re.MULTILINE)
_EN_HEADING_LINE = re.compile(r"^[ \t\u3000]*((?:chapter)\s+([0-9]+|[ivxlcdm]+)\b\.?[ \t]*(.*?))[ \t]*$",
                              re.MULTILINE | re.IGNORECASE)
#: How a text file is cut into chapters: numbered headings (default) or standalone title lines.
SPLITS = ("headings", "titles")
_TITLE_MAX = 15  # characters of a standalone title line at most ("《呐喊》自序", "头发的故事")
_SENTENCE_PUNCT = re.compile(r"[。，！？：；、“”…—,;!?]")


class CaseError(RagError):
    """A case file or one of its corpus references is invalid. The message names file, line and case."""


def chinese_number(text: str) -> int:
    """'一百' -> 100, '二十三' -> 23, '一一八' -> 118, '十' -> 10, '23' -> 23, 'xii' -> 12 (the app's
    ``parse_number``, so a heading means here what it means to the reader). Raises ValueError on anything else."""
    value = parse_number(text)
    if value is None:
        raise ValueError(f"not a Chinese number: {text!r}")
    return value


def span_sha(text: str) -> str:
    """The fingerprint stored in a reference: 12 hex digits of SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def default_corpus_dir() -> Path:
    """``$EVAL_CORPUS_DIR`` if set, else ``../shared/corpus`` relative to the repository root."""
    env = os.environ.get(CORPUS_DIR_ENV, "").strip()
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


# --------------------------------------------------------------------------- corpus
@dataclass(frozen=True)
class Chapter:
    number: int
    label: str  # e.g. "第二回 悟彻菩提真妙理 断魔归本合元神"
    offset: int  # where the body starts in the file's text
    text: str  # the body: after the heading line, up to the next heading


@dataclass(frozen=True)
class Ref:
    chapter: int
    start: int
    end: int
    sha: str | None = None
    qid: str | None = None  # a QA dataset's question id naming the paragraph
    title: str | None = None  # the chapter's label, checked when given

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"chapter": self.chapter}
        if self.qid:
            data = {"qid": self.qid}
        if self.title:
            data["title"] = self.title
        data.update({"start": self.start, "end": self.end})
        if self.sha:
            data["sha"] = self.sha
        return data


class Corpus:
    """A book split into numbered chapters (see the module's docstring for how each kind of file is cut)."""

    def __init__(self, path: Path, title: str, chapters: dict[int, Chapter],
                 qids: dict[str, int] | None = None) -> None:
        self.path = path
        self.title = title
        self.chapters = chapters
        self.qids = qids or {}  # question id -> paragraph number (QA datasets)

    @classmethod
    def from_file(cls, path: Path, split: str = "headings") -> Corpus:
        path = Path(path)
        if not path.is_file():
            raise CaseError(f"corpus file not found: {path} (set --corpus-dir or ${CORPUS_DIR_ENV})")
        if split not in SPLITS:
            raise CaseError(f"unknown split {split!r} for {path.name}; expected one of {', '.join(SPLITS)}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CaseError(f"cannot read corpus file {path}: {exc}") from exc
        if path.suffix.lower() == ".json":
            return cls._from_qa_json(path, text)
        text = text.lstrip("\ufeff")
        text, fields = gutenberg_text(text)
        first = text.lstrip().split("\n", 1)[0].strip()
        title = fields.get("title") or path.stem
        if first.startswith("《") and "》" in first:
            title = first[1:first.index("》")]
        chapters = cls._titled_sections(text) if split == "titles" else cls._numbered_chapters(text)
        if not chapters:
            raise CaseError(f"no chapter headings found in corpus file {path}")
        return cls(path, title, chapters)

    @staticmethod
    def _numbered_chapters(text: str) -> dict[int, Chapter]:
        headings: list[tuple[int, int, int, str]] = []  # (line start, body start, number, label)
        for match in _HEADING.finditer(text):
            try:
                number = chinese_number(match.group(1))
            except ValueError:
                continue
            name = " ".join(match.group(3).replace("\u3000", " ").split())
            label = f"第{match.group(1)}{match.group(2)}" + (f" {name}" if name else "")
            headings.append((match.start(), min(match.end() + 1, len(text)), number, label))
        if not headings:  # an English book: "Chapter 12", "CHAPTER XII."
            for match in _EN_HEADING_LINE.finditer(text):
                en_number = heading_number(match.group(1))
                if en_number is not None and EN_HEADING.match(match.group(1)):
                    label = " ".join(match.group(1).split())
                    headings.append((match.start(), min(match.end() + 1, len(text)), en_number, label))
        headings.sort()
        ends = [h[0] for h in headings[1:]] + [len(text)] if headings else []
        gaps = [len(text[h[1]:end].strip()) for h, end in zip(headings, ends, strict=True)]
        # the app's loader does not take a contents list for chapters; nor do references
        skip = contents_entries([h[3] for h in headings], gaps)
        chapters: dict[int, Chapter] = {}
        for i, ((_, body_start, number, label), body_end) in enumerate(zip(headings, ends, strict=True)):
            if i in skip or number in chapters:  # a later line that only looks like a heading
                continue
            chapters[number] = Chapter(number=number, label=label, offset=body_start, text=text[body_start:body_end])
        return chapters

    @staticmethod
    def _titled_sections(text: str) -> dict[int, Chapter]:
        lines = text.split("\n")
        starts: list[int] = []  # character offset of each line
        pos = 0
        for line in lines:
            starts.append(pos)
            pos += len(line) + 1

        def bare(line: str) -> str:
            return line.strip(" \t\u3000\r")

        standalone = [i for i, line in enumerate(lines)
                      if bare(line) and len(bare(line)) <= _TITLE_MAX and not _SENTENCE_PUNCT.search(bare(line))
                      and (i == 0 or not bare(lines[i - 1])) and (i + 1 == len(lines) or not bare(lines[i + 1]))]
        counts: dict[str, int] = {}
        for i in standalone:
            key = bare(lines[i]).strip("·•")
            counts[key] = counts.get(key, 0) + 1
        titles = [i for i in standalone
                  if counts[bare(lines[i]).strip("·•")] < 3  # not a byline
                  and parse_number(bare(lines[i])) is None and heading_number(bare(lines[i])) is None]
        chapters: dict[int, Chapter] = {}
        for number, (i, nxt) in enumerate(zip(titles, [*titles[1:], len(lines)], strict=True), start=1):
            body_start = starts[i + 1] if i + 1 < len(lines) else len(text)
            body_end = starts[nxt] if nxt < len(lines) else len(text)
            chapters[number] = Chapter(number=number, label=bare(lines[i]), offset=body_start,
                                       text=text[body_start:body_end])
        return chapters

    @classmethod
    def _from_qa_json(cls, path: Path, text: str) -> Corpus:
        try:
            data = json.loads(text)
            articles = data["data"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CaseError(f"{path.name} is not a SQuAD-style JSON file ({{\"data\": [...]}}): {exc}") from None
        chapters: dict[int, Chapter] = {}
        qids: dict[str, int] = {}
        for article in articles if isinstance(articles, list) else []:
            if not isinstance(article, dict):
                continue
            for paragraph in article.get("paragraphs") or []:
                context = paragraph.get("context") if isinstance(paragraph, dict) else None
                if not isinstance(context, str):
                    continue
                number = len(chapters) + 1
                label = str(article.get("title") or paragraph.get("casename") or f"段落 {number}")
                chapters[number] = Chapter(number=number, label=label, offset=0, text=context)
                for qa in paragraph.get("qas") or []:
                    if isinstance(qa, dict) and qa.get("id") is not None:
                        qids[str(qa["id"])] = number
        if not chapters:
            raise CaseError(f"no paragraphs found in QA file {path}")
        return cls(path, path.stem, chapters, qids)

    def paragraph_of(self, qid: str) -> int:
        """The number of the paragraph that question ``qid`` is asked on (QA datasets)."""
        try:
            return self.qids[qid]
        except KeyError:
            raise CaseError(f"question id {qid!r} is not in {self.path.name}") from None

    def chapter(self, number: int) -> Chapter:
        try:
            return self.chapters[number]
        except KeyError:
            raise CaseError(f"chapter {number} does not exist in {self.path.name} "
                            f"(it has chapters {min(self.chapters)}..{max(self.chapters)})") from None

    def resolve(self, ref: Ref) -> str:
        """The text of ``ref``; CaseError when it does not resolve (or its fingerprint differs)."""
        chapter = self.chapter(ref.chapter)
        if not 0 <= ref.start < ref.end <= len(chapter.text):
            raise CaseError(f"span {ref.start}:{ref.end} is outside chapter {ref.chapter} of {self.path.name} "
                            f"(its body has {len(chapter.text)} characters)")
        if ref.title and ref.title != chapter.label:
            raise CaseError(f"chapter {ref.chapter} of {self.path.name} is {chapter.label!r}, not {ref.title!r}")
        text = chapter.text[ref.start:ref.end]
        if ref.sha and span_sha(text) != ref.sha:
            raise CaseError(f"span {ref.start}:{ref.end} of chapter {ref.chapter} in {self.path.name} "
                            f"no longer matches its fingerprint {ref.sha} (the corpus file changed?)")
        return text

    def locate(self, chapter: int, needle: str, *, before: int = 0, after: int = 0, occurrence: int = 1) -> Ref:
        """An authoring helper: the reference of ``needle`` in ``chapter`` widened by ``before`` and
        ``after`` characters (clipped to the chapter), with its fingerprint."""
        body = self.chapter(chapter).text
        index = -1
        for _ in range(occurrence):
            index = body.find(needle, index + 1)
            if index < 0:
                raise CaseError(f"{needle!r} (occurrence {occurrence}) is not in chapter {chapter} of {self.path.name}")
        start, end = max(0, index - before), min(len(body), index + len(needle) + after)
        return Ref(chapter, start, end, span_sha(body[start:end]))


# --------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class ContextPassage:
    text: str
    chapter: str = ""
    ref: Ref | None = None

    def to_passage(self, case_id: str, index: int, book_title: str = "") -> Passage:
        return Passage(id=f"{case_id}#{index}", text=self.text, book_title=book_title, chapter_title=self.chapter,
                       chapter_num=self.ref.chapter if self.ref else None,
                       start=self.ref.start if self.ref else 0, end=self.ref.end if self.ref else 0)


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    context: tuple[ContextPassage, ...]
    label_enough: bool
    kind: str
    answer_strings: tuple[str, ...] = ()
    book: str = ""
    source: str = ""  # "file:line", for messages
    note: str = ""
    label_source: str = ""  # "dataset": the label is the dataset's human annotation

    def passages(self) -> list[Passage]:
        """The context as the graph's Passages (numbered like retrieved passages)."""
        return [p.to_passage(self.id, i, self.book) for i, p in enumerate(self.context, start=1)]

    @property
    def context_text(self) -> str:
        return "\n".join(p.text for p in self.context)


@dataclass(frozen=True)
class RouteCase:
    id: str
    question: str
    label_strategy: str
    kind: str = ""
    source: str = ""


@dataclass
class _Loader:
    corpus_dir: Path
    corpora: dict[str, Corpus] = field(default_factory=dict)

    def corpus(self, name: str, split: str = "headings") -> Corpus:
        key = f"{split}:{name}"
        if key not in self.corpora:
            parts = Path(name).parts
            if not parts or Path(name).is_absolute() or any(part in ("..", ".") for part in parts) or "\\" in name:
                raise CaseError(f"corpus must be a file name inside the corpus directory (a sub-folder may be named: dev/x.txt), got {name!r}")
            self.corpora[key] = Corpus.from_file(self.corpus_dir / name, split)
        return self.corpora[key]


def jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON line of a case file; blank lines and # comments skipped."""
    path = Path(path)
    if not path.is_file():
        raise CaseError(f"case file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read case file {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseError(f"{path.name}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise CaseError(f"{path.name}:{number}: a case must be a JSON object")
        yield number, record


def _text(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CaseError(f"{where}: '{key}' must be a non-empty string")
    return value.strip()


def _int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CaseError(f"{where}: {what} must be an integer, got {value!r}")
    return value


def _parse_case(record: dict[str, Any], where: str, loader: _Loader) -> Case:
    raw_id = record.get("id")
    if raw_id is None or isinstance(raw_id, bool) or str(raw_id).strip() == "":
        raise CaseError(f"{where}: 'id' is missing")
    case_id = str(raw_id).strip()
    where = f"{where} (case {case_id})"
    question = _text(record, "question", where)
    kind = _text(record, "kind", where)
    if kind not in KINDS:
        raise CaseError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    label = record.get("label_enough")
    if not isinstance(label, bool):
        raise CaseError(f"{where}: 'label_enough' must be true or false")
    if label != (kind in ENOUGH_KINDS):
        raise CaseError(f"{where}: kind {kind!r} must be labelled label_enough={kind in ENOUGH_KINDS}")
    answers = record.get("answer_strings", [])
    if not isinstance(answers, list) or not all(isinstance(a, str) and a for a in answers):
        raise CaseError(f"{where}: 'answer_strings' must be a list of non-empty strings")

    context: list[ContextPassage] = []
    inline = record.get("context", [])
    if not isinstance(inline, list):
        raise CaseError(f"{where}: 'context' must be a list of {{text, chapter}}")
    for item in inline:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise CaseError(f"{where}: every context passage needs a non-empty 'text'")
        context.append(ContextPassage(text=item["text"], chapter=str(item.get("chapter") or "")))
    refs = record.get("refs", [])
    if not isinstance(refs, list):
        raise CaseError(f"{where}: 'refs' must be a list of {{chapter, start, end}}")
    book = str(record.get("book") or "")
    if refs:
        corpus_name = record.get("corpus")
        if not isinstance(corpus_name, str) or not corpus_name.strip():
            raise CaseError(f"{where}: a case with 'refs' needs 'corpus' (a file name in the corpus directory)")
        split = record.get("split", "headings")
        if split not in SPLITS:
            raise CaseError(f"{where}: unknown 'split' {split!r}; expected one of {', '.join(SPLITS)}")
        try:
            corpus = loader.corpus(corpus_name.strip(), split)
        except CaseError as exc:
            raise CaseError(f"{where}: {exc}") from None
        book = book or corpus.title
        for item in refs:
            if not isinstance(item, dict):
                raise CaseError(f"{where}: every ref must be an object {{chapter, start, end}}")
            sha, qid, title = item.get("sha"), item.get("qid"), item.get("title")
            try:
                if qid is not None:
                    number = corpus.paragraph_of(str(qid))
                    if item.get("chapter") is not None and _int(item["chapter"], "ref chapter", where) != number:
                        raise CaseError(f"question {qid!r} is asked on paragraph {number}, not {item['chapter']}")
                else:
                    number = _int(item.get("chapter"), "ref chapter", where)
            except CaseError as exc:
                raise CaseError(f"{where}: reference does not resolve: {exc}") from None
            ref = Ref(chapter=number,
                      start=_int(item.get("start"), "ref start", where),
                      end=_int(item.get("end"), "ref end", where),
                      sha=str(sha) if sha else None, qid=str(qid) if qid is not None else None,
                      title=str(title) if title else None)
            try:
                text = corpus.resolve(ref)
                label_text = corpus.chapter(ref.chapter).label
            except CaseError as exc:
                raise CaseError(f"{where}: reference does not resolve: {exc}") from None
            context.append(ContextPassage(text=text, chapter=label_text, ref=ref))
    if not context:
        raise CaseError(f"{where}: the case has no context (give 'context' and/or 'refs')")
    return Case(id=case_id, question=question, context=tuple(context), label_enough=label, kind=kind,
                answer_strings=tuple(answers), book=book, source=where, note=str(record.get("note") or ""),
                label_source=str(record.get("label_source") or ""))


def load_cases(path: str | Path, *, corpus_dir: str | Path | None = None, limit: int | None = None,
               kinds: list[str] | None = None, per_kind: int | None = None) -> list[Case]:
    """Judge cases from a JSONL file, corpus references resolved. Raises CaseError on any problem
    (naming the file, line and case) - a case file with one bad case is rejected whole.
    ``kinds`` keeps only those kinds; ``per_kind`` keeps the first N cases of each kind (a stratified
    subset for slow models); ``limit`` then keeps the first N cases."""
    path = Path(path)
    loader = _Loader(Path(corpus_dir) if corpus_dir else default_corpus_dir())
    if kinds:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise CaseError(f"unknown kind(s) {', '.join(unknown)}; expected some of {', '.join(KINDS)}")
    cases: list[Case] = []
    seen: set[str] = set()
    for number, record in jsonl_records(path):
        case = _parse_case(record, f"{path.name}:{number}", loader)
        if case.id in seen:
            raise CaseError(f"{path.name}:{number}: duplicate case id {case.id!r}")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise CaseError(f"case file {path} holds no cases")
    if kinds:
        cases = [c for c in cases if c.kind in kinds]
    if per_kind:
        seen_kinds: dict[str, int] = {}
        kept = []
        for case in cases:
            seen_kinds[case.kind] = seen_kinds.get(case.kind, 0) + 1
            if seen_kinds[case.kind] <= per_kind:
                kept.append(case)
        cases = kept
    return cases[:limit] if limit else cases


def load_route_cases(path: str | Path, *, limit: int | None = None) -> list[RouteCase]:
    """Router cases. A line with ``label_strategy`` is a router case; a judge case (with
    ``label_enough``) counts as a book question, i.e. ``complex``; its context is ignored and not resolved."""
    path = Path(path)
    cases: list[RouteCase] = []
    seen: set[str] = set()
    for number, record in jsonl_records(path):
        where = f"{path.name}:{number}"
        raw_id = record.get("id")
        if raw_id is None or str(raw_id).strip() == "":
            raise CaseError(f"{where}: 'id' is missing")
        case_id = str(raw_id).strip()
        where = f"{where} (case {case_id})"
        question = _text(record, "question", where)
        if "label_strategy" in record:
            label = record["label_strategy"]
            if label not in STRATEGIES:
                raise CaseError(f"{where}: 'label_strategy' must be 'simple' or 'complex', got {label!r}")
            kind = str(record.get("kind") or label)
        elif "label_enough" in record:
            label, kind = "complex", f"book:{record.get('kind', '?')}"
        else:
            raise CaseError(f"{where}: a router case needs 'label_strategy' (simple|complex)")
        if case_id in seen:
            raise CaseError(f"{where}: duplicate case id")
        seen.add(case_id)
        cases.append(RouteCase(id=case_id, question=question, label_strategy=label, kind=kind, source=where))
    if not cases:
        raise CaseError(f"case file {path} holds no cases")
    return cases[:limit] if limit else cases


def check_answer_strings(case: Case) -> list[str]:
    """Problems with a case's ``answer_strings``: every one must appear in the context of an
    "enough" case, and none may appear in the context of a "not enough" case."""
    if not case.answer_strings:
        if not case.label_enough and case.label_source == "dataset":
            return []  # a human "unanswerable" label: there is no answer to look for
        return [f"{case.source}: no answer_strings to check"]
    # an answer may be in a passage's chapter heading (第三十四回 ... 刘皇叔跃马过檀溪); a "not enough"
    # case is checked against its passages' text
    text = case.context_text
    if case.label_enough:
        text = "\n".join(f"{p.chapter}\n{p.text}" for p in case.context)
        return [f"{case.source}: labelled enough but {s!r} is not in its context" for s in case.answer_strings
                if s not in text]
    return [f"{case.source}: labelled not enough but {s!r} is in its context" for s in case.answer_strings
            if s in text]
