"""``rag eval sentences``: given sentences marked against their cases' passages, and the seeded
errors of what a reader is told (``rag eval checks --replay``), made by code for each reply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.cli import main
from rag.eval.cases import load_cases
from rag.eval.checks import SEEDED_KINDS, seeded_answer_report

WILLOW = ("智深相了一相，走到树前，把直裰脱了，用右手向下，把身倒缴着，却把左手拔住上截，把腰只一趁，"
          "将那株绿杨树带根拔起。众泼皮见了，一齐拜倒在地。")
TIGER = "武松走了一程，见一个酒店。武松入到里面，一连吃了十五碗酒。武松提了哨棒，便走上冈子来。"
CASES = [
    {"id": "w1", "kind": "full", "label_enough": True, "question": "鲁智深怎么对付那株绿杨树？",
     "context": [{"text": WILLOW, "chapter": "第七回"}], "answer_strings": ["带根拔起"]},
    {"id": "t1", "kind": "full", "label_enough": True, "question": "武松打虎之前喝了几碗酒？",
     "context": [{"text": TIGER, "chapter": "第二十三回"}], "answer_strings": ["十五碗"]},
]


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_given_sentences_are_marked_with_status_reason_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _write(tmp_path / "cases.jsonl", CASES)
    sentences = _write(tmp_path / "s.jsonl", [
        {"case": "w1", "sentence": "智深把那株绿杨树带根拔起[1]。", "label": "right", "kind": "faithful"},
        {"case": "w1", "sentence": "智深用斧头砍倒了那株绿杨树，又把它烧成了灰[1]。", "label": "wrong",
         "kind": "other_action"},
        {"case": "t1", "sentence": "武松打虎之前喝了几碗酒？[1]", "label": "wrong", "kind": "question_echo"},
        {"case": "t1", "sentence": "The moon is made of cheese [1].", "label": "wrong", "kind": "cross_language"},
    ])
    report = tmp_path / "r.json"
    code = main(["eval", "sentences", "--cases", str(cases), "--sentences", str(sentences), "--report", str(report)])
    assert code == 0
    data = json.loads(report.read_text(encoding="utf-8"))
    assert [r["status"] for r in data["results"]] == ["supported", "unsupported", "no_claim", "not_checked"]
    assert data["results"][2]["reason_code"] == "check.sentence_question_echo"
    assert data["per"]["label"]["wrong"]["supported"] == 0 and data["per"]["label"]["right"]["supported"] == 1
    assert data["per"]["kind"]["other_action"]["n"] == 1
    assert "question_echo" in capsys.readouterr().out


def test_bad_sentence_files_get_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _write(tmp_path / "cases.jsonl", CASES)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case": "w1"}\nnot json\n', encoding="utf-8")
    assert main(["eval", "sentences", "--cases", str(cases), "--sentences", str(bad)]) == 1
    assert "bad.jsonl:1" in capsys.readouterr().err
    unknown = _write(tmp_path / "u.jsonl", [{"case": "zz", "sentence": "x"}])
    assert main(["eval", "sentences", "--cases", str(cases), "--sentences", str(unknown)]) == 1
    assert "zz" in capsys.readouterr().err
    assert main(["eval", "sentences", "--cases", str(cases), "--sentences", str(tmp_path / "missing.jsonl")]) == 1


def test_seeded_errors_of_every_kind_are_made_from_the_reply_and_reported(tmp_path: Path) -> None:
    cases = load_cases(_write(tmp_path / "cases.jsonl", CASES))
    replies = {("w1", "answer", 1): "智深走到树前，把直裰脱了，将那株绿杨树带根拔起[1]。众泼皮一齐拜倒在地[1]。",
               ("t1", "answer", 1): "武松入到酒店里面，一连吃了十五碗酒[1]。"}
    report = seeded_answer_report(cases, replies)
    assert set(report["seeded"]) == set(SEEDED_KINDS)
    for kind in ("invented_detail", "negation", "question_echo", "cross_language", "unrelated_fact"):
        row = report["seeded"][kind]
        assert row["tried"] > 0 and row["flagged"] == row["tried"], (kind, report["missed"])
    # none of the reply's own sentences refused (its words in another order are for a model to confirm)
    assert report["faithful"]["sentences"] == 3 and report["faithful"]["unsupported"] == 0


def test_a_models_labels_are_replayed_by_case_and_sentence_through_http(tmp_path: Path) -> None:
    """``--replay``: the sentence checker's model call (VERIFY_ANSWERS=llm) answered from a fixture keyed
    by case and sentence; its labels change the marks by the rules of rag.checks.labels."""
    from rag.eval.replay import fixture_record, write_fixture

    cases_path = _write(tmp_path / "cases.jsonl", CASES)
    cases = {c.id: c for c in load_cases(cases_path)}
    rows = [
        # code: not checked (all its words are there, not in its order); the model: another person did
        # it -> unsupported
        {"case": "w1", "sentence": "众泼皮把那株绿杨树带根拔起[1]。", "kind": "other_person", "label": "wrong"},
        # code: supported (the source's words in its order); the model agrees -> stays supported
        {"case": "w1", "sentence": "智深把那株绿杨树带根拔起[1]。", "kind": "faithful", "label": "faithful"},
        # code: refused for its wording (a paraphrase); the model quotes the words that state it -> supported
        {"case": "t1", "sentence": "进店之后，他前前后后总共喝下十五碗[1]。", "kind": "faithful", "label": "faithful"},
    ]
    sentences = _write(tmp_path / "s.jsonl", rows)
    replies = [
        fixture_record(cases["w1"], "verify", {"reason": "众泼皮只是拜倒", "quote": "", "label": "contradicted"},
                       sentence=rows[0]["sentence"]),
        fixture_record(cases["w1"], "verify", {"reason": "原文如此", "quote": "将那株绿杨树带根拔起", "label": "supported"},
                       sentence=rows[1]["sentence"]),
        fixture_record(cases["t1"], "verify", {"reason": "原文如此", "quote": "一连吃了十五碗酒", "label": "supported"},
                       sentence=rows[2]["sentence"]),
    ]
    fixture = tmp_path / "labels.jsonl"
    write_fixture(fixture, ["test labels"], replies)
    code_only = tmp_path / "code.json"
    assert main(["eval", "sentences", "--cases", str(cases_path), "--sentences", str(sentences),
                 "--report", str(code_only)]) == 0
    assert [r["status"] for r in json.loads(code_only.read_text(encoding="utf-8"))["results"]] == [
        "not_checked", "supported", "unsupported"]
    labelled = tmp_path / "labels.json"
    assert main(["eval", "sentences", "--cases", str(cases_path), "--sentences", str(sentences),
                 "--replay", str(fixture), "--report", str(labelled)]) == 0
    data = json.loads(labelled.read_text(encoding="utf-8"))
    assert [r["status"] for r in data["results"]] == ["unsupported", "supported", "supported"]
    assert data["results"][2]["reason_code"] == "check.sentence_model_quote"


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["cail", "squad", "hongloumeng", "pride", "nahan"])
@pytest.mark.parametrize("half", ["tune", "heldout"])
def test_every_verify_call_of_the_dev_sentences_has_its_recorded_reply(name: str, half: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The committed fixtures answer every sentence-checker call that ``eval sentences --replay`` makes on
    the dev sets' sentences (keyed by case and sentence, so a change in how the checks split or mark a
    sentence shows here); and with the labels no wrong sentence of the set is marked supported twice."""
    from rag.eval.cases import default_corpus_dir

    repo = Path(__file__).resolve().parents[2]
    report = tmp_path / "r.json"
    code = main(["eval", "sentences", "--cases", str(repo / f"assets/eval/dev/{name}.{half}.jsonl"),
                 "--sentences", str(repo / f"bench/cases/sentences/{name}.{half}.jsonl"), "--corpus-dir", str(default_corpus_dir()),
                 "--replay", str(repo / f"bench/fixtures/replies/capable-{name}-{half}.jsonl"), "--report", str(report)])
    assert code == 0
    assert "no recorded reply" not in capsys.readouterr().err
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["per"]["label"]["wrong"]["supported"] <= 1


