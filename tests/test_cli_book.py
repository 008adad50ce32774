"""The command line's one ``--book`` (issue 25, item 8): ``ask``, ``search`` and ``eval route`` take
an indexed book's id, id prefix, title or file name, or a book file; a new file answers from keyword
search at once while its vectors follow in the background; an unknown book is an error with a
non-zero exit code, never an answer from the web alone. Also ``rag search``'s scores labelled by the
retriever that gave them (item 6) and ``rag books`` with control and bidi characters in file names
(issue 22, item 6). Real index on disk (Chroma, BM25), a deterministic or gated embedder."""

from __future__ import annotations

import io
import re
import threading
from pathlib import Path

import pytest
from fixtures_index.books import guide_chapters, guide_text, make_epub
from fixtures_index.embedders import GatedEmbedder, HashEmbedder

from rag import cli as main_cli
from rag.index import open_index

TITLE = "西游记导读选段"  # make_epub's title
ROUTES = Path(__file__).resolve().parents[1] / "assets" / "eval" / "route_cases.jsonl"


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SEARCH_PROVIDER", "none")  # hermetic: no web
    for name in ("LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("rag.index.open_index", lambda settings, **kw: open_index(settings, embedder=HashEmbedder()))
    return tmp_path


def run(argv: list[str]) -> tuple[int, str, str]:
    """``python -m rag ARGV`` in this process, its output streams captured."""
    from rag.config import load_settings

    args = main_cli.build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, load_settings(), out, err)
    return code, out.getvalue(), err.getvalue()


def book_ids(data: Path) -> list[str]:
    code, out, _ = run(["books"])
    assert code == 0
    return [line.split()[0] for line in out.splitlines()[1:]]


def test_ask_takes_an_id_an_id_prefix_a_title_or_a_file_name(data: Path) -> None:
    guide = make_epub(data / "xiyouji-guide.epub", guide_chapters(1, 10))
    assert run(["ingest", str(guide)])[0] == 0
    (book_id,) = book_ids(data)
    for spec in (book_id, book_id[:6], TITLE, "xiyouji-guide.epub", "xiyouji-guide"):
        code, out, err = run(["ask", "孙悟空做了什么？", "--book", spec])
        assert code == 0, (spec, err)
        assert "error" not in err and re.search(r"^\[\d+\] 第\S+回", out, re.MULTILINE), (spec, out)
    code, out, err = run(["ask", "孙悟空做了什么？", "--book-id", book_id])  # the old option still works
    assert code == 0 and "--book-id is deprecated" in err and "[1]" in out


@pytest.mark.parametrize("option", ["--book", "--book-id"])
def test_an_unknown_book_is_an_error_not_a_web_answer(data: Path, option: str) -> None:
    guide = make_epub(data / "xiyouji-guide.epub", guide_chapters(1, 3))
    assert run(["ingest", str(guide)])[0] == 0
    code, out, err = run(["ask", "孙悟空做了什么？", option, "红楼梦"])
    assert code == 1, err
    assert out == ""  # no answer at all
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == ["error: no book matches '红楼梦': it is neither an indexed book's id, id prefix, title or file "
                      "name, nor a file (see: python -m rag books)"]
    code, out, err = run(["search", "孙悟空", "--book", "红楼梦"])
    assert code == 1 and "no book matches '红楼梦'" in err and out == ""


