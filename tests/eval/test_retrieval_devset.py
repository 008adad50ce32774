"""The retrieval dev set (assets/eval/retrieval/xiyouji.jsonl): its loader and checks on a tiny corpus,
and, with the novels, that every reference resolves and is specific, and that the spoiler limit keeps
every later chapter out for every dev question."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from conftest import CORPUS, REPO, make_settings
from index_fakes import BigramEmbedder, MemoryVectors

from rag.agent.deps import Deps
from rag.agent.events import run_turn
from rag.agent.graph import build_graph
from rag.eval.cases import CaseError, Corpus, span_sha
from rag.eval.retrieval_cases import check_cases, load_cases
from rag.index import BookIndex
from rag.scope import Scope, limit_chapters

DEV_SET = REPO / "assets" / "eval" / "retrieval" / "xiyouji.jsonl"
HELD_OUT = REPO / "assets" / "eval" / "retrieval" / "sanguo_heldout.jsonl"  # 三国演义, never tuned on
NOVEL = "《小书》\n第一回　开头\n    甲乙丙丁戊己庚辛。子丑寅卯。\n第二回　中间\n    子丑寅卯辰巳午未申酉戌亥。\n"


def case(**overrides) -> dict:
    body = NOVEL.split("\n", 2)[2].split("第二回")[0]
    start = body.index("丙丁戊")
    record = {"id": "t1", "group": "plain", "question": "丙之后？", "corpus": "tiny.txt", "gold_chapters": [1],
              "evidence": [{"chapter": 1, "start": start, "end": start + 3, "sha": span_sha("丙丁戊")}], "need": "any"}
    record.update(overrides)
    return record


def write(path: Path, *records: dict) -> Path:
    path.write_text("# comment\n" + "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n",
                    encoding="utf-8")
    return path


def test_loader_and_checks_on_a_tiny_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tiny.txt").write_text(NOVEL, encoding="utf-8")
    cases, corpora = load_cases(write(tmp_path / "ok.jsonl", case()), corpus)
    assert cases[0].evidence == ("丙丁戊",) and check_cases(cases, corpora["tiny.txt"]) == []
    assert cases[0].found(["……甲乙丙丁戊己……"]) and not cases[0].found(["丙丁", "戊己"])
    assert cases[0].found(["甲乙丙\n丁戊"])  # whitespace does not matter
    both = load_cases(write(tmp_path / "all.jsonl", case(need="all", gold_chapters=[1, 2], evidence=[
        case()["evidence"][0], {"chapter": 2, "start": 8, "end": 12}])), corpus)[0][0]
    assert both.evidence == ("丙丁戊", "辰巳午未")
    assert not both.found(["甲乙丙丁戊己"]) and both.found(["甲乙丙丁戊己", "辰巳午未"])
    # a span that is not specific: 子丑寅卯 is in both chapters
    body = NOVEL.split("\n", 2)[2].split("第二回")[0]
    vague = case(evidence=[{"chapter": 1, "start": body.index("子丑"), "end": body.index("子丑") + 4}])
    english = case(id="e1", group="english", question="What follows?", twin="nobody")
    cases, corpora = load_cases(write(tmp_path / "bad.jsonl", vague, english), corpus)
    problems = check_cases(cases, corpora["tiny.txt"])
    assert any("also occurs in chapters [2]" in p for p in problems)
    assert any("e1: English case without a Chinese twin" in p for p in problems)
    with pytest.raises(CaseError, match="no longer matches its fingerprint"):
        load_cases(write(tmp_path / "sha.jsonl", case(evidence=[{**case()["evidence"][0], "sha": "000000000000"}])), corpus)
    with pytest.raises(CaseError, match="bad.jsonl:2 \\(t1\\): malformed"):
        load_cases(write(tmp_path / "bad.jsonl", {"id": "t1", "corpus": "tiny.txt"}), corpus)


@pytest.mark.corpus
def test_the_dev_set_resolves_and_every_evidence_is_specific() -> None:
    cases, corpora = load_cases(DEV_SET, CORPUS)
    assert len(cases) >= 60 and check_cases(cases, corpora["xiyouji.txt"]) == []
    groups = {g: sum(1 for c in cases if c.group == g) for g in ("plain", "paraphrase", "alias", "two_chapters", "english")}
    assert groups["english"] == 10 and all(n >= 8 for n in groups.values())
    assert all(c.need == "all" and len(set(c.gold_chapters)) == 2 for c in cases if c.group == "two_chapters")
    assert "一万三千五百斤" not in DEV_SET.read_text(encoding="utf-8")  # references only, no novel text


@pytest.mark.corpus
def test_the_held_out_set_resolves_and_stores_no_novel_text() -> None:
    cases, corpora = load_cases(HELD_OUT, CORPUS)
    assert check_cases(cases, corpora["sanguoyanyi.txt"]) == []
    assert {g: sum(1 for c in cases if c.group == g) for g in ("plain", "paraphrase", "alias", "two_chapters", "english")} \
        == {"plain": 6, "paraphrase": 6, "alias": 6, "two_chapters": 6, "english": 6}
    stored = HELD_OUT.read_text(encoding="utf-8")
    assert not any(e in stored for c in cases for e in c.evidence)  # references only


@pytest.fixture(scope="module")
def xiyouji(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("xiyouji")
    vectors = MemoryVectors()
    index = BookIndex(make_settings(data_dir=tmp / "data"), embedder=BigramEmbedder(), vectors=vectors)
    info = index.ingest(CORPUS / "xiyouji.txt", background=False)
    yield index, info
    index.close()


@pytest.mark.corpus
def test_no_passage_beyond_the_spoiler_limit_on_any_dev_question(xiyouji) -> None:
    index, info = xiyouji
    cases, _ = load_cases(DEV_SET, CORPUS)
    graph = build_graph(Deps(settings=make_settings(retrieval_k=10), llm=None, retriever=index))
    seen_later = 0
    for c in cases:
        limit = max(1, min(c.gold_chapters) - 1)  # the reader stopped just before the answer
        for mode in ("hybrid", "keyword", "vector"):
            found = index.search(c.question, k=10, book_id=info.id, mode=mode, chapters=limit_chapters(None, limit))
            assert all(p.chapter_num is not None and p.chapter_num <= limit for p in found.passages), (c.id, mode)
        *_, last = run_turn(graph, c.question, thread_id=str(uuid.uuid4()), book_id=info.id,
                               scope=Scope(read_up_to=limit))
        passages = last.values["passages"]
        assert all(p.chapter_num <= limit for p in passages), c.id
        unlimited = index.retrieve(c.question, k=10, book_id=info.id)
        seen_later += any(p.chapter_num > limit for p in unlimited)
    assert seen_later >= len(cases) // 2  # without the limit, later chapters do come up


def test_corpus_chapters_are_the_index_chapters(tmp_path: Path) -> None:
    """Evidence offsets are into the corpus's chapter bodies; the index numbers chapters the same way."""
    from rag.index.loaders import load_book

    path = tmp_path / "tiny.txt"
    path.write_text(NOVEL, encoding="utf-8")
    corpus = Corpus.from_file(path)
    loaded = load_book(path)
    assert sorted(corpus.chapters) == [c.num for c in loaded.chapters] == [1, 2]