def test_eval_checks_labels_the_recorded_answers_and_seeded_errors_through_http(tmp_path: Path) -> None:
    """``eval checks --replay FIXTURE --labels``: the answer's sentences and the seeded ones are labelled
    by the fixture's verify replies over HTTP; what the fixture lacks is written to ``--missed`` (the
    prompts to have a model answer) and left as code marked it."""
    from rag.eval.replay import fixture_record, write_fixture

    cases_path = _write(tmp_path / "cases.jsonl", CASES)
    cases = {c.id: c for c in load_cases(cases_path)}
    answer = "智深把那株绿杨树带根拔起[1]。"
    fixture = tmp_path / "f.jsonl"
    write_fixture(fixture, ["test"], [
        fixture_record(cases["w1"], "answer", answer),
        fixture_record(cases["t1"], "answer", "武松入到里面，一连吃了十五碗酒[1]。"),
        fixture_record(cases["w1"], "verify", {"reason": "x", "quote": "", "label": "contradicted"}, sentence=answer),
    ])
    plain, labelled, missed = tmp_path / "plain.json", tmp_path / "labelled.json", tmp_path / "missed.jsonl"
    args = ["eval", "checks", "--cases", str(cases_path), "--replay", str(fixture)]
    main([*args, "--report", str(plain)])
    main([*args, "--labels", "--missed", str(missed), "--report", str(labelled)])
    before = json.loads(plain.read_text(encoding="utf-8"))["seeded"]["faithful"]
    after = json.loads(labelled.read_text(encoding="utf-8"))["seeded"]["faithful"]
    assert (before["supported"], after["supported"]) == (2, 1) and after["unsupported"] == 1
    asked = [json.loads(line) for line in missed.read_text(encoding="utf-8").splitlines()]
    assert asked and all(r["call"] == "verify" and r["case"] in ("w1", "t1") and r["sentence"] for r in asked)
    assert answer not in {r["sentence"] for r in asked}  # answered from the fixture
