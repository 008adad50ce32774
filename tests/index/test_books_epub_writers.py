"""EPUBs built by real writers (issue 24, item 3): every row of the issue's EPUB table rebuilt with a
generated 100-回 book (short generated paragraphs, 第N回 headings, a marker sentence in 第七回; no
text of any novel) by two EPUB writers other than the project's own builder:

- **pandoc 3.9** (the binary inside ``pypandoc_binary`` 1.17, pinned in requirements-dev.txt), from
  Markdown with a YAML title block: every 回 in one XHTML under one ``#`` heading (``##`` per 回, nav
  and NCX links with fragments); one XHTML per 回, as EPUB3 (nav + NCX) and EPUB2 (NCX only), and
  with ``--number-sections`` ("2 第一回 ..." in headings and nav); 10 回 per XHTML (``#`` per ten,
  ``##`` per 回); and the one-XHTML book opening with a 目录 (every heading again, as paragraphs).
  pandoc writes its own ``title_page.xhtml``.
- **EbookLib 0.20** (``ebooklib``, a runtime dependency; a real writer many tools use; it writes NCX
  and nav), with the files laid out as calibre's ``ebook-convert`` lays them out (calibre itself is
  no PyPI package, and CI installs no Debian packages for it): from a TXT (no TOC but "Start", 15
  size-split ``index_split_NNN.html`` files cut mid-回, the 第N回 lines as ``<p>``; EbookLib gives
  ``.html`` pages the media type text/html; and the same TXT opening with a 目录 that the cut spreads
  over three files); from Markdown (one ``index_split_NNN.html`` per 回, an
  h1 TOC with fragments); 10 回 per ``partNN.xhtml`` with ``partNN.xhtml#cN`` entries nested under
  part entries (and a coarse TOC naming only each file's first 回); each 回 over 2-3
  ``chNNN_split_00K.xhtml`` files; and as Sigil names its files (``Text/Section0001.xhtml`` a title
  page without a telltale name, then a 目录 page of links). Each but the Sigil one has a
  ``titlepage.xhtml``.

Each must load as the book's 100 回 with their numbers and titles, the title and contents pages not
chapters, the 前言 front matter (0) and the 后记 outside the numbering; the marker is cited as 第七回
by a real index (keyword and hybrid), and ``search --chapter 7`` returns only 第七回's text. The
books are built once per module."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pypandoc  # requirements-dev.txt pins pypandoc_binary: pandoc's binary comes inside
import pytest
from conftest import make_settings
from ebooklib import epub
from fixtures_index.books import chinese_numeral
from fixtures_index.embedders import HashEmbedder

from rag.index import IndexConfig, open_index
from rag.index.loaders import load_book

N = 100
SURNAMES = "赵钱孙李周吴郑王冯陈"
VERBS = "访渡登守过问寻别入归"
PLACES = ["东海", "西岭", "南山", "北原", "中州", "云台", "石桥", "竹林", "柳岸", "松冈", "梅溪"]
MARKER = "守关的老石匠在柳泉驿后埋下一枚刻着云纹的铜铃，从此再没有人提起。"
MARKER_QUERY = "石匠 铜铃 柳泉驿"
BOOK, AUTHOR = "西游记", "吴承恩"
FRONT = ["这篇前言说的是编者如何把各家的本子对读了三遍，又改正了许多错字，不算任何一回。",
         "前言的第二段说，书里的人名地名都照原样保留，读者可以放心翻检。"]
BACK = ["这是后记，记下抄书人的名字和抄成的年月，也不算任何一回，只放在书后。"]


def numeral(n: int) -> str:
    return "一百" if n == 100 else chinese_numeral(n)


def title(n: int) -> str:
    """第七回 郑公访云台: unique per 回."""
    return f"第{numeral(n)}回 {SURNAMES[n % 10]}公{VERBS[n // 10 % 10]}{PLACES[n % 11]}"


def paragraphs(n: int) -> list[str]:
    lines = [f"{SURNAMES[(n + i) % 10]}家的人在{PLACES[(n + i) % 11]}住了{i + 2}日，讲完第{n}段旧话的第{i + 1}节，"
             f"众人听罢都笑了。" for i in range(4)]
    if n == 7:
        lines.insert(2, MARKER)
    return lines


def chapter_text(n: int) -> str:
    return "\n".join(paragraphs(n))


# -- pandoc -----------------------------------------------------------------------------------------

#: A contents list as Chinese TXT files open with: "目录", then every 回's heading on a line.
CONTENTS = ["目录", *(title(n) for n in range(1, N + 1))]


def markdown(heading: Callable[[int], str], contents: bool = False) -> str:
    """The book as Markdown with a YAML title block; ``heading(n)`` is the Markdown heading of 回 n
    ("# 第七回 ..."), or a part heading and then the 回's own when it returns two lines; ``contents``:
    the 目录 lines as paragraphs at the top of the first 回's file."""
    out = ["---", f"title: {BOOK}", f"author: {AUTHOR}", "lang: zh", "---", "", "# 前言", ""]
    out += [f"{p}\n" for p in FRONT]
    for n in range(1, N + 1):
        *before, own = heading(n).split("\n")
        if contents and n == 1:  # after a part heading, before the 回's own
            before += ["\n\n".join(CONTENTS), ""]
        head = "\n".join([*before, own])
        out += [head, ""] + [f"{p}\n" for p in paragraphs(n)]
    out += ["# 后记", ""] + [f"{p}\n" for p in BACK]
    return "\n".join(out)


