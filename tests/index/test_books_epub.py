"""EPUBs as published (issue 24): the structures real writers produce, rebuilt here byte by byte as
ZIPs (package document, NCX and/or nav, XHTML) with a generated 100-回 book (no text of the novel):

- calibre ``ebook-convert`` from a TXT: no TOC, 15 size-split ``index_split_NNN.html`` files, the
  第N回 lines as ``<p>``, a ``titlepage.xhtml``;
- pandoc, every 回 in one XHTML with ``<h2>`` headings and nav links with fragments, ``title_page.xhtml``;
- EPUB3 with 10 回 per XHTML, TOC entries ``partNN.xhtml#cN`` (and the same with a coarse TOC that
  names only the first 回 of each file);
- each 回 split over 2-3 files, the TOC pointing at the first;
- pandoc, one XHTML per 回 (EPUB2, NCX only), a title page;
- calibre from Markdown: one file per 回, an h1 TOC.

Each must load as the book's 100 回 (numbers and titles), with the 前言 as front matter (0) and the
后记 outside the numbering, and the 五行山 passage must be cited as 第七回 by a real index."""

from __future__ import annotations

import html
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_settings
from fixtures_index.books import chinese_numeral
from fixtures_index.embedders import HashEmbedder

from rag.index import IndexConfig, open_index
from rag.index.loaders import load_book

N = 100
NAMES = "青龙白虎朱雀玄武麒麟凤凰白鹤金鹿银狐赤兔"
PLACES = "东海西岭南山北原中州云台石桥竹林"
FIVE = "如来佛祖翻掌一扑，把猴王推出西天门外，将五指化作金木水火土五座联山，唤名五行山，轻轻把他压住。"


def numeral(n: int) -> str:
    return "一百" if n == 100 else chinese_numeral(n)


def title(n: int) -> str:
    return f"第{numeral(n)}回 {NAMES[n % 10]}过{PLACES[n // 10 % 8]}{PLACES[n % 8]}"


def paragraphs(n: int, count: int = 6) -> list[str]:
    lines = [f"{NAMES[(n + i) % 10]}第{i + 1}日到了{PLACES[(n + i) % 8]}，说起旧事{n}-{i}，众人都笑了。"
             for i in range(count)]
    if n == 7:
        lines.insert(3, FIVE)
    return lines


FRONT = ["这是一篇前言，说的是编者如何整理这部书，又如何校对了各家的本子，文字较长，不算任何一回。"] * 2
BACK = ["这是后记，记下抄书人的名字和抄成的年月，也不算任何一回，只在书后。"] * 2

CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="{opf}" media-type="application/oebps-package+xml"/></rootfiles></container>')


def xhtml(body: str) -> str:
    return ('<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
            f"<head><title>西游记</title></head><body>{body}</body></html>")


