"""Write a retrieval dev set from an author's draft: one tab-separated line per question
``id, group, chapter, question, evidence text, twin`` (the draft holds book text, so it stays outside
the repository), into two case files of references (no book text): a tune half and a held-out half,
split at random with a seed, an English question in the same half as its Chinese twin.

    python bench/retrieval_cases.py pick dev/luxun_nahan.txt 26 --seed 37    # where to write questions
    python bench/retrieval_cases.py build DRAFT.tsv dev/luxun_nahan.txt assets/eval/retrieval/nahan --seed 7

``pick`` prints the places (``rag.eval.retrieval_cases.pick_spots``) with the text there; ``build``
locates each evidence text in its chapter, checks the set (``check_cases``) and writes
``PREFIX_tune.jsonl`` and ``PREFIX_heldout.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from rag.eval.cases import default_corpus_dir  # noqa: E402
from rag.eval.retrieval_cases import check_cases, corpus_for, load_cases, pick_spots, split_ids  # noqa: E402

HEADER = """# Retrieval dev set over {book} (../shared/corpus/{corpus}), {half} half: {n} questions written at places drawn
# at random (bench/retrieval_cases.py pick {corpus} {spots} --seed {pick_seed}), split into tune / held-out halves
# with seed {split_seed} (an English question stays with its Chinese twin). {note}
# evidence: references into the corpus (chapter number + offsets into the chapter body + sha), no book text here.
"""
NOTES = {"tune": "Tune on this half.",
         "heldout": "HELD-OUT: never tune on it; measure it once, at the end."}


def build(draft: Path, corpus_name: str, prefix: Path, seed: int, spots: int, pick_seed: int) -> int:
    corpus = corpus_for(default_corpus_dir() / corpus_name)
    records = []
    for line in draft.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case_id, group, chapter, question, needle, *rest = line.split("\t")
        twin = rest[0].strip() if rest and rest[0].strip() else None
        ref = corpus.locate(int(chapter), needle)
        record = {"id": case_id, "group": group, "question": question, "corpus": corpus_name,
                  "gold_chapters": [int(chapter)], "evidence": [ref.as_dict()], "need": "any"}
        if twin:
            record["twin"] = twin
        records.append(record)
    base = [r["id"] for r in records if "twin" not in r]
    tune, _ = split_ids(base, seed)
    tune_ids = set(tune) | {r["id"] for r in records if r.get("twin") in tune}
    for half in ("tune", "heldout"):
        chosen = [r for r in records if (r["id"] in tune_ids) == (half == "tune")]
        out = prefix.with_name(f"{prefix.name}_{half}.jsonl")
        text = HEADER.format(book=corpus.title, corpus=corpus_name, half=half, n=len(chosen), spots=spots,
                             pick_seed=pick_seed, split_seed=seed, note=NOTES[half])
        out.write_text(text + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), encoding="utf-8")
        cases, corpora = load_cases(out)
        problems = [p for c in corpora.values() for p in check_cases(cases, c)]
        print(f"{out.name}: {len(cases)} cases, {sum(c.group == 'english' for c in cases)} English; "
              f"{len(problems)} problems", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    pick = sub.add_parser("pick")
    pick.add_argument("corpus")
    pick.add_argument("n", type=int)
    pick.add_argument("--seed", type=int, required=True)
    make = sub.add_parser("build")
    make.add_argument("draft", type=Path)
    make.add_argument("corpus")
    make.add_argument("prefix", type=Path)
    make.add_argument("--seed", type=int, required=True, help="the split's seed")
    make.add_argument("--spots", type=int, required=True, help="how many places were picked (for the header)")
    make.add_argument("--pick-seed", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "pick":
        corpus = corpus_for(default_corpus_dir() / args.corpus)
        for i, (chapter, offset) in enumerate(pick_spots(corpus, args.n, args.seed)):
            text = corpus.chapters[chapter].text[offset : offset + 260].replace("\r", "").replace("\n", " / ")
            print(f"=== {i:02d} chapter {chapter} @{offset}\n{text}")
        return 0
    return build(args.draft, args.corpus, args.prefix, args.seed, args.spots, args.pick_seed)


if __name__ == "__main__":
    sys.exit(main())