def pandoc(path: Path, text: str, to: str = "epub3") -> Path:
    pypandoc.convert_text(text, to, format="markdown", outputfile=str(path), extra_args=["--quiet"])
    return path


def pandoc_one_file(path: Path, contents: bool = False) -> Path:
    """Every 回 in one XHTML: ``# 西游记`` then ``##`` per 回 (pandoc splits files at level 1), the
    目录 lines (``contents``) before the first."""
    return pandoc(path, markdown(lambda n: (f"# {BOOK}\n\n" if n == 1 else "") + f"## {title(n)}", contents))


def pandoc_per_chapter(path: Path, to: str = "epub3") -> Path:
    return pandoc(path, markdown(lambda n: f"# {title(n)}"), to)


def pandoc_numbered(path: Path) -> Path:
    """One XHTML per 回 with ``--number-sections``: headings and nav entries read "2 第一回 ..."."""
    text = markdown(lambda n: f"# {title(n)}")
    pypandoc.convert_text(text, "epub3", format="markdown", outputfile=str(path), extra_args=["--quiet", "-N"])
    return path


def pandoc_parts_of_ten(path: Path) -> Path:
    def heading(n: int) -> str:
        part = f"# 第{numeral(n)}回至第{numeral(n + 9)}回\n\n" if n % 10 == 1 else ""
        return f"{part}## {title(n)}"

    return pandoc(path, markdown(heading))


# -- EbookLib, laid out as calibre and other tools lay out their files --------------------------------

def ps(lines: list[str], cls: str = "") -> str:
    import html

    attr = f' class="{cls}"' if cls else ""
    return "".join(f"<p{attr}>{html.escape(line)}</p>" for line in lines)


TitleToc = list[Any]


