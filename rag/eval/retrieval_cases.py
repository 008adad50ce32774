"""Retrieval dev cases: a question, its gold chapters, and evidence as references into a corpus file.

One case per line (``assets/eval/retrieval/xiyouji.jsonl``; ``#`` lines are comments)::

    {"id": "pl01", "group": "plain", "question": "...", "corpus": "xiyouji.txt", "gold_chapters": [3],
     "evidence": [{"chapter": 3, "start": 2489, "end": 2497, "sha": "97c5197e7b42"}], "need": "any",
     "twin": "pl01"}   # English questions: the Chinese question they translate

Evidence spans are resolved against the corpus at run time (``rag.eval.cases.Corpus``), so no novel
text is stored in the repository. A passage *holds* a span when the span's text (whitespace
ignored) is inside the passage's text. ``need``: ``any`` (one span in the top k is a hit) or ``all``
(every span must be, e.g. an answer in two chapters).

``check_cases`` is the dev set's own test: every reference resolves to its fingerprint, each span is
specific (its text occurs in no chapter outside the case's gold chapters, and at most
``MAX_OCCURRENCES`` times in them), English cases have a Chinese twin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rag.eval.cases import CaseError, Chapter, Corpus, Ref, default_corpus_dir, jsonl_records

GROUPS = ("plain", "paraphrase", "alias", "two_chapters", "english")
MAX_OCCURRENCES = 8  # of an evidence text in its own chapter (more: too common to be specific)
_SPACE = re.compile(r"\s+")


def squash(text: str) -> str:
    return _SPACE.sub("", text)


@dataclass(frozen=True)
class RetrievalCase:
    id: str
    group: str
    question: str
    gold_chapters: tuple[int, ...]
    evidence: tuple[str, ...]  # resolved span texts, whitespace removed
    refs: tuple[Ref, ...]
    need: str = "any"
    twin: str | None = None

    def hits(self, texts: list[str]) -> list[bool]:
        """For each evidence span, whether one of ``texts`` holds it."""
        squashed = [squash(t) for t in texts]
        return [any(e in t for t in squashed) for e in self.evidence]

    def found(self, texts: list[str]) -> bool:
        hits = self.hits(texts)
        return all(hits) if self.need == "all" else any(hits)


def load_cases(path: str | Path, corpus_dir: str | Path | None = None) -> tuple[list[RetrievalCase], dict[str, Corpus]]:
    """The cases of ``path`` with their evidence resolved, and the corpora they use (by file name).
    Raises ``CaseError`` (file, line, case) when a reference does not resolve."""
    path = Path(path)
    directory = Path(corpus_dir) if corpus_dir else default_corpus_dir()
    corpora: dict[str, Corpus] = {}
    cases: list[RetrievalCase] = []
    for number, record in jsonl_records(path):
        where = f"{path.name}:{number} ({record.get('id', '?')})"
        try:
            name = str(record["corpus"])
            if Path(name).is_absolute() or ".." in Path(name).parts or "\\" in name:
                raise CaseError(f"corpus must be a file in the corpus directory, got {name!r}")
            if name not in corpora:
                corpora[name] = corpus_for(directory / name)
            refs = tuple(Ref(int(r["chapter"]), int(r["start"]), int(r["end"]), r.get("sha")) for r in record["evidence"])
            texts = tuple(squash(corpora[name].resolve(ref)) for ref in refs)
            need = str(record.get("need", "any"))
            if need not in ("any", "all") or not refs:
                raise CaseError(f"need must be any or all and evidence non-empty (need={need!r})")
            cases.append(RetrievalCase(
                id=str(record["id"]), group=str(record["group"]), question=str(record["question"]),
                gold_chapters=tuple(int(c) for c in record["gold_chapters"]), evidence=texts, refs=refs,
                need=need, twin=record.get("twin")))
        except CaseError as exc:
            raise CaseError(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CaseError(f"{where}: malformed case ({exc!r})") from None
    return cases, corpora


def corpus_for(path: Path) -> Corpus:
    """The corpus of a novel with 第N回 headings (``Corpus.from_file``: offsets into the file's own
    chapter bodies); any other book (Chapter N, story titles) as the app reads it (``load_book``:
    offsets into the loaded chapter's text, numbered as the app numbers them)."""
    try:
        corpus = Corpus.from_file(path)
        # only 第N回 novels: an English book's references were written as the app reads it (unwrapped)
        if all(c.label.startswith("第") for c in corpus.chapters.values()):
            return corpus
    except CaseError:
        if not Path(path).is_file():
            raise
    from rag.errors import BookError
    from rag.index.loaders import load_book

    try:
        book = load_book(path, max_mb=100)
    except BookError as exc:
        raise CaseError(f"cannot read corpus file {path}: {exc}") from exc
    chapters = {c.num: Chapter(number=c.num, label=c.title, offset=-1, text=c.text)
                for c in book.chapters if c.num is not None}
    return Corpus(Path(path), book.title, chapters)


def pick_spots(corpus: Corpus, n: int, seed: int) -> list[tuple[int, int]]:
    """``n`` (chapter, offset) places drawn at random (``seed``), each chapter as likely as its share
    of the text, at least 500 characters apart: where a dev set's questions are written, so that
    the passages are not the ones the author remembers."""
    import random

    rng = random.Random(seed)
    numbers = sorted(corpus.chapters)
    sizes = [len(corpus.chapters[c].text) for c in numbers]
    spots: list[tuple[int, int]] = []
    while len(spots) < n:
        chapter = rng.choices(numbers, weights=sizes)[0]
        offset = rng.randrange(max(1, sizes[numbers.index(chapter)] - 200))
        if all(c != chapter or abs(o - offset) >= 500 for c, o in spots):
            spots.append((chapter, offset))
    return spots


def split_ids(ids: list[str], seed: int) -> tuple[list[str], list[str]]:
    """(tune, held-out): ``ids`` halved at random (``seed``), each half in the given order."""
    import random

    chosen = set(random.Random(seed).sample(ids, len(ids) // 2))
    return [i for i in ids if i not in chosen], [i for i in ids if i in chosen]


def check_cases(cases: list[RetrievalCase], corpus: Corpus) -> list[str]:
    """Problems of a dev set (empty when it is sound); see the module's docstring."""
    problems = []
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        problems.append("duplicate case ids")
    chinese = {c.id: c for c in cases if c.group != "english"}
    bodies = {n: squash(ch.text) for n, ch in corpus.chapters.items()}
    for case in cases:
        if case.group not in GROUPS:
            problems.append(f"{case.id}: unknown group {case.group!r}")
        if case.group == "english" and case.twin not in chinese:
            problems.append(f"{case.id}: English case without a Chinese twin ({case.twin!r})")
        if {ref.chapter for ref in case.refs} - set(case.gold_chapters):
            problems.append(f"{case.id}: evidence outside the gold chapters")
        for ref, text in zip(case.refs, case.evidence, strict=True):
            if len(text) < 2:
                problems.append(f"{case.id}: evidence in chapter {ref.chapter} is too short to be specific")
            elsewhere = sorted(n for n, body in bodies.items() if text in body and n not in case.gold_chapters)
            if elsewhere:
                problems.append(f"{case.id}: evidence of chapter {ref.chapter} also occurs in chapters {elsewhere}")
            if bodies[ref.chapter].count(text) > MAX_OCCURRENCES:
                problems.append(f"{case.id}: evidence occurs {bodies[ref.chapter].count(text)} times in chapter {ref.chapter}")
    return problems
