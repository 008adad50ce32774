"""The checks of an older commit on today's recorded replies (the "before" of bench/results/evidence/).

    git worktree add /tmp/before 114e425
    EVAL_CORPUS_DIR=../shared/corpus python bench/evidence_before.py /tmp/before > bench/results/evidence/before_114e425.json

Imports the old tree's ``rag`` (its cases loader, judge and sentence checks) and decides every recorded
evidence reply and marks every recorded answer with them; the fixtures' span references are restored
here, so the old code needs nothing new. Prints JSON: per reply set and case file, answerable cases
judged enough, false "enough" verdicts, and the faithful answers' sentence marks.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SPAN = re.compile(r"⟦(\d+):(\d+)⟧")


def _restore(value: Any, context: str) -> Any:
    if isinstance(value, str):
        return SPAN.sub(lambda m: context[int(m.group(1)):int(m.group(2))], value)
    if isinstance(value, list):
        return [_restore(v, context) for v in value]
    if isinstance(value, dict):
        return {k: _restore(v, context) for k, v in value.items()}
    return value


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(argv[0]).resolve()))
    from rag.agent.judge import check_parts, decide, sources_of
    from rag.checks import check_answer
    from rag.eval.cases import jsonl_records, load_cases
    from rag.schemas import EvidenceJudgement

    out: dict[str, Any] = {}
    for fixture in ("capable", "qwen1.5b"):
        for name in ("guide_cases", "xiyouji_refs", "sanguo_refs"):
            cases = {c.id: c for c in load_cases(REPO / "assets" / "eval" / f"{name}.jsonl")}
            replies: dict[tuple[str, str], Any] = {}
            for _, record in jsonl_records(REPO / "bench" / "fixtures" / "replies" / f"{fixture}.jsonl"):
                case = cases.get(record["case"])
                if case is not None and int(record.get("attempt") or 1) == 1:
                    replies[(case.id, record["call"])] = _restore(record["reply"], "\n".join(p.text for p in case.context))
            row = {"answerable": 0, "answerable_enough": 0, "not_enough_cases": 0, "false_enough": 0,
                   "sentences": {"supported": 0, "unsupported": 0, "uncited": 0}}
            for case in cases.values():
                reply = replies.get((case.id, "judge-evidence"))
                if reply is None:
                    continue
                try:
                    judged = EvidenceJudgement.model_validate(reply)
                    enough = decide(judged, check_parts(judged.parts, sources_of(case.passages())), "evidence").enough
                except ValueError:
                    enough = False
                key = ("answerable", "answerable_enough") if case.label_enough else ("not_enough_cases", "false_enough")
                row[key[0]] += 1
                row[key[1]] += int(enough)
                answer = replies.get((case.id, "answer"))
                if isinstance(answer, str) and case.label_enough:
                    for s in check_answer(answer, sources_of(case.passages())).sentences:
                        if s.status in row["sentences"]:
                            row["sentences"][s.status] += 1
            out[f"{fixture}/{name}"] = row
    print(json.dumps({"commit": "114e425", "checks": out}, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