def ebooklib_book(path: Path, files: list[tuple[str, str]], toc: TitleToc, title_page: bool = True) -> Path:
    """An EPUB written by EbookLib: a titlepage.xhtml first (unless not ``title_page``), then
    ``files`` (name, body XHTML) in spine order, NCX and nav (ebooklib writes both) from ``toc``:
    ``(href, title)`` or ``((href, title), [children])``."""
    book = epub.EpubBook()
    book.set_identifier("generated-xiyouji")
    book.set_title(BOOK)
    book.set_language("zh")
    book.add_author(AUTHOR)
    page = epub.EpubHtml(title=BOOK, file_name="titlepage.xhtml", lang="zh")
    page.content = f'<div class="title"><h1>{BOOK}</h1><p class="author">{AUTHOR}</p></div>'
    items = [page] if title_page else []
    for name, body in files:
        item = epub.EpubHtml(title=BOOK, file_name=name, lang="zh")
        item.content = body
        items.append(item)
    for item in items:
        book.add_item(item)

    def entry(e: Any) -> Any:
        if isinstance(e[0], tuple):
            (href, text), children = e
            return (epub.Section(text, href=href), [entry(c) for c in children])
        href, text = e
        return epub.Link(href, text, re.sub(r"\W", "_", href))

    book.toc = [entry(e) for e in toc]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = [*items, "nav"]
    epub.write_epub(str(path), book)
    return path


def calibre_from_txt(path: Path, contents: bool = False) -> Path:
    """No TOC but "Start", 15 files cut by size (mid-回), every heading a ``<p>``; ``contents``: the
    TXT opens with a 目录 (cut over the first files)."""
    lines = [*(CONTENTS if contents else []), "前言", *FRONT]
    for n in range(1, N + 1):
        lines += [title(n), *paragraphs(n)]
    lines += ["后记", *BACK]
    size = len(lines) // 15 + 1
    files = [(f"index_split_{k:03d}.html", ps(lines[k * size : (k + 1) * size], "calibre1")) for k in range(15)]
    return ebooklib_book(path, files, [("index_split_000.html", "Start")])


def calibre_from_markdown(path: Path) -> Path:
    """One ``index_split_NNN.html`` per 回 with ``<h1 id="hN">``, the TOC pointing at the ids."""
    name = "index_split_{:03d}.html".format
    files = [(name(0), f'<h1 id="front">前言</h1>{ps(FRONT)}')]
    toc: TitleToc = [(f"{name(0)}#front", "前言")]
    for n in range(1, N + 1):
        files.append((name(n), f'<h1 id="h{n}" class="calibre3">{title(n)}</h1>{ps(paragraphs(n), "calibre1")}'))
        toc.append((f"{name(n)}#h{n}", title(n)))
    files.append((name(N + 1), f'<h1 id="back">后记</h1>{ps(BACK)}'))
    toc.append((f"{name(N + 1)}#back", "后记"))
    return ebooklib_book(path, files, toc)


def parts_of_ten(path: Path, coarse: bool = False) -> Path:
    """10 回 per ``partNN.xhtml`` with ``<h2 id="cN">``; the TOC nests each file's 回 under a part
    entry (or, coarse, names only each file's first 回)."""
    files = [("front.xhtml", f"<h1>前言</h1>{ps(FRONT)}")]
    toc: TitleToc = [("front.xhtml", "前言")]
    for part in range(10):
        first = part * 10 + 1
        name = f"part{part:02d}.xhtml"
        files.append((name, "".join(f'<h2 id="c{n}">{title(n)}</h2>{ps(paragraphs(n))}'
                                    for n in range(first, first + 10))))
        if coarse:
            toc.append((f"{name}#c{first}", title(first)))
        else:
            toc.append(((name, f"第{numeral(first)}回至第{numeral(first + 9)}回"),
                        [(f"{name}#c{n}", title(n)) for n in range(first, first + 10)]))
    files.append(("back.xhtml", f"<h1>后记</h1>{ps(BACK)}"))
    toc.append(("back.xhtml", "后记"))
    return ebooklib_book(path, files, toc)