def ps(lines: list[str], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return "".join(f"<p{attr}>{html.escape(line)}</p>" for line in lines)


Toc = list[tuple[str, str, list]]  # (href, label, children)


def write_epub(path: Path, files: list[tuple[str, str]], toc: Toc, *, nav: bool = True, ncx: bool = True,
               root: str = "EPUB") -> Path:
    """A ZIP with the EPUB's files: ``files`` (name under ``root``, XHTML) in spine order, a package
    document, and the TOC as an EPUB3 nav page and/or an NCX."""
    def navpoints(entries: Toc) -> str:
        return "".join(f'<navPoint id="n{abs(hash((h, t)))}"><navLabel><text>{html.escape(t)}</text></navLabel>'
                       f'<content src="{h}"/>{navpoints(c)}</navPoint>' for h, t, c in entries)

    def items(entries: Toc) -> str:
        return "".join(f'<li><a href="{h}">{html.escape(t)}</a>{"<ol>" + items(c) + "</ol>" if c else ""}</li>'
                       for h, t, c in entries)

    manifest = "".join(f'<item id="f{i}" href="{name}" media-type="application/xhtml+xml"/>'
                       for i, (name, _) in enumerate(files))
    spine = "".join(f'<itemref idref="f{i}"/>' for i in range(len(files)))
    if nav:
        manifest += '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
    if ncx:
        manifest += '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
    opf = ('<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" '
           f'version="{3.0 if nav else 2.0}" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
           '<dc:identifier id="id">xyj</dc:identifier><dc:title>西游记</dc:title><dc:creator>吴承恩</dc:creator>'
           f'<dc:language>zh</dc:language></metadata><manifest>{manifest}</manifest>'
           f'<spine{" toc=" + chr(34) + "ncx" + chr(34) if ncx else ""}>{spine}</spine></package>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        zf.writestr("META-INF/container.xml", CONTAINER.format(opf=f"{root}/content.opf"))
        zf.writestr(f"{root}/content.opf", opf)
        for name, content in files:
            zf.writestr(f"{root}/{name}", content)
        if nav:
            zf.writestr(f"{root}/nav.xhtml", xhtml(f'<nav epub:type="toc" xmlns:epub="http://www.idpf.org/2007/ops">'
                                                   f"<ol>{items(toc)}</ol></nav>"))
        if ncx:
            zf.writestr(f"{root}/toc.ncx", '<?xml version="1.0" encoding="utf-8"?><ncx xmlns="http://www.daisy.org/'
                        f'z3986/2005/ncx/" version="2005-1"><head/><docTitle><text>西游记</text></docTitle>'
                        f"<navMap>{navpoints(toc)}</navMap></ncx>")
    return path


TITLE_PAGE = xhtml('<h1 class="title">西游记</h1><p class="author">吴承恩</p>')


def calibre_from_txt(path: Path) -> Path:
    """No TOC but a "Start" entry, 15 files cut by size (mid-回), every heading a <p>."""
    lines = ["前言", *FRONT]
    for n in range(1, N + 1):
        lines += [title(n), *paragraphs(n)]
    lines += ["后记", *BACK]
    size = len(lines) // 15 + 1
    files = [("titlepage.xhtml", xhtml('<div><svg><image href="cover.jpeg"/></svg></div>'))]
    files += [(f"index_split_{k:03d}.html", xhtml(ps(lines[k * size : (k + 1) * size], "calibre1")))
              for k in range(15)]
    return write_epub(path, files, [("index_split_000.html", "Start", [])], nav=False, root="OEBPS")


def pandoc_one_file(path: Path) -> Path:
    """Every 回 in one XHTML under <section id=..><h2>, nav links with fragments under the book's h1."""
    body = f'<section id="qianyan" class="level1"><h1>前言</h1>{ps(FRONT)}</section>'
    body += '<section id="xiyouji" class="level1"><h1>西游记</h1>'
    body += "".join(f'<section id="c{n}" class="level2"><h2>{title(n)}</h2>{ps(paragraphs(n))}</section>'
                    for n in range(1, N + 1))
    body += f'</section><section id="houji" class="level1"><h1>后记</h1>{ps(BACK)}</section>'
    toc: Toc = [("text/ch001.xhtml#qianyan", "前言", []),
                ("text/ch001.xhtml#xiyouji", "西游记", [(f"text/ch001.xhtml#c{n}", title(n), []) for n in range(1, N + 1)]),
                ("text/ch001.xhtml#houji", "后记", [])]
    return write_epub(path, [("text/title_page.xhtml", TITLE_PAGE), ("text/ch001.xhtml", xhtml(body))], toc)


def parts_of_ten(path: Path, coarse: bool = False) -> Path:
    """EPUB3, 10 回 per partNN.xhtml with <h2 id="cN">; a TOC of every 回 (or, coarse, of each file's first)."""
    files = [("front.xhtml", xhtml(f"<h1>前言</h1>{ps(FRONT)}"))]
    toc: Toc = [("front.xhtml", "前言", [])]
    for part in range(10):
        body = "".join(f'<h2 id="c{n}">{title(n)}</h2>{ps(paragraphs(n))}' for n in range(part * 10 + 1, part * 10 + 11))
        files.append((f"part{part:02d}.xhtml", xhtml(body)))
        toc += [(f"part{part:02d}.xhtml#c{n}", title(n), []) for n in range(part * 10 + 1, part * 10 + 11)
                if not coarse or n == part * 10 + 1]
    files.append(("back.xhtml", xhtml(f"<h1>后记</h1>{ps(BACK)}")))
    toc.append(("back.xhtml", "后记", []))
    return write_epub(path, files, toc, ncx=False)


def split_over_files(path: Path) -> Path:
    """Each 回 over 2-3 files (the heading in the first); the TOC points at the first file."""
    files = [("front.xhtml", xhtml(f"<h1>前言</h1>{ps(FRONT)}"))]
    toc: Toc = [("front.xhtml", "前言", [])]
    for n in range(1, N + 1):
        lines, pieces = paragraphs(n), 2 + n % 2
        step = len(lines) // pieces + 1
        for k in range(pieces):
            head = f"<h2>{title(n)}</h2>" if k == 0 else ""
            files.append((f"ch{n:03d}_{k}.xhtml", xhtml(head + ps(lines[k * step : (k + 1) * step]))))
        toc.append((f"ch{n:03d}_0.xhtml", title(n), []))
    files.append(("back.xhtml", xhtml(f"<h1>后记</h1>{ps(BACK)}")))
    toc.append(("back.xhtml", "后记", []))
    return write_epub(path, files, toc, nav=False)


def one_file_per_chapter(path: Path, calibre: bool = False) -> Path:
    """pandoc (EPUB2, NCX only, title_page.xhtml) or calibre from Markdown (h1 per 回, index_split_NNN)."""
    name = (lambda k: f"index_split_{k:03d}.html") if calibre else (lambda k: f"text/ch{k:03d}.xhtml")
    tag = "h1" if calibre else "h2"
    files = [("titlepage.xhtml" if calibre else "text/title_page.xhtml", TITLE_PAGE),
             (name(0), xhtml(f"<{tag}>前言</{tag}>{ps(FRONT)}"))]
    toc: Toc = [(name(0), "前言", [])]
    for n in range(1, N + 1):
        files.append((name(n), xhtml(f'<{tag} id="h{n}">{title(n)}</{tag}>{ps(paragraphs(n))}')))
        toc.append((f"{name(n)}#h{n}" if calibre else name(n), title(n), []))
    files.append((name(N + 1), xhtml(f"<{tag}>后记</{tag}>{ps(BACK)}")))
    toc.append((name(N + 1), "后记", []))
    return write_epub(path, files, toc, nav=calibre, ncx=True)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "calibre-txt": calibre_from_txt,
    "pandoc-one-file": pandoc_one_file,
    "parts-of-ten": parts_of_ten,
    "parts-of-ten-coarse-toc": lambda p: parts_of_ten(p, coarse=True),
    "split-over-files": split_over_files,
    "pandoc-per-chapter": one_file_per_chapter,
    "calibre-markdown": lambda p: one_file_per_chapter(p, calibre=True),
}


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_every_structure_loads_as_the_books_hundred_chapters(tmp_path: Path, kind: str) -> None:
    book = load_book(BUILDERS[kind](tmp_path / f"{kind}.epub"))
    assert (book.title, book.author) == ("西游记", "吴承恩")
    numbered = [(c.num, c.title) for c in book.chapters if c.num]
    assert numbered == [(n, title(n)) for n in range(1, N + 1)]
    assert [(c.num, c.title) for c in book.chapters if not c.num] == [(0, "前言"), (None, "后记")]
    assert all(c.text for c in book.chapters)
    seventh = next(c for c in book.chapters if c.num == 7)
    assert seventh.text.split("\n") == paragraphs(7)  # whole, joined, without its heading
    assert not any(title(n) in c.text for c in book.chapters for n in (1, 50, 100))
    assert "吴承恩" not in "\n".join(c.text for c in book.chapters)  # the title page is not a chapter


@pytest.fixture(scope="module")
def index_of_all(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("epubs")
    index = open_index(make_settings(data_dir=tmp / "data"), embedder=HashEmbedder(), config=IndexConfig())
    books = {kind: index.ingest(build(tmp / f"{kind}.epub"), name=kind, background=False)
             for kind, build in BUILDERS.items()}
    yield index, books
    index.close()


def test_the_five_elements_mountain_is_cited_as_chapter_seven(index_of_all) -> None:
    index, books = index_of_all
    for kind, info in books.items():
        assert info.chapters == N + 2, kind
        found = index.search("五行山 压住 猴王", k=3, book_id=info.id, mode="keyword")
        top = found.passages[0]
        assert (top.chapter_num, top.label()) == (7, title(7)) and "五行山" in top.text, kind
        assert index.search("五行山 压住 猴王", k=5, book_id=info.id, mode="keyword", chapters=(8, 100)).passages[0] \
            .chapter_num != 7


def test_anchors_belong_to_the_block_they_point_at() -> None:
    from rag.index.epub_split import html_blocks

    blocks = html_blocks('<html><body><p>before <b>it</b></p>text after<section id="s2"><a id="c2"/>'
                         '<h2>第二回 <i>名</i></h2><p id="p1">正文</p></section></body></html>')
    assert [(b.text, sorted(b.ids), b.heading) for b in blocks] == [
        ("before it", [], False), ("text after", [], False), ("第二回 名", ["c2", "s2"], True), ("正文", ["p1"], False)]


def test_a_page_the_toc_leaves_out_is_its_own_section_when_it_opens_with_a_heading(tmp_path: Path) -> None:
    files = [(f"p{n}.xhtml", xhtml(f"<h2>{title(n)}</h2>{ps(paragraphs(n))}")) for n in (1, 2, 3)]
    files.insert(2, ("p2b.xhtml", xhtml(ps(["第二回的后半，接着上一页。"]))))
    book = load_book(write_epub(tmp_path / "partial.epub", files, [("p1.xhtml", title(1), []), ("p3.xhtml", title(3), [])]))
    assert [(c.num, c.title) for c in book.chapters] == [(n, title(n)) for n in (1, 2, 3)]
    assert book.chapters[1].text.endswith("第二回的后半，接着上一页。")
