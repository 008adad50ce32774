"""Write the dev judge cases of the two QA datasets (CAIL2019 reading comprehension, Chinese SQuAD 2.0)
from ../shared/corpus/dev, by a seeded pick, and split every dev set into a tune and a held-out half.

    python scripts/make_dev_cases.py qa [--corpus-dir DIR]      # assets/eval/dev/{cail,squad}.{tune,heldout}.jsonl
    python scripts/make_dev_cases.py split SET.all.jsonl        # a hand-written set -> SET.tune / SET.heldout
    python scripts/make_dev_cases.py passages BOOK [--split titles] [--n 14]   # the seeded passages to write on

Labels of the QA sets are the datasets' own human labels: an answerable question with its human
answer (``answer_strings``) is "enough" on its paragraph, a question marked unanswerable
(``is_impossible``) is "not enough" on its paragraph (``label_source: dataset``, no answer strings).
Composite kinds join two questions: ``half`` an answerable and a human-unanswerable question of one
paragraph; ``multihop_both`` two answerable questions of two paragraphs, with both; ``multihop_one``
the same with the first paragraph only; ``unrelated`` a question asked with another case's paragraph.
Only paragraphs of at most ``MAX_PARAGRAPH`` characters are picked, so the rendered prompt (passages
cut at 1,200 characters) holds the whole paragraph.

The split is a seeded shuffle within each kind, alternating tune / held-out, so both halves hold every
kind; the seed is written into each file's header.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rag.eval.cases import KINDS, Corpus, default_corpus_dir, span_sha  # noqa: E402

SEED = 20261203
FRESH_SEED = 20261207
MAX_PARAGRAPH = 1100
OUT = REPO / "assets" / "eval" / "dev"
# How many cases of each kind a QA set gets (24: 12 enough, 12 not).
QA_PLAN = {"full": 10, "multihop_both": 2, "related_not_containing": 6, "half": 2, "multihop_one": 2, "unrelated": 2}
QA_SETS = {
    "cail": ("dev/cail2019_rc_dev.json", "CAIL2019 阅读理解"),
    "squad": ("dev/chinese_squad2_dev.json", "Chinese SQuAD 2.0"),
}
# YES/NO questions of CAIL: the answer is not a span, so the case names the words of the paragraph
# that decide it (read by hand from the paragraph; every one is checked to be in it).
YES_NO_EVIDENCE: dict[str, list[str]] = {
    "65_5": ["向被保险人建行铜陵开发区支行以转账的方式支付254231.76元的保险赔偿款"],  # YES
    "333_4": ["长城物业公司与黄3均不服"],  # NO: it did not accept the ruling and went to court
}


def _impossible(qa: dict[str, Any]) -> bool:
    return str(qa.get("is_impossible", "false")).lower() == "true"


def _answer(qa: dict[str, Any], context: str) -> str | None:
    """The answer most annotators gave, when it is a span of ``context``; "YES"/"NO" as they are."""
    texts = [a.get("text", "") for a in qa.get("answers") or [] if a.get("text")]
    if not texts:
        return None
    best = Counter(texts).most_common(1)[0][0]
    if best.upper() in ("YES", "NO"):
        return best.upper()
    return best if best in context else None


def _question(text: str) -> str:
    text = text.strip()
    return text if text.endswith(("？", "?")) else text + "？"


def _ref(qid: str, context: str) -> dict[str, Any]:
    return {"qid": qid, "start": 0, "end": len(context), "sha": span_sha(context)}


def qa_cases(name: str, corpus_dir: Path, seed: int = SEED, exclude: set[str] | None = None,
             prefix: str | None = None, yes_no: bool = True) -> list[dict[str, Any]]:
    """The set's cases by a seeded pick; ``exclude`` names qids whose articles are not drawn from (the
    articles other sets were written on), ``prefix`` the cases' ids."""
    file, book = QA_SETS[name]
    exclude = exclude or set()
    data = json.loads((corpus_dir / file).read_text(encoding="utf-8"))["data"]
    Corpus.from_file(corpus_dir / file)  # the file must load as the cases will
    paragraphs = []  # (article index, context, answerable [(qid, q, a)], impossible [(qid, q)])
    taken = {a_index for a_index, article in enumerate(data)
             for paragraph in article["paragraphs"] for qa in paragraph["qas"] if str(qa["id"]) in exclude}
    # a set with few articles (SQuAD's 35) is drawn per paragraph: a paragraph another set uses is left
    # out, the rest of its article may be drawn
    per_paragraph = bool(exclude) and len(data) - len(taken) < 2 * sum(QA_PLAN.values())
    for a_index, article in enumerate(data):
        if a_index in taken and not per_paragraph:
            continue
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            if len(context) > MAX_PARAGRAPH or any(str(qa["id"]) in exclude for qa in paragraph["qas"]):
                continue
            answerable, impossible = [], []
            for qa in paragraph["qas"]:
                if _impossible(qa):
                    impossible.append((str(qa["id"]), qa["question"]))
                else:
                    answer = _answer(qa, context)
                    if answer:
                        answerable.append((str(qa["id"]), qa["question"], answer))
            paragraphs.append((a_index, context, answerable, impossible))
    rng = random.Random(f"{seed}:{name}")
    rng.shuffle(paragraphs)
    used: set[int] = set()  # articles (or paragraphs) already used: every case on its own text

    def take(need_impossible: bool = False, need_answerable: bool = True, yes_no: bool | None = False) -> tuple:
        for i, (a_index, _context, answerable, impossible) in enumerate(paragraphs):
            if (i if per_paragraph else a_index) in used:
                continue
            pool = [x for x in answerable if yes_no is None or (x[2] in ("YES", "NO")) == yes_no]
            if (need_answerable and not pool) or (need_impossible and not impossible):
                continue
            used.add(i if per_paragraph else a_index)
            return paragraphs[i], (rng.choice(pool) if pool else None), (rng.choice(impossible) if impossible else None)
        raise SystemExit(f"{name}: ran out of paragraphs")

    cases: list[dict[str, Any]] = []
    base = {"corpus": file, "book": book}

    def add(kind: str, question: str, refs: list[dict[str, Any]], answers: list[str], **extra: Any) -> None:
        cases.append({"id": f"{prefix or name}{len(cases) + 1:02d}", "kind": kind, "label_enough": kind in ("full", "multihop_both"),
                      "question": question, **base, "refs": refs, "answer_strings": answers, **extra})

    yes_no_wanted = 2 if name == "cail" and yes_no else 0
    for k in range(QA_PLAN["full"]):
        is_yes_no = k < yes_no_wanted
        (_, context, _, _), (qid, q, a), _ = take(yes_no=is_yes_no)
        if is_yes_no:
            add("full", _question(q), [_ref(qid, context)], YES_NO_EVIDENCE.get(qid, []), note=f"human answer {a}")
        else:
            add("full", _question(q), [_ref(qid, context)], [a])
    for _ in range(QA_PLAN["related_not_containing"]):
        (_, context, _, _), _, (qid, q) = take(need_impossible=True, need_answerable=False)
        add("related_not_containing", _question(q), [_ref(qid, context)], [], label_source="dataset")
    for _ in range(QA_PLAN["half"]):
        (_, context, _, _), (qid, q, a), (qid2, q2) = take(need_impossible=True)
        add("half", _question(q) + _question(q2), [_ref(qid, context)], [], label_source="dataset",
            note=f"second part: {qid2}, marked unanswerable by the dataset")
    for kind in ("multihop_both", "multihop_one", "unrelated"):
        for _ in range(QA_PLAN[kind]):
            while True:
                (art1, c1, _, _), (qid1, q1, a1), _ = take()
                (art2, c2, _, _), (qid2, q2, a2), _ = take()
                if a2 not in c1 and a1 not in c2 and art1 != art2:
                    break
            if kind == "multihop_both":
                add(kind, _question(q1) + _question(q2), [_ref(qid1, c1), _ref(qid2, c2)], [a1, a2])
            elif kind == "multihop_one":
                add(kind, _question(q1) + _question(q2), [_ref(qid1, c1)], [a2], note=f"second part: {qid2}")
            else:
                add(kind, _question(q2), [_ref(qid1, c1)], [a2], note=f"question of {qid2}")
    return cases