def split_over_files(path: Path) -> Path:
    """Each 回 over 2-3 ``chNNN_split_00K.xhtml`` files (calibre's size split), the heading in the
    first; the TOC points at the first."""
    files = [("front.xhtml", f"<h1>前言</h1>{ps(FRONT)}")]
    toc: TitleToc = [("front.xhtml", "前言")]
    for n in range(1, N + 1):
        lines, pieces = paragraphs(n), 2 + n % 2
        for k in range(pieces):
            head = f"<h2>{title(n)}</h2>" if k == 0 else ""
            piece = lines[k * len(lines) // pieces : (k + 1) * len(lines) // pieces]
            files.append((f"ch{n:03d}_split_{k:03d}.xhtml", head + ps(piece)))
        toc.append((f"ch{n:03d}_split_000.xhtml", title(n)))
    files.append(("back.xhtml", f"<h1>后记</h1>{ps(BACK)}"))
    toc.append(("back.xhtml", "后记"))
    return ebooklib_book(path, files, toc)


def sigil_layout(path: Path) -> Path:
    """Laid out as Sigil names its files: ``Text/Section0001.xhtml`` the title page (no telltale
    name), ``Section0002`` a 目录 page of links longer than a cover page (each entry with a note),
    then one section per 回; the TOC names the 前言, the 回 and the 后记 only."""
    name = "Text/Section{:04d}.xhtml".format
    files = [(name(1), f'<h1 class="title">{BOOK}</h1><p class="author">{AUTHOR}</p><p>某某书局印行</p>')]
    entries = "".join(f'<p><a href="Section{n + 3:04d}.xhtml">{title(n)}　共{len(paragraphs(n))}段·'
                      f'{"上" if n <= N // 2 else "下"}卷第{n}篇</a></p>' for n in range(1, N + 1))
    files += [(name(2), f"<h1>目录</h1>{entries}"), (name(3), f"<h1>前言</h1>{ps(FRONT)}")]
    toc: TitleToc = [(name(3), "前言")]
    for n in range(1, N + 1):
        files.append((name(n + 3), f"<h2>{title(n)}</h2>{ps(paragraphs(n))}"))
        toc.append((name(n + 3), title(n)))
    files.append((name(N + 4), f"<h1>后记</h1>{ps(BACK)}"))
    toc.append((name(N + 4), "后记"))
    return ebooklib_book(path, files, toc, title_page=False)


#: kind -> (the writer named in the package document's generator, builder)
BUILDERS: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "pandoc-one-file": ("pandoc", pandoc_one_file),
    "pandoc-one-file-with-contents": ("pandoc", lambda p: pandoc_one_file(p, contents=True)),
    "pandoc-per-chapter": ("pandoc", pandoc_per_chapter),
    "pandoc-per-chapter-epub2": ("pandoc", lambda p: pandoc_per_chapter(p, "epub2")),
    "pandoc-parts-of-ten": ("pandoc", pandoc_parts_of_ten),
    "pandoc-numbered-sections": ("pandoc", pandoc_numbered),
    "ebooklib-calibre-txt": ("ebooklib", calibre_from_txt),
    "ebooklib-calibre-txt-with-contents": ("ebooklib", lambda p: calibre_from_txt(p, contents=True)),
    "ebooklib-calibre-markdown": ("ebooklib", calibre_from_markdown),
    "ebooklib-parts-of-ten": ("ebooklib", parts_of_ten),
    "ebooklib-parts-of-ten-coarse-toc": ("ebooklib", lambda p: parts_of_ten(p, coarse=True)),
    "ebooklib-split-files": ("ebooklib", split_over_files),
    "ebooklib-sigil-layout": ("ebooklib", sigil_layout),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("writers")
    return {kind: build(tmp / f"{kind}.epub") for kind, (_, build) in BUILDERS.items()}


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_the_writer_is_the_one_named(built: dict[str, Path], kind: str) -> None:
    """The EPUB really comes from the writer the row names (its package document says so)."""
    with zipfile.ZipFile(built[kind]) as zf:
        opf = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".opf"))
        pages = [zf.read(n).decode() for n in zf.namelist() if n.endswith(".xhtml")]
    if BUILDERS[kind][0] == "pandoc":
        assert all('<meta name="generator" content="pandoc" />' in page for page in pages)
    else:
        assert re.search(r'name="generator" content="Ebook-?Lib', opf, re.IGNORECASE), opf[:400]
    assert ('version="2.0"' in opf) == kind.endswith("epub2")


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_every_writers_book_loads_as_its_hundred_chapters(built: dict[str, Path], kind: str) -> None:
    book = load_book(built[kind])
    assert (book.title, book.author) == (BOOK, AUTHOR)
    numbered = [(c.num, c.title) for c in book.chapters if c.num]
    assert numbered == [(n, title(n)) for n in range(1, N + 1)]
    assert [(c.num, c.title) for c in book.chapters if not c.num] == [(0, "前言"), (None, "后记")]
    seventh = next(c for c in book.chapters if c.num == 7)
    assert seventh.text == chapter_text(7)  # whole, joined, without its heading
    assert all(c.text == chapter_text(c.num) for c in book.chapters if c.num)
    everything = "\n".join(c.text for c in book.chapters)
    assert AUTHOR not in everything  # the title page is not a chapter
    assert not any(title(n) in everything for n in (1, 7, 50, 100))


