"""Case references into the dev corpus's kinds of file: digit-style Chinese headings with CRLF, a
Gutenberg English novel with a contents list, a story collection cut by titles, and SQuAD-style QA
JSON named by question id; the seeded split; and (corpus-marked) the shipped dev case files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from rag.eval.cases import CaseError, Corpus, check_answer_strings, load_cases, span_sha

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "assets" / "eval" / "dev"


def _script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_cases(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return path


def ref_to(corpus: Corpus, chapter: int, needle: str, **extra: Any) -> dict[str, Any]:
    data = corpus.locate(chapter, needle).as_dict()
    data.update(extra)
    return data


# ----------------------------------------------------------------------------- 红楼梦-like
HONGLOU = ("《红楼梦》曹雪芹\r\n\r\n\r\n第一一七回  阻超凡佳人双护玉　欲聚党恶子独承家\r\n\r\n    话说宝玉一闻此言．便把那玉"
           "交给了和尚．\r\n第一一八回  记微嫌舅兄欺弱女　惊谜语妻妾谏痴人\r\n\r\n    说话邢王二夫人听尤氏一段话，明知也难挽回．"
           "王夫人只得说道：“姑娘要行善．”\r\n")


def test_digit_style_headings_with_crlf(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "hlm.txt").write_bytes(HONGLOU.encode("utf-8"))
    corpus = Corpus.from_file(tmp_path / "dev" / "hlm.txt")
    assert corpus.title == "红楼梦"
    assert sorted(corpus.chapters) == [117, 118]  # 一一八 read digit by digit, not 1+1+8
    assert corpus.chapters[118].label == "第一一八回 记微嫌舅兄欺弱女 惊谜语妻妾谏痴人"
    assert "\r" not in corpus.chapters[118].text
    record = {"id": "h1", "kind": "full", "label_enough": True, "question": "王夫人说了什么？",
              "corpus": "dev/hlm.txt", "refs": [ref_to(corpus, 118, "姑娘要行善")], "answer_strings": ["行善"]}
    [case] = load_cases(write_cases(tmp_path / "c.jsonl", record), corpus_dir=tmp_path)
    assert case.context[0].text == "姑娘要行善" and case.context[0].chapter.startswith("第一一八回")
    assert case.passages()[0].chapter_num == 118
    assert check_answer_strings(case) == []


def test_a_corpus_outside_the_directory_is_refused(tmp_path: Path) -> None:
    record = {"id": "h1", "kind": "full", "label_enough": True, "question": "q", "corpus": "dev/../../x.txt",
              "refs": [{"chapter": 1, "start": 0, "end": 1}], "answer_strings": ["a"]}
    with pytest.raises(CaseError, match="inside the corpus directory"):
        load_cases(write_cases(tmp_path / "c.jsonl", record), corpus_dir=tmp_path)


# ----------------------------------------------------------------------------- Gutenberg
GUTENBERG = """\ufeffThe Project Gutenberg EBook of A Small Novel, by Someone

Title: A Small Novel

*** START OF THIS PROJECT GUTENBERG EBOOK A SMALL NOVEL ***

      Contents

         Chapter 1
         Chapter 2
         Chapter 3

      Chapter 1

      Mr. Grey bought a horse at the fair, and rode it home in the rain,
      and his wife asked him what he had paid for it, and he would not say.

      Chapter 2

      The horse was lame by Sunday. Mrs. Grey said nothing about it, but
      she sent for the farrier, who shook his head and asked for his fee.

      Chapter 3

      They sold the horse to the miller for four pounds, and the miller
      drove it to town every market day for eleven years afterwards.

*** END OF THIS PROJECT GUTENBERG EBOOK A SMALL NOVEL ***

Section 1. General Terms of Use: the horse was never lame.
"""


def test_english_chapters_skip_the_contents_list_and_the_licence(tmp_path: Path) -> None:
    (tmp_path / "novel.txt").write_text(GUTENBERG, encoding="utf-8")
    corpus = Corpus.from_file(tmp_path / "novel.txt")
    assert corpus.title == "A Small Novel"
    assert sorted(corpus.chapters) == [1, 2, 3]
    assert "lame by Sunday" in corpus.chapters[2].text  # the chapter, not its contents entry
    assert "General Terms" not in corpus.chapters[3].text
    assert corpus.chapters[2].label == "Chapter 2"
    record = {"id": "e1", "kind": "full", "label_enough": True, "question": "How much did the miller pay?",
              "corpus": "novel.txt", "refs": [ref_to(corpus, 3, "four pounds", title="Chapter 3")],
              "answer_strings": ["four pounds"]}
    [case] = load_cases(write_cases(tmp_path / "c.jsonl", record), corpus_dir=tmp_path)
    assert case.context[0].chapter == "Chapter 3"


# ----------------------------------------------------------------------------- a story collection
STORIES = """                        《小集》自序

                           ·某甲·

    我写这些故事，是在一个冬天。

　　灯下记

　　一

　　那天夜里停电了，他点起一支蜡烛，
读完了一封信。

　　二

　　第二天他把信烧了。

                           河边

                           ·某甲·

