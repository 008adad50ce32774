"""Labelled benchmark cases and the corpus references they may point into.

A case file is JSON Lines, one case per line (blank lines and lines starting with ``#`` are
skipped). A judge case::

    {"id": "g01", "question": "...", "kind": "full", "label_enough": true,
     "context": [{"text": "...", "chapter": "第一回 ..."}],          # inline passages, and/or
     "refs": [{"chapter": 2, "start": 120, "end": 480, "sha": "ab12..."}],  # spans of a corpus file
     "corpus": "xiyouji.txt", "book": "西游记", "answer_strings": ["十万八千里"]}

``refs`` are resolved against ``corpus`` (a file name in the corpus directory, by default
``../shared/corpus`` next to the repository), so no novel text is stored in the repository.
``chapter`` is the chapter number; ``start``/``end`` are character offsets (Python string indices,
end exclusive) into that chapter's body, i.e. the text after its heading line up to the next
heading. ``sha`` (optional) is the first 12 hex digits of the SHA-256 of the resolved span: when
present the loader checks it, so a changed corpus file cannot silently give other text.

``answer_strings``: for a case labelled enough, strings that answer the question and must appear
in the context; for a case labelled not enough, strings that would answer the missing part and
must NOT appear in it (``scripts/verify_cases.py`` checks both).

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

from rag.checks import cn_to_int
from rag.errors import RagError
from rag.schemas import Passage

KINDS: tuple[str, ...] = ("full", "half", "related_not_containing", "unrelated", "multihop_both", "multihop_one")
#: The kinds whose label must be "enough"; every other kind is "not enough".
ENOUGH_KINDS = frozenset({"full", "multihop_both"})
STRATEGIES = ("simple", "complex")

#: Environment variable that overrides the corpus directory (the CLI has ``--corpus-dir``).
CORPUS_DIR_ENV = "EVAL_CORPUS_DIR"

_HEADING = re.compile(r"^(?:《[^》\n]*》目录\s*)?第([零〇一二两三四五六七八九十百千0-9]+)([回章])[ \t\u3000]*(.*)$",
                      re.MULTILINE)


class CaseError(RagError):
    """A case file or one of its corpus references is invalid. The message names file, line and case."""


def chinese_number(text: str) -> int:
    """'一百' -> 100, '二十三' -> 23, '十' -> 10, '23' -> 23. Raises ValueError on anything else."""
    if text.isdigit():
        return int(text)
    value = cn_to_int(text)
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

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"chapter": self.chapter, "start": self.start, "end": self.end}
        if self.sha:
            data["sha"] = self.sha
        return data


class Corpus:
    """A novel split into numbered chapters (headings like ``第一回　…`` or ``第1章 …``)."""

    def __init__(self, path: Path, title: str, chapters: dict[int, Chapter]) -> None:
        self.path = path
        self.title = title
        self.chapters = chapters

    @classmethod
    def from_file(cls, path: Path) -> Corpus:
        path = Path(path)
        if not path.is_file():
            raise CaseError(f"corpus file not found: {path} (set --corpus-dir or ${CORPUS_DIR_ENV})")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CaseError(f"cannot read corpus file {path}: {exc}") from exc
        first = text.lstrip().split("\n", 1)[0].strip()
        title = first[1:-1] if first.startswith("《") and first.endswith("》") else path.stem
        headings = list(_HEADING.finditer(text))
        chapters: dict[int, Chapter] = {}
        for i, match in enumerate(headings):
            try:
                number = chinese_number(match.group(1))
            except ValueError:
                continue
            if number in chapters:  # a later line that only looks like a heading
                continue
            body_start = min(match.end() + 1, len(text))
            body_end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
            name = " ".join(match.group(3).replace("\u3000", " ").split())
            label = f"第{match.group(1)}{match.group(2)}" + (f" {name}" if name else "")
            chapters[number] = Chapter(number=number, label=label, offset=body_start, text=text[body_start:body_end])
        if not chapters:
            raise CaseError(f"no chapter headings found in corpus file {path}")
        return cls(path, title, chapters)

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

    def corpus(self, name: str) -> Corpus:
        if name not in self.corpora:
            if Path(name).name != name:
                raise CaseError(f"corpus must be a file name inside the corpus directory, got {name!r}")
            self.corpora[name] = Corpus.from_file(self.corpus_dir / name)
        return self.corpora[name]


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
        try:
            corpus = loader.corpus(corpus_name.strip())
        except CaseError as exc:
            raise CaseError(f"{where}: {exc}") from None
        book = book or corpus.title
        for item in refs:
            if not isinstance(item, dict):
                raise CaseError(f"{where}: every ref must be an object {{chapter, start, end}}")
            sha = item.get("sha")
            ref = Ref(chapter=_int(item.get("chapter"), "ref chapter", where),
                      start=_int(item.get("start"), "ref start", where),
                      end=_int(item.get("end"), "ref end", where),
                      sha=str(sha) if sha else None)
            try:
                text = corpus.resolve(ref)
                label_text = corpus.chapter(ref.chapter).label
            except CaseError as exc:
                raise CaseError(f"{where}: reference does not resolve: {exc}") from None
            context.append(ContextPassage(text=text, chapter=label_text, ref=ref))
    if not context:
        raise CaseError(f"{where}: the case has no context (give 'context' and/or 'refs')")
    return Case(id=case_id, question=question, context=tuple(context), label_enough=label, kind=kind,
                answer_strings=tuple(answers), book=book, source=where, note=str(record.get("note") or ""))


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
