"""The command line's chapter scope and spoiler flags (``search --chapter/--read-up-to``, ``ask
--chapter/--read-up-to/--allow-web-spoilers``), ``--book`` by file stem, and the progress bars' rates,
on the sample guide with a deterministic embedder."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest
from fixtures_index.books import guide_chapters, make_epub
from fixtures_index.embedders import HashEmbedder

from rag import cli as main_cli
from rag.index import open_index
from rag.index.cli import _Bars


@pytest.fixture()
def guide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("rag.index.open_index", lambda settings, **kw: open_index(settings, embedder=HashEmbedder()))
    return make_epub(tmp_path / "xiyouji-guide.epub", guide_chapters(1, 10))


def run(argv: list[str], capfd) -> tuple[int, str, str]:
    """``python -m rag ARGV`` in this process (the handlers' output streams given explicitly)."""
    from rag.config import load_settings

    args = main_cli.build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, load_settings(), out, err)
    return code, out.getvalue(), err.getvalue()


def chapters_in(out: str) -> list[int]:
    """Chapter numbers of the listed passages ("第三回 ..." in each result line)."""
    from rag.index.chapters import parse_number

    return [parse_number(m) for m in re.findall(r"· 第(\S+?)回", out)]


def test_search_with_a_chapter_range_a_limit_and_a_book_by_file_stem(guide: Path, capfd) -> None:
    assert run(["ingest", str(guide)], capfd)[0] == 0
    code, out, _ = run(["search", "孙悟空", "-k", "8", "--book", "xiyouji-guide"], capfd)  # the file's stem
    assert code == 0 and len(set(chapters_in(out))) > 3
    code, out, _ = run(["search", "孙悟空", "-k", "8", "--chapter", "3-4"], capfd)
    assert code == 0 and chapters_in(out) and set(chapters_in(out)) <= {3, 4}
    code, out, _ = run(["search", "孙悟空", "-k", "8", "--read-up-to", "2"], capfd)
    assert code == 0 and chapters_in(out) and max(chapters_in(out)) <= 2
    code, _, err = run(["search", "孙悟空", "--chapter", "5-6", "--read-up-to", "2"], capfd)
    assert code == 1 and "come after --read-up-to 2" in err
    with pytest.raises(SystemExit) as exc:
        main_cli.main(["search", "孙悟空", "--chapter", "7-3"])
    assert exc.value.code == 2 and "empty chapter range" in capfd.readouterr().err


def test_ask_with_a_spoiler_limit_in_retrieval_only_mode(guide: Path, capfd) -> None:
    code, out, err = run(["ask", "唐僧师徒最后成了什么？", "--book", str(guide), "--read-up-to", "3"], capfd)
    assert code == 0, err
    assert "spoiler limit: chapters up to 3 only; web search off" in err
    assert "[info] retrieve_local: spoiler limit: only chapters up to 3 are searched" in err  # a notice
    found = re.findall(r"^\[\d+\] (第\S+回)", out, re.MULTILINE)
    assert found and all(chapters_in(f"· {f}")[0] <= 3 for f in found), out
    code, out, err = run(["ask", "孙悟空做了什么？", "--book", str(guide), "--chapter", "9-10", "--read-up-to", "3"],
                         capfd)
    assert code == 0 and "after the spoiler limit" in err
    code, _, err = run(["ask", "x", "--allow-web-spoilers", "--read-up-to", "2", "--book", str(guide)], capfd)
    assert code == 0 and "web search allowed, results marked as possible spoilers" in err


def test_progress_bar_rates_count_only_what_the_bar_saw() -> None:
    stream = io.StringIO()
    bars = _Bars(stream)
    bars("chunking", 0, 700_000, "chunking")
    bars("chunking", 700_000, 700_000, "1742 chunks")
    bars("embedding", 1000, 1742, "resumed")  # 1000 chunks were embedded before this run
    time.sleep(0.05)
    bars("embedding", 1010, 1742, "next chapter")
    bars("ready", 1742, 1742, "")
    text = stream.getvalue().replace("\r", "\n")
    assert "char/s" in text and "chunk chunk" not in text
    rates = [float(x) for x in re.findall(r"([\d.]+)chunk/s", text)]
    assert rates and all(rate < 1_000 for rate in rates)  # 10 chunks in 0.05 s, not 1010 in no time
