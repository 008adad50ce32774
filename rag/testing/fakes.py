"""Fakes for tests, benchmarks and demos: a scripted chat model that supports tool-calling
structured output and streaming (LangChain's GenericFakeChatModel supports neither), a fake
retriever and a fake web search. Nothing here talks to the network, and no production path uses
these (an answer evaluation serves a case's context with ``rag.eval.runner.StaticRetriever``)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

from rag.index.chapters import chapter_word
from rag.lang import text_lang
from rag.schemas import Passage, RetrievalOutcome, SearchOutcome, SearchResult

#: A scripted reply: a dict (structured output: a tool call or JSON text), a str (text), or an
#: Exception (raised, as a provider error would be).
Reply = dict[str, Any] | str | BaseException
Responder = Callable[..., Reply]


def schema_of(kwargs: dict[str, Any]) -> str | None:
    """Which structured schema a call asks for ('RouteDecision', 'Evaluation', ...) or None."""
    tools = kwargs.get("tools") or []
    if tools:
        return tools[0].get("function", {}).get("name")
    fmt = kwargs.get("response_format")
    if isinstance(fmt, dict):
        return (fmt.get("json_schema") or {}).get("name") or "json_object"
    return None


class ScriptedChatModel(BaseChatModel):
    """Replies from a script, in order, or from a ``responder(messages, schema=...)`` callable.

    ``calls`` records (schema, messages) for every call, for assertions.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: list[Any] = []
    responder: Any = None
    temperature: float = 0.0
    chunk_chars: int = 4
    model_name: str = "scripted-fake"

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _cursor: dict[str, int] = PrivateAttr(default_factory=lambda: {"next": 0})  # shared by copies
    _calls: list[tuple[str | None, list[BaseMessage]]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    @property
    def calls(self) -> list[tuple[str | None, list[BaseMessage]]]:
        return self._calls

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _next(self, messages: list[BaseMessage], schema: str | None) -> Reply:
        with self._lock:
            self._calls.append((schema, list(messages)))
            if self.responder is not None:
                return self.responder(messages, schema=schema)
            index = self._cursor["next"]
            if index >= len(self.replies):
                raise AssertionError(f"ScriptedChatModel ran out of replies (call for {schema})")
            self._cursor["next"] = index + 1
            return self.replies[index]

    def _message(self, reply: Reply, kwargs: dict[str, Any]) -> AIMessage:
        if isinstance(reply, BaseException):
            raise reply
        schema = schema_of(kwargs)
        if isinstance(reply, dict):
            if kwargs.get("tools") and schema:
                call = {"name": schema, "args": reply, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}
                return AIMessage(content="", tool_calls=[call])
            return AIMessage(content=json.dumps(reply, ensure_ascii=False))
        return AIMessage(content=str(reply))

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        message = self._message(self._next(messages, schema_of(kwargs)), kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = self._message(self._next(messages, schema_of(kwargs)), kwargs)
        if message.tool_calls:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=0)
                for c in message.tool_calls]))
            return
        text = str(message.content)
        for i in range(0, len(text), self.chunk_chars):
            piece = text[i:i + self.chunk_chars]
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


class FakeBook:
    """A book as ``FakeRetriever.book`` returns it."""

    def __init__(self, book_id: str, title: str, lang: str = "", units: tuple[str, str] = ("", "")) -> None:
        self.book_id = book_id
        self.title = title
        self.lang = lang  # the language of its text, as ``BookInfo.lang``
        self.unit_zh, self.unit_en = units  # its words for a chapter, as ``BookInfo.unit_zh`` / ``unit_en``


class FakeRetriever:
    """A ``rag.schemas.Retriever``: returns the given passages (scoped by book_id when they carry
    one, and by chapter range); records queries and the scope of each call (``calls``). ``titles``:
    book id -> title, for ``book`` (an unknown id raises ``LookupError``)."""

    def __init__(self, passages: list[Passage] | None = None, error: BaseException | None = None,
                 titles: dict[str, str] | None = None) -> None:
        self.passages = passages or []
        self.error = error
        self.titles = titles or {}
        self.queries: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def book(self, book_id: str) -> FakeBook:
        if book_id not in self.titles:
            raise LookupError(f"no book with id {book_id!r}")
        mine = [p for p in self.passages if p.book_id == book_id]
        texts = [p.text for p in mine]
        return FakeBook(book_id, self.titles[book_id], text_lang(texts) if texts else "",
                        chapter_word(p.chapter_title for p in mine))

    def search(self, query: str, k: int | None = None, book_id: str | None = None, *,
               chapters: tuple[int, int] | None = None, queries: list[str] | None = None) -> RetrievalOutcome:
        """``retrieve`` (the rewritten ``queries`` are recorded in the call, not searched)."""
        scope = {"chapters": chapters} if chapters is not None else {}  # a subclass may not take chapters
        passages = self.retrieve(query, k, book_id, **scope)
        if queries:
            self.calls[-1]["queries"] = list(queries)
        return RetrievalOutcome(passages=passages, queries=list(queries or []))

    def retrieve(self, query: str, k: int | None = None, book_id: str | None = None,
                 chapters: tuple[int, int] | None = None) -> list[Passage]:
        self.queries.append(query)
        self.calls.append({"query": query, "k": k, "book_id": book_id, "chapters": chapters})
        if self.error is not None:
            raise self.error
        hits = [p for p in self.passages if (book_id is None or p.book_id in ("", book_id))
                and (chapters is None or (p.chapter_num is not None and chapters[0] <= p.chapter_num <= chapters[1]))]
        return hits[: k or len(hits)]


class FakeWebSearch:
    """A ``rag.schemas.WebSearch``: returns the given results, or raises ``error``; records queries."""

    def __init__(self, results: list[SearchResult] | None = None, error: BaseException | None = None,
                 name: str = "fake") -> None:
        self.name = name
        self.results = results or []
        self.error = error
        self.queries: list[str] = []

    def search(self, query: str, count: int) -> list[SearchResult]:
        self.queries.append(query)
        if self.error is not None:
            raise self.error
        return self.results[:count]

    def search_detailed(self, query: str, count: int) -> SearchOutcome:
        return SearchOutcome(results=self.search(query, count), provider=self.name)
