"""The case loader: inline passages, corpus references (and references that do not resolve),
validation errors, the shipped case files and scripts/verify_cases.py."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import CORPUS

from rag.eval.cases import (
    KINDS,
    CaseError,
    Corpus,
    Ref,
    check_answer_strings,
    chinese_number,
    load_cases,
    load_route_cases,
    span_sha,
)

REPO = Path(__file__).resolve().parents[2]
EVAL = REPO / "assets" / "eval"

NOVEL = "《小书》\n《》目录 第一回　开头　第一\n    甲乙丙丁戊己庚辛。\n《》目录 第二回　中间\n    子丑寅卯辰巳午未申酉戌亥。\n"


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "tiny.txt").write_text(NOVEL, encoding="utf-8")
    return d


def write_cases(path: Path, *records: dict) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return path


def ref_case(**overrides) -> dict:
    case = {"id": "c1", "question": "丙之后是什么？", "kind": "full", "label_enough": True, "corpus": "tiny.txt",
            "refs": [{"chapter": 1, "start": 4, "end": 8}], "answer_strings": ["丙丁"]}
    case.update(overrides)
    return case


def test_chinese_numbers() -> None:
    assert [chinese_number(t) for t in ("一", "十", "十二", "二十", "九十九", "一百", "一百零八", "23")] == \
        [1, 10, 12, 20, 99, 100, 108, 23]
    with pytest.raises(ValueError):
        chinese_number("回")


def test_reference_resolves_into_the_chapter_body(tmp_path: Path, corpus_dir: Path) -> None:
    path = write_cases(tmp_path / "c.jsonl", ref_case())
    [case] = load_cases(path, corpus_dir=corpus_dir)
    assert case.context[0].text == "甲乙丙丁"  # offsets count from the start of the body line (4 spaces)
    assert case.context[0].chapter == "第一回 开头 第一"
    assert case.book == "小书"
    passage = case.passages()[0]
    assert passage.chapter_title == "第一回 开头 第一" and passage.chapter_num == 1
    assert check_answer_strings(case) == []


def test_reference_with_matching_fingerprint(tmp_path: Path, corpus_dir: Path) -> None:
    corpus = Corpus.from_file(corpus_dir / "tiny.txt")
    ref = corpus.locate(2, "寅卯", before=1, after=1)
    assert corpus.resolve(ref) == "丑寅卯辰" and ref.sha == span_sha("丑寅卯辰")
    path = write_cases(tmp_path / "c.jsonl", ref_case(refs=[ref.as_dict()], answer_strings=["寅卯"]))
    assert load_cases(path, corpus_dir=corpus_dir)[0].context[0].text == "丑寅卯辰"


@pytest.mark.parametrize(("ref", "message"), [
    ({"chapter": 9, "start": 0, "end": 4}, "chapter 9 does not exist"),
    ({"chapter": 1, "start": 4, "end": 999}, "outside chapter 1"),
    ({"chapter": 1, "start": 8, "end": 4}, "outside chapter 1"),
    ({"chapter": 1, "start": 4, "end": 8, "sha": "000000000000"}, "no longer matches its fingerprint"),
    ({"chapter": "1", "start": 4, "end": 8}, "must be an integer"),
])
def test_reference_that_does_not_resolve_is_a_clear_error(tmp_path: Path, corpus_dir: Path, ref: dict,
                                                          message: str) -> None:
    path = write_cases(tmp_path / "c.jsonl", ref_case(refs=[ref]))
    with pytest.raises(CaseError) as info:
        load_cases(path, corpus_dir=corpus_dir)
    text = str(info.value)
    assert message in text
    assert "c.jsonl:1" in text and "case c1" in text


def test_missing_corpus_file_is_a_clear_error(tmp_path: Path) -> None:
    path = write_cases(tmp_path / "c.jsonl", ref_case(corpus="nope.txt"))
    with pytest.raises(CaseError, match="corpus file not found: .*nope.txt"):
        load_cases(path, corpus_dir=tmp_path)
    with pytest.raises(CaseError, match="file name inside the corpus directory"):
        load_cases(write_cases(tmp_path / "d.jsonl", ref_case(corpus="../etc/passwd")), corpus_dir=tmp_path)


@pytest.mark.parametrize(("record", "message"), [
    ({"id": "a", "question": "q", "kind": "odd", "label_enough": True, "context": [{"text": "t"}]}, "unknown kind"),
    ({"id": "a", "question": "q", "kind": "half", "label_enough": True, "context": [{"text": "t"}]},
     "must be labelled label_enough=False"),
    ({"id": "a", "question": "q", "kind": "full", "label_enough": "yes", "context": [{"text": "t"}]}, "true or false"),
    ({"id": "a", "question": "", "kind": "full", "label_enough": True, "context": [{"text": "t"}]}, "'question'"),
    ({"id": "a", "question": "q", "kind": "full", "label_enough": True, "context": []}, "has no context"),
    ({"id": "a", "question": "q", "kind": "full", "label_enough": True, "refs": [{"chapter": 1, "start": 0, "end": 1}]},
     "needs 'corpus'"),
    ({"question": "q", "kind": "full", "label_enough": True, "context": [{"text": "t"}]}, "'id' is missing"),
])
def test_invalid_cases_are_rejected(tmp_path: Path, record: dict, message: str) -> None:
    with pytest.raises(CaseError, match=message):
        load_cases(write_cases(tmp_path / "c.jsonl", record), corpus_dir=tmp_path)


def test_bad_json_duplicates_and_missing_file(tmp_path: Path) -> None:
    ok = {"id": "a", "question": "q", "kind": "full", "label_enough": True, "context": [{"text": "t"}]}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(ok) + "\n# comment\n\n{not json\n", encoding="utf-8")
    with pytest.raises(CaseError, match="c.jsonl:4: not valid JSON"):
        load_cases(path)
    with pytest.raises(CaseError, match="duplicate case id 'a'"):
        load_cases(write_cases(tmp_path / "d.jsonl", ok, ok))
    with pytest.raises(CaseError, match="case file not found"):
        load_cases(tmp_path / "none.jsonl")
    with pytest.raises(CaseError, match="unknown kind"):
        load_cases(write_cases(tmp_path / "e.jsonl", ok), kinds=["nope"])


def test_answer_string_checks() -> None:
    from rag.eval.cases import Case, ContextPassage

    enough = Case(id="e", question="q", context=(ContextPassage("甲乙丙"),), label_enough=True, kind="full",
                  answer_strings=("乙", "丁"), source="f:1")
    assert check_answer_strings(enough) == ["f:1: labelled enough but '丁' is not in its context"]
    not_enough = Case(id="n", question="q", context=(ContextPassage("甲乙丙"),), label_enough=False, kind="half",
                      answer_strings=("乙",), source="f:2")
    assert check_answer_strings(not_enough) == ["f:2: labelled not enough but '乙' is in its context"]


@pytest.mark.corpus
def test_the_real_novel_has_its_hundred_chapters() -> None:
    corpus = Corpus.from_file(CORPUS / "xiyouji.txt")
    assert sorted(corpus.chapters) == list(range(1, 101))
    assert corpus.chapters[1].label == "第一回 灵根育孕源流出 心性修持大道生"
    assert corpus.chapters[100].label == "第一百回 径回东土 五圣成真"
    assert corpus.title == "西游记"
    assert not corpus.chapters[2].text.startswith("《》目录")
    with pytest.raises(CaseError):
        corpus.resolve(Ref(101, 0, 10))


def _covers_every_kind(cases: list) -> None:
    assert set(Counter(c.kind for c in cases)) == set(KINDS)
    assert all(check_answer_strings(c) == [] for c in cases)


def test_shipped_guide_and_route_cases() -> None:
    guide = load_cases(EVAL / "guide_cases.jsonl")
    assert len(guide) >= 30
    _covers_every_kind(guide)
    assert len(load_route_cases(EVAL / "route_cases.jsonl")) >= 20
    assert {c.label_strategy for c in load_route_cases(EVAL / "guide_cases.jsonl")} == {"complex"}


@pytest.mark.corpus
def test_shipped_novel_references_resolve_and_cover_every_kind() -> None:
    novel = load_cases(EVAL / "xiyouji_refs.jsonl", corpus_dir=CORPUS)
    assert len(novel) >= 40
    _covers_every_kind(novel)
    assert all(p.ref is not None and p.chapter.startswith("第") for c in novel for p in c.context)
    # no novel text is committed: the reference file holds offsets, not passages
    raw = (EVAL / "xiyouji_refs.jsonl").read_text(encoding="utf-8")
    assert all(p.text not in raw for c in novel for p in c.context)


def _verify_script():
    spec = importlib.util.spec_from_file_location("verify_cases", REPO / "scripts" / "verify_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verify_script_passes_on_the_shipped_guide_cases(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verify_script().main([str(EVAL / "guide_cases.jsonl")]) == 0
    assert capsys.readouterr().out.strip().endswith("ok")


@pytest.mark.corpus
def test_verify_script_passes_on_all_the_shipped_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verify_script().main([]) == 0  # the novel's references resolve in $EVAL_CORPUS_DIR
    out = capsys.readouterr().out
    assert "xiyouji_refs.jsonl" in out and out.strip().endswith("ok")


def test_verify_script_fails_on_a_bad_file(tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verify = _verify_script()
    wrong = write_cases(tmp_path / "wrong.jsonl", ref_case(answer_strings=["亥"]))
    assert verify.main([str(wrong), "--corpus-dir", str(corpus_dir)]) == 1
    err = capsys.readouterr().err
    assert "labelled enough but '亥' is not in its context" in err
    assert "no case of kind(s)" in err
    unresolved = write_cases(tmp_path / "unresolved.jsonl", ref_case(refs=[{"chapter": 3, "start": 0, "end": 2}]))
    assert verify.main([str(unresolved), "--corpus-dir", str(corpus_dir)]) == 1
    assert "reference does not resolve: chapter 3 does not exist" in capsys.readouterr().err
    guide = write_cases(tmp_path / "guide_x.jsonl", {"id": "g", "question": "q", "kind": "full", "label_enough": True,
                                                      "context": [{"text": "这句话不在导读里。"}], "answer_strings": ["这句"]})
    assert verify.main([str(guide)]) == 1
    assert "is not verbatim in xiyouji-guide" in capsys.readouterr().err