@pytest.mark.corpus
def test_english_names_find_the_books_own_spelling_in_the_novel(xiyouji) -> None:
    """Pinyin names matched against 西游记 itself: 朱紫 (Zhuzi) and 比丘 (Biqiu) as the book spells them;
    and every English dev question is searched with Chinese terms the book uses, said in the notes."""
    from rag.crosslingual import chinese_terms, glossary

    index, info = xiyouji
    book = index._catalog.get(info.id)  # noqa: SLF001 - the book's text, as the search reads it
    text = book.text()
    assert text.script == "han"
    assert chinese_terms("the king of Zhuzi", text, glossary())[0] == "朱紫"
    assert chinese_terms("the king of Biqiu", text, glossary())[0] == "比丘"
    assert "孙悟空" in chinese_terms("Where is Sun Wukong?", text, glossary())
    assert "琵琶" in chinese_terms("the demon of Pipa Cave", text, glossary())
    cases, _ = load_cases(DEV_SET, CORPUS)
    for c in [c for c in cases if c.group == "english"]:
        found = index.search(c.question, k=5, book_id=info.id, mode="keyword")
        note = next((n for n in map(str, found.notes) if "CC-CEDICT" in n), "")
        terms = note.split(": ", 1)[1].split(" (")[0].split() if note else []
        assert terms and all(t in text.text for t in terms), (c.id, note)
        assert found.passages, c.id  # the keyword side alone finds something in the book's words


NEW_SETS = ("hongloumeng", "nahan", "pride")  # 红楼梦, 呐喊 (hard-wrapped), Pride and Prejudice


@pytest.mark.corpus
@pytest.mark.parametrize("name", NEW_SETS)
def test_the_books_beyond_two_novels_have_tune_and_held_out_halves_of_references(name: str) -> None:
    halves = {}
    for half in ("tune", "heldout"):
        path = REPO / "assets" / "eval" / "retrieval" / f"{name}_{half}.jsonl"
        cases, corpora = load_cases(path, CORPUS)
        (corpus,) = corpora.values()
        assert check_cases(cases, corpus) == []
        stored = path.read_text(encoding="utf-8")
        assert not any(e in stored for c in cases for e in c.evidence)  # references only
        halves[half] = cases
    everything = halves["tune"] + halves["heldout"]
    assert len(everything) >= 30 and 0.4 <= len(halves["tune"]) / len(everything) <= 0.6
    english = [c for c in everything if c.group == "english"]
    if name != "pride":  # the Chinese books: a quarter English, each with its Chinese twin in the same half
        assert len(english) >= len(everything) / 4.5
        for half in halves.values():
            ids = {c.id for c in half}
            assert all(c.twin in ids for c in half if c.group == "english")


@pytest.mark.corpus
def test_a_corpus_without_hui_headings_is_read_as_the_app_reads_it() -> None:
    from rag.eval.retrieval_cases import corpus_for
    from rag.index.loaders import load_book

    path = CORPUS / "dev" / "luxun_nahan.txt"
    corpus = corpus_for(path)
    book = load_book(path)
    assert {n: c.text for n, c in corpus.chapters.items()} == {c.num: c.text for c in book.chapters}
    # the hard wraps are joined: no line of a paragraph ends at the wrap width mid-sentence
    lines = [ln for c in corpus.chapters.values() for ln in c.text.split("\n")]
    assert sum(1 for ln in lines if len(ln) == 36) < len(lines) / 20