def test_every_writer_gives_the_same_book(built: dict[str, Path]) -> None:
    """Chapter for chapter, front and back matter included: the book id (a hash of every chapter's
    number, title and text) is one for all, so the index below holds one copy of it."""
    from rag.index.catalog import book_id_of

    ids = {kind: book_id_of(load_book(path)) for kind, path in built.items()}
    assert len(set(ids.values())) == 1, ids


class Borrowed:
    """The module's index lent to one CLI command, which closes what it opened."""

    def __init__(self, index: Any) -> None:
        self.index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def indexed(built: dict[str, Path],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Every book ingested into one real index; books that load alike share an id (and one copy),
    a book that loads differently is indexed, and searched below, on its own."""
    tmp = tmp_path_factory.mktemp("writers-index")
    index = open_index(make_settings(data_dir=tmp / "data"), embedder=HashEmbedder(), config=IndexConfig())
    infos = {kind: index.ingest(path, name=kind, background=False) for kind, path in built.items()}
    yield index, infos
    index.close()


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_the_marker_is_cited_as_chapter_seven(indexed: tuple[Any, dict[str, Any]], mode: str) -> None:
    index, infos = indexed
    for kind, info in infos.items():
        assert info.chapters == N + 2, kind
        top = index.search(MARKER_QUERY, k=3, book_id=info.id, mode=mode).passages[0]
        assert (top.chapter_num, top.label()) == (7, title(7)) and MARKER in top.text, kind
        others = index.search(MARKER_QUERY, k=5, book_id=info.id, mode=mode, chapters=(8, N)).passages
        assert all(MARKER not in p.text for p in others), kind


def test_search_chapter_7_returns_only_chapter_sevens_text(indexed: tuple[Any, dict[str, Any]]) -> None:
    """``python -m rag search ... --chapter 7`` on each book: every passage is 第七回's and its text
    is 第七回's, while the same query without the scope finds other 回."""
    from rag import cli as main_cli

    index, infos = indexed
    query = "众人听罢都笑了"  # in every 回
    for kind, info in infos.items():
        args = main_cli.build_parser().parse_args(["search", query, "--book", info.id, "--chapter", "7",
                                                   "-k", "10", "--mode", "keyword", "--chars", "4000"])
        args.open_index = lambda settings: Borrowed(index)
        out, err = io.StringIO(), io.StringIO()
        assert args.func(args, make_settings(), out, err) == 0, err.getvalue()
        heads = re.findall(r"^\d+\. .+? · (.+?) · chunk", out.getvalue(), re.MULTILINE)
        snippets = re.findall(r"^   (.+)$", out.getvalue(), re.MULTILINE)
        assert heads and set(heads) == {title(7)}, (kind, out.getvalue())
        seventh = " ".join(chapter_text(7).split("\n"))
        assert all(s in seventh for s in snippets) and any(MARKER in s for s in snippets), (kind, snippets)
        scoped = index.search(query, k=10, book_id=info.id, mode="keyword", chapters=(7, 7)).passages
        assert scoped and all(p.chapter_num == 7 and p.text in chapter_text(7) for p in scoped), kind
        wide = index.search(query, k=10, book_id=info.id, mode="keyword").passages
        assert {p.chapter_num for p in wide} - {7}, kind  # the scope is what kept the others out


def test_a_book_without_in_text_headings_is_split_where_its_toc_points(tmp_path: Path) -> None:
    """Pages of plain paragraphs, the 回 titles only in the TOC (once a ValueError in the split)."""
    files = [(f"text/c{n}.xhtml", ps(paragraphs(n))) for n in (1, 2, 3)]
    toc = [(f"text/c{n}.xhtml", title(n)) for n in (1, 2, 3)]
    book = load_book(ebooklib_book(tmp_path / "toc-only.epub", files, toc))
    assert [(c.num, c.title, c.text) for c in book.chapters] == [(n, title(n), chapter_text(n)) for n in (1, 2, 3)]


def test_pages_written_as_text_html_are_read(tmp_path: Path) -> None:
    """EbookLib gives ``.html`` / ``.htm`` pages the media type text/html and reads them back as items of
    unknown type: they are pages all the same (once skipped, leaving "no text")."""
    files = [(f"c{n}.{'html' if n % 2 else 'htm'}", f"<h2>{title(n)}</h2>{ps(paragraphs(n))}") for n in (1, 2, 3)]
    path = ebooklib_book(tmp_path / "html.epub", files, [(name, "Start") for name, _ in files[:1]])
    with zipfile.ZipFile(path) as zf:
        opf = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".opf"))
    assert opf.count('media-type="text/html"') == 3
    book = load_book(path)
    assert [(c.num, c.title, c.text) for c in book.chapters] == [(n, title(n), chapter_text(n)) for n in (1, 2, 3)]