　　河边住着一个摆渡的老人，每天只收
两文钱。

                        　　归途

                          ·某甲·

　　　　第一章　出门

　　他在腊月出门，正月才到家。
"""


def test_titled_sections_are_numbered_in_reading_order(tmp_path: Path) -> None:
    (tmp_path / "stories.txt").write_text(STORIES, encoding="utf-8")
    corpus = Corpus.from_file(tmp_path / "stories.txt", "titles")
    assert corpus.title == "小集"
    # bylines, numbered parts (一, 二) and chapter headings inside a story do not start a section
    assert [corpus.chapters[n].label for n in sorted(corpus.chapters)] == ["《小集》自序", "灯下记", "河边", "归途"]
    assert "第二天他把信烧了" in corpus.chapters[2].text
    assert "第一章" in corpus.chapters[4].text
    good = {"id": "t1", "kind": "full", "label_enough": True, "question": "摆渡的老人收多少钱？",
            "corpus": "stories.txt", "split": "titles",
            "refs": [ref_to(corpus, 3, "每天只收\n两文钱", title="河边")], "answer_strings": ["两文钱"]}
    [case] = load_cases(write_cases(tmp_path / "c.jsonl", good), corpus_dir=tmp_path)
    assert case.context[0].chapter == "河边"
    wrong_title = dict(good, refs=[dict(good["refs"][0], title="归途")])
    with pytest.raises(CaseError, match="is '河边', not '归途'"):
        load_cases(write_cases(tmp_path / "d.jsonl", wrong_title), corpus_dir=tmp_path)
    # without the split the file has no numbered headings of its own at line start but the story's
    # "第一章", which is not what the references mean
    with pytest.raises(CaseError, match="unknown 'split'"):
        load_cases(write_cases(tmp_path / "e.jsonl", dict(good, split="stories")), corpus_dir=tmp_path)


# ----------------------------------------------------------------------------- QA JSON
QA = {"version": "1.0", "data": [
    {"title": "河流", "paragraphs": [
        {"context": "长江全长约6300公里，是亚洲第一长河。", "qas": [
            {"id": "a1", "question": "长江有多长？", "answers": [{"text": "约6300公里", "answer_start": 3}],
             "is_impossible": False},
            {"id": "a2", "question": "长江有多深？", "answers": [], "is_impossible": True}]},
        {"context": "黄河流经九个省区。", "qas": [
            {"id": "b1", "question": "黄河流经几个省区？", "answers": [{"text": "九个", "answer_start": 2}],
             "is_impossible": False}]}]},
    {"caseid": "7", "paragraphs": [
        {"casename": "借款纠纷", "context": "原告张x1借给被告5.5万元。", "qas": [
            {"id": "7_1", "question": "借了多少钱？", "answers": [{"text": "5.5万元", "answer_start": 8}],
             "is_impossible": "false"}]}]},
]}


def test_qa_paragraphs_are_named_by_question_id(tmp_path: Path) -> None:
    (tmp_path / "qa.json").write_text(json.dumps(QA, ensure_ascii=False), encoding="utf-8")
    corpus = Corpus.from_file(tmp_path / "qa.json")
    assert [corpus.chapters[n].label for n in (1, 2, 3)] == ["河流", "河流", "借款纠纷"]
    assert corpus.paragraph_of("b1") == 2 and corpus.paragraph_of("7_1") == 3
    text = corpus.chapters[2].text
    enough = {"id": "q1", "kind": "full", "label_enough": True, "question": "黄河流经几个省区？", "corpus": "qa.json",
              "refs": [{"qid": "b1", "start": 0, "end": len(text), "sha": span_sha(text)}], "answer_strings": ["九个"]}
    impossible = {"id": "q2", "kind": "related_not_containing", "label_enough": False, "question": "长江有多深？",
                  "corpus": "qa.json", "label_source": "dataset",
                  "refs": [{"qid": "a2", "chapter": 1, "start": 0, "end": 5}], "answer_strings": []}
    one, two = load_cases(write_cases(tmp_path / "c.jsonl", enough, impossible), corpus_dir=tmp_path)
    assert one.context[0].text == text and one.passages()[0].chapter_num == 2
    assert two.context[0].text == "长江全长约" and two.label_source == "dataset"
    assert check_answer_strings(one) == [] and check_answer_strings(two) == []
    # a hand-made "not enough" case still needs its answer strings; only a dataset's label may go without
    [made] = load_cases(write_cases(tmp_path / "m.jsonl", dict(impossible, label_source="")), corpus_dir=tmp_path)
    assert check_answer_strings(made) == [f"{made.source}: no answer_strings to check"]
    for ref, message in [({"qid": "zz", "start": 0, "end": 2}, "question id 'zz' is not in qa.json"),
                         ({"qid": "b1", "chapter": 1, "start": 0, "end": 2}, "asked on paragraph 2, not 1"),
                         ({"qid": "b1", "start": 0, "end": 2, "sha": "000000000000"}, "fingerprint")]:
        with pytest.raises(CaseError, match=message):
            load_cases(write_cases(tmp_path / "x.jsonl", dict(enough, refs=[ref])), corpus_dir=tmp_path)


def test_qa_file_that_is_not_squad_json_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(CaseError, match="not a SQuAD-style JSON"):
        Corpus.from_file(tmp_path / "bad.json")


# ----------------------------------------------------------------------------- the split
def test_split_is_seeded_and_keeps_every_kind_in_both_halves() -> None:
    make = _script("make_dev_cases")
    kinds = ["full"] * 10 + ["multihop_both", "multihop_both"] + ["related_not_containing"] * 6 + \
        ["half", "half", "multihop_one", "multihop_one", "unrelated", "unrelated"]
    cases = [{"id": f"c{i:02d}", "kind": k} for i, k in enumerate(kinds)]
    tune, held = make.split(cases, "x")
    assert (tune, held) == make.split(cases, "x")  # the same seed, the same halves
    assert make.split(cases, "y") != (tune, held)
    assert len(tune) == len(held) == 12 and not {c["id"] for c in tune} & {c["id"] for c in held}
    assert {c["kind"] for c in tune} == {c["kind"] for c in held} == set(kinds)


# ----------------------------------------------------------------------------- the shipped files
@pytest.mark.corpus
@pytest.mark.parametrize("name", ["cail", "squad", "hongloumeng", "pride", "nahan"])
def test_shipped_dev_sets_resolve_and_pass_the_verifier(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = [DEV / f"{name}.tune.jsonl", DEV / f"{name}.heldout.jsonl"]
    if not all(f.is_file() for f in files):
        pytest.skip(f"no {name} dev set on this branch")
    halves = [load_cases(f) for f in files]
    assert all(len(h) >= 12 for h in halves)
    assert not {c.id for c in halves[0]} & {c.id for c in halves[1]}
    for half in halves:
        enough = sum(c.label_enough for c in half)
        assert abs(2 * enough - len(half)) <= 2  # about half enough
        assert all(p.ref is not None for c in half for p in c.context)
    # no corpus text is committed: the case files hold references
    raw = "".join(f.read_text(encoding="utf-8") for f in files)
    assert all(p.text not in raw for h in halves for c in h for p in c.context if len(p.text) > 40)
    assert _script("verify_cases").main([str(f) for f in files]) == 0
    assert capsys.readouterr().out.strip().endswith("ok")


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["cail", "squad"])
def test_the_fresh_qa_sets_use_no_paragraph_of_the_tuned_halves(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    fresh = DEV / f"{name}.fresh.jsonl"
    if not fresh.is_file():
        pytest.skip(f"no fresh {name} set on this branch")
    cases = load_cases(fresh)
    used = {p.text for half in ("tune", "heldout") for c in load_cases(DEV / f"{name}.{half}.jsonl") for p in c.context}
    assert len(cases) == 24 and sum(c.label_enough for c in cases) == 12
    assert not {p.text for c in cases for p in c.context} & used
    assert _script("verify_cases").main([str(fresh)]) == 0
    assert capsys.readouterr().out.strip().endswith("ok")


# ----------------------------------------------------------------------------- the wrong / faithful sentences
SENTENCES = REPO / "bench" / "cases" / "sentences"
WRONG_KINDS = {"question_echo", "cross_language", "negation", "other_person", "other_action", "invented_detail",
               "unrelated_fact"}


@pytest.mark.parametrize("path", sorted(SENTENCES.glob("*.jsonl")), ids=lambda p: p.name)
def test_sentence_files_name_their_halfs_cases_and_cite_their_first_passage(path: Path) -> None:
    from rag.eval.cases import jsonl_records

    cases_file = DEV / path.name
    case_ids = {str(r["id"]) for _, r in jsonl_records(cases_file)}
    rows = [r for _, r in jsonl_records(path)]
    kinds: dict[str, int] = {}
    for row in rows:
        assert row["case"] in case_ids, row
        assert row["sentence"].rstrip("。.？?").endswith("[1]"), row
        # a sentence written as a wrong one that an independent reader found faithful says so
        expected = "faithful" if row["kind"] in ("faithful", "translated") or row.get("relabelled") else "wrong"
        assert row["label"] == expected, row
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    assert set(kinds) == WRONG_KINDS | {"faithful", "translated"}
    assert all(kinds[k] >= 5 for k in WRONG_KINDS) and kinds["faithful"] >= 12 and kinds["translated"] >= 6
    assert len({r["sentence"] for r in rows}) == len(rows)


@pytest.mark.corpus
@pytest.mark.parametrize("path", sorted(SENTENCES.glob("*.jsonl")), ids=lambda p: p.name)
def test_sentences_paraphrase_rather_than_copy_the_passage(path: Path) -> None:
    from rag.eval.cases import jsonl_records

    cases = {c.id: c for c in load_cases(DEV / path.name)}
    for _, row in jsonl_records(path):
        passage = "".join(cases[row["case"]].context[0].text.split())
        sentence = "".join(row["sentence"].split())
        longest = max((n for n in range(1, len(sentence) + 1)
                       for i in range(len(sentence) - n + 1) if sentence[i:i + n] in passage), default=0)
        assert longest <= 40, (row, longest)  # a short phrase of the text at most