def split(cases: list[dict[str, Any]], name: str, seed: int = SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Seeded shuffle within each kind, alternating tune / held-out (the first of each kind to tune)."""
    rng = random.Random(f"{seed}:{name}:split")
    tune: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for kind in KINDS:
        group = [c for c in cases if c["kind"] == kind]
        rng.shuffle(group)
        for i, case in enumerate(group):
            (tune if i % 2 == 0 else held).append(case)
    order = {c["id"]: i for i, c in enumerate(cases)}
    return sorted(tune, key=lambda c: order[c["id"]]), sorted(held, key=lambda c: order[c["id"]])


def write(path: Path, header: list[str], cases: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {line}" for line in header] + [json.dumps(c, ensure_ascii=False) for c in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kinds = Counter(c["kind"] for c in cases)
    print(f"{path.relative_to(REPO)}: {len(cases)} cases, " + ", ".join(f"{k}={kinds[k]}" for k in KINDS if kinds[k]))


def write_split(name: str, cases: list[dict[str, Any]], header: list[str], seed: int = SEED) -> None:
    tune, held = split(cases, name, seed)
    note = (f"Split: a seeded shuffle (random.Random('{seed}:{name}:split')) within each kind, alternating tune / "
            f"held-out; this half: {{}}. Keep the held-out half aside until the end.")
    write(OUT / f"{name}.tune.jsonl", [*header, note.format("tune")], tune)
    write(OUT / f"{name}.heldout.jsonl", [*header, note.format("held-out")], held)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("qa")
    q.add_argument("--corpus-dir", type=Path)
    f = sub.add_parser("fresh", help="a third set of each QA dataset, from articles no other set uses")
    f.add_argument("--seed", type=int, default=FRESH_SEED)
    f.add_argument("--name", default="fresh", help="the file's half name (<set>.NAME.jsonl); a later draw excludes "
                   "every set already written")
    f.add_argument("--prefix", default="f", help="added to the set's name for the cases' ids (cailf01)")
    f.add_argument("--corpus-dir", type=Path)
    s = sub.add_parser("split")
    s.add_argument("file", type=Path)
    p = sub.add_parser("passages")
    p.add_argument("book")
    p.add_argument("--split", default="headings")
    p.add_argument("--n", type=int, default=14)
    p.add_argument("--size", type=int, default=450)
    p.add_argument("--corpus-dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "qa":
        corpus_dir = args.corpus_dir or default_corpus_dir()
        for name, (file, _) in QA_SETS.items():
            header = [f"{QA_SETS[name][1]} judge cases: references into ../shared/corpus/{file} (no dataset text here).",
                      f"Picked by scripts/make_dev_cases.py qa (seed {SEED}); labels are the dataset's human labels "
                      "(label_source dataset: marked unanswerable) or built from them (see the script).",
                      "refs: qid names the paragraph (the one that question is asked on), start/end offsets into it, sha.",
                      "Verify: python scripts/verify_cases.py FILE"]
            write_split(name, qa_cases(name, corpus_dir), header)
        return 0
    if args.command == "fresh":
        return fresh(args.corpus_dir or default_corpus_dir(), args.seed, args.name, args.prefix)
    if args.command == "split":
        path: Path = args.file
        name = path.name.split(".")[0]
        header = [line[2:] for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# ")]
        cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip() and not line.startswith("#")]
        write_split(name, cases, header)
        return 0
    return passages(args)


def used_qids_of(path: Path) -> set[str]:
    """The qids one case file is on (its paragraphs and second parts)."""
    qids: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        case = json.loads(line)
        qids.update(str(r["qid"]) for r in case.get("refs") or [])
        note = str(case.get("note") or "")
        if ": " in note:
            qids.add(note.split(": ", 1)[1].split(",")[0].strip())
    return qids


def used_qids(name: str) -> set[str]:
    """The qids every written half of the set is on."""
    return {q for path in sorted(OUT.glob(f"{name}.*.jsonl")) for q in used_qids_of(path)}


def fresh(corpus_dir: Path, seed: int, half: str = "fresh", prefix: str = "f") -> int:
    """``<set>.<half>.jsonl``: the same plan drawn with another seed from the articles no written set
    uses, for a measurement after all tuning (no YES/NO cases: their deciding words are read by hand)."""
    for name, (file, book) in QA_SETS.items():
        out = OUT / f"{name}.{half}.jsonl"
        used = used_qids(name) - (used_qids_of(out) if out.exists() else set())  # redrawn alike
        header = [f"{book} judge cases, another set: references into ../shared/corpus/{file} (no dataset text here).",
                  f"Picked by scripts/make_dev_cases.py fresh --seed {seed} --name {half} from articles that no other "
                  "set of it uses (SQuAD, with 35 articles: from paragraphs none uses); labels are the dataset's human "
                  "labels (label_source dataset: marked unanswerable) or built from them. No YES/NO questions.",
                  "Made after the checks were tuned, to be measured once: not for tuning.",
                  "Verify: python scripts/verify_cases.py FILE"]
        cases = qa_cases(name, corpus_dir, seed, exclude=used, prefix=f"{name}{prefix}", yes_no=False)
        write(out, header, cases)
    return 0


def passages(args: argparse.Namespace) -> int:
    """Print ``--n`` passages of a book picked by a seeded draw (chapter, then offset), cut at
    sentence stops, with their references: the passages the hand-written questions are about."""
    corpus = Corpus.from_file((args.corpus_dir or default_corpus_dir()) / args.book, args.split)
    rng = random.Random(f"{SEED}:{args.book}")
    numbers = sorted(corpus.chapters)
    stops = "。．！？!?\n" if any("\u4e00" <= ch <= "\u9fff" for ch in corpus.chapters[numbers[-1]].text[:200]) else ".!?"
    shown = 0
    while shown < args.n:
        chapter = corpus.chapters[rng.choice(numbers)]
        body = chapter.text
        if len(body) < args.size * 2:
            continue
        at = rng.randrange(0, len(body) - args.size)
        start = next((i + 1 for i in range(at, min(len(body), at + 200)) if body[i] in stops), at)
        end = next((i + 1 for i in range(start + args.size, min(len(body), start + args.size + 200))
                    if body[i] in stops), min(len(body), start + args.size))
        text = body[start:end]
        if "|" in text:  # a web page's navigation left in the file
            continue
        shown += 1
        print(json.dumps({"n": shown, "chapter": chapter.number, "title": chapter.label, "start": start, "end": end,
                          "sha": span_sha(text)}, ensure_ascii=False))
        print(text.strip())
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