def test_a_name_two_books_share_is_ambiguous_not_unknown(data: Path) -> None:
    """Two books with the same title (two editions): the title names neither alone, and the error
    says so and lists both with their ids, instead of claiming no book matches."""
    first = make_epub(data / "guide-a.epub", guide_chapters(1, 3))
    second = make_epub(data / "guide-b.epub", guide_chapters(4, 6))
    assert run(["ingest", str(first)])[0] == 0 and run(["ingest", str(second)])[0] == 0
    ids = book_ids(data)
    assert len(ids) == 2
    code, out, err = run(["ask", "孙悟空做了什么？", "--book", TITLE])
    assert code == 1 and out == ""
    (error,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert error.startswith(f"error: '{TITLE}' matches 2 books: ") and "no book matches" not in error
    assert all(book_id[:8] in error for book_id in ids)
    code, out, err = run(["ask", "孙悟空做了什么？", "--book", "guide-b"])  # the file stem tells them apart
    assert code == 0, err


def test_a_new_book_file_answers_from_keywords_while_its_vectors_follow(data: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedder is held closed: the answer must come anyway (the whole book embedded first
    would never answer), with a notice that keyword search answers for now."""
    embedder = GatedEmbedder()
    monkeypatch.setattr("rag.index.open_index", lambda settings, **kw: open_index(settings, embedder=embedder))
    guide = make_epub(data / "xiyouji-guide.epub", guide_chapters(1, 10))
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: result.append(run(["ask", "孙悟空做了什么？", "--book", str(guide)])),
                              daemon=True)
    worker.start()
    worker.join(timeout=60)
    embedder.gate.set()  # lets a run that waited for every vector end (today's main) finish
    worker.join(timeout=60)
    assert result, "no answer within 60 s"
    code, out, err = result[0]
    assert code == 0, err
    assert f"note: '{TITLE}' is keyword-searchable; its vectors are being embedded in the background (0/" in err
    assert re.search(r"^\[\d+\] 第\S+回", out, re.MULTILINE), out
    # the next command finds the book by title, its embedding resumed later, nothing lost
    embedder2 = HashEmbedder()
    monkeypatch.setattr("rag.index.open_index", lambda settings, **kw: open_index(settings, embedder=embedder2))
    code, out, err = run(["search", "孙悟空", "--book", TITLE, "--mode", "keyword"])
    assert code == 0 and out.startswith("1. "), err
    code, out, _ = run(["books"])
    assert code == 0 and " ready " not in out  # answered before the vectors were there


def test_search_labels_each_score_by_the_retriever_that_gave_it(data: Path) -> None:
    guide = make_epub(data / "xiyouji-guide.epub", guide_chapters(1, 10))
    assert run(["ingest", str(guide), "--keyword-only"])[0] == 0  # hybrid, keywords only for now
    code, out, err = run(["search", "孙悟空 金箍棒", "-k", "4", "--mode", "hybrid"])
    assert code == 0, err
    heads = [line for line in out.splitlines() if not line.startswith("   ")]
    assert len(heads) == 4
    for rank, line in enumerate(heads, start=1):
        assert re.fullmatch(rf"{rank}\. {TITLE} · 第\S+回.* · chunk \d+ \(\d+-\d+\)  "
                            r"\[found by keyword; hybrid score \d\.\d{4}\]", line), line
    assert run(["ingest", str(guide)])[0] == 0  # now with vectors
    code, out, _ = run(["search", "孙悟空 金箍棒", "-k", "6", "--mode", "hybrid"])
    assert code == 0 and "[found by keyword + vector; hybrid score " in out
    code, out, _ = run(["search", "孙悟空", "-k", "2", "--mode", "keyword"])
    assert code == 0 and out.count("[found by keyword; keyword score ") == 2


def test_books_escapes_control_and_bidi_characters_of_file_names(data: Path) -> None:
    name = "evil\n\u202etxt.gnp\x1b[31m.txt"
    path = data / name
    path.write_text("第一回 石猴出世\n\n" + guide_text()[:3000], encoding="utf-8")
    code, _, err = run(["ingest", str(path), "--keyword-only"])
    assert code == 0, err
    code, out, _ = run(["books"])
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2, out  # the header and one row: the newline did not split it
    assert "\u202e" not in out and "\x1b" not in out
    assert "evil\\n\\u202etxt.gnp\\x1b[31m.txt" in lines[1]


def test_eval_route_finds_an_indexed_book_and_refuses_an_unknown_one(data: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from rag.config import load_settings
    from rag.eval.cli import _book_check
    from rag.testing.openai_stub import OpenAIStub

    guide = make_epub(data / "xiyouji-guide.epub", guide_chapters(1, 10))
    assert run(["ingest", str(guide), "--keyword-only"])[0] == 0
    args = main_cli.build_parser().parse_args(["eval", "route", "--cases", str(ROUTES), "--book", TITLE])
    check, title, index = _book_check(args, load_settings())
    try:
        assert title == TITLE and "金箍棒" in check("金箍棒有多重？")
    finally:
        index.close()

    def never(body: dict) -> dict:
        raise AssertionError("the router was asked although the book is unknown")

    with OpenAIStub(never) as stub:
        monkeypatch.setenv("LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("LLM_MODEL", "stub-model")
        code = main_cli.main(["eval", "route", "--cases", str(ROUTES), "--quiet", "--report",
                              str(data / "r.json"), "--book", "红楼梦"])
    assert code == 1
    assert "error: no book matches '红楼梦'" in capsys.readouterr().err
    assert not (data / "r.json").exists()