@pytest.mark.parametrize(("heading", "label"), [
    ("2 第一回 钱公访西岭", "第一回 钱公访西岭"), ("1.3 Preface", "Preface"),
    ("12. Chapter XII  The End", "Chapter XII The End"), ("102 后记", "后记"),
    ("1984 Revisited", "1984 Revisited"), ("3 Men in a Boat", "3 Men in a Boat"),
])
def test_an_outline_number_before_a_heading_is_not_part_of_its_label(heading: str, label: str) -> None:
    from rag.index.epub_split import section_label

    assert section_label(heading) == label


def test_a_book_of_one_short_page_named_as_the_book_keeps_it(tmp_path: Path) -> None:
    """A page that looks like a title page is dropped only when the book has other pages."""
    files = [("text/poem.xhtml", f"<h1>{BOOK}</h1><p>只有一首短诗，写在书名下面。</p>")]
    book = load_book(ebooklib_book(tmp_path / "short.epub", files, [("text/poem.xhtml", BOOK)], title_page=False))
    assert [c.text for c in book.chapters] == ["只有一首短诗，写在书名下面。"]


def test_short_chapters_in_one_file_are_no_contents_list(tmp_path: Path) -> None:
    """Four 回 of one short line each in one XHTML, the TOC naming only the first: headings with
    little text between them are a contents list only when their titles come again later."""
    body = "".join(f"<h2>{title(n)}</h2><p>第{n}回只有一句。</p>" for n in (1, 2, 3, 4))
    book = load_book(ebooklib_book(tmp_path / "short.epub", [("text/all.xhtml", body)],
                                   [("text/all.xhtml", title(1))], title_page=False))
    assert [(c.num, c.title, c.text) for c in book.chapters] == [(n, title(n), f"第{n}回只有一句。") for n in (1, 2, 3, 4)]
