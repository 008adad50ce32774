"""Recorded model replies as benchmark fixtures, served over real HTTP (``rag eval … --replay FILE``)
and recorded from a real endpoint (``rag eval … --record FILE``).

A fixture is JSON Lines: ``#`` comment lines first (how the replies were made), then one record per
reply::

    {"case": "x02", "call": "judge-evidence", "question": "...", "attempt": 1, "reply": {...} | "text"}

``call`` is what the project asked the model for (``call_of``): ``route``, ``judge-evidence``,
``judge-sentence``, ``judge-verdict``, ``answer``, ``relevance``, ``verify``, ``rewrite``,
``query-rewrite``, ``direct``. Replies are keyed by the **case and the call**, not by the prompt, so a
prompt edit does not void them: a request is matched to its case by the case's question and the
beginnings of its passages, both of which appear in every prompt that carries them (the router's
prompt carries only the question). ``attempt`` 2 answers the judge's retry after an invalid reply.

Fixtures never hold the novels' text: every run of ``MIN_SPAN`` or more characters of a reply that is
copied from the case's own context is stored as ``⟦start:end⟧`` (offsets into the case's passages
joined by a newline) and restored from the corpus on replay (``encode_spans`` / ``decode_spans``).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.agent import prompts
from rag.eval.cases import Case, CaseError, jsonl_records
from rag.testing.openai_stub import OpenAIStub

logger = logging.getLogger(__name__)

TAIL_CHARS = 1200  # a passage is shown up to MAX_PASSAGE_CHARS (default): its end as shown
MIN_SPAN = 6  # a copied run at least this long is stored as a reference into the case's context
_SPAN = re.compile(r"⟦(\d+):(\d+)⟧")
_SCHEMA_CALLS = {"RouteDecision": "route", "Evaluation": "judge-verdict", "EvidenceJudgement": "judge-evidence",
                 "SentenceLabel": "verify", "Extraction": "extract"}


def _head(template: str) -> str:
    """The fixed beginning of a prompt template (up to its first placeholder), to recognise it by."""
    return template.split("{", 1)[0][:60]


def _system_calls() -> list[tuple[str, str]]:
    return [(_head(prompts.GENERATE_SYSTEM), "answer"), (_head(prompts.RELEVANCE_SYSTEM), "relevance"),
            (_head(prompts.REWRITE_SYSTEM), "rewrite"), (_head(prompts.QUERY_REWRITE_SYSTEM), "query-rewrite"),
            (_head(prompts.DIRECT_SYSTEM), "direct"), (_head(prompts.EVIDENCE_SYSTEM), "judge-evidence"),
            (_head(prompts.EVALUATE_SYSTEM), "judge-verdict"), (_head(prompts.ROUTE_SYSTEM), "route"),
            (_head(prompts.VERIFY_SYSTEM), "verify"), (_head(prompts.EXTRACT_SYSTEM), "extract")]


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def call_of(body: dict[str, Any]) -> str:
    """What a chat-completions request asks for (see the module docstring); "unknown" otherwise."""
    messages = body.get("messages") or []
    system = _content(messages[0]) if messages and messages[0].get("role") == "system" else ""
    name = None
    if body.get("tools"):
        name = body["tools"][0].get("function", {}).get("name")
    elif (body.get("response_format") or {}).get("type") == "json_schema":
        name = body["response_format"].get("json_schema", {}).get("name")
    call = _SCHEMA_CALLS.get(name or "")
    if call is None:
        call = next((c for head, c in _system_calls() if head and system.startswith(head)), "unknown")
    if call == "judge-evidence" and _head(prompts.EVIDENCE_SENTENCE_RULE).strip() in system:
        call = "judge-sentence"
    return call


def _squash(text: str) -> str:
    return "".join(text.split())


_RETRY_HEAD = _head(prompts.RETRY_USER)


def _user_text(body: dict[str, Any]) -> tuple[str, int]:
    """The last user message that is not a retry request, and the attempt (2 after a retry request)."""
    users = [_content(m) for m in body.get("messages") or [] if m.get("role") == "user"]
    attempt = 1
    while users and users[-1].startswith(_RETRY_HEAD):
        users.pop()
        attempt += 1
    return (users[-1] if users else ""), attempt


# --------------------------------------------------------------------------- novel text out of fixtures
def case_context(case: Case) -> str:
    """The text that span references point into: the case's passages joined by a newline."""
    return "\n".join(p.text for p in case.context)


def encode_spans(text: str, context: str, min_span: int = MIN_SPAN) -> str:
    """``text`` with every run of ``min_span``+ characters copied from ``context`` as ``⟦a:b⟧``."""
    if not context or len(text) < min_span:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        length = min_span
        pos = context.find(text[i:i + length]) if i + length <= len(text) else -1
        if pos < 0:
            out.append(text[i])
            i += 1
            continue
        while i + length < len(text):
            nxt = context.find(text[i:i + length + 1])
            if nxt < 0:
                break
            pos, length = nxt, length + 1
        out.append(f"⟦{pos}:{pos + length}⟧")
        i += length
    return "".join(out)


def decode_spans(text: str, context: str) -> str:
    return _SPAN.sub(lambda m: context[int(m.group(1)):int(m.group(2))], text)


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- matching requests to cases
@dataclass
class CaseMatcher:
    """Finds the case a request is about: its question is in the prompt, and so is the beginning of
    each of its passages (for calls that carry passages). Of several, the one with most passages, then
    the one whose passages' ends are in the prompt too (two cases may share a question, and one's
    passage may begin inside the other's), then the longest question (one case's question may hold
    another's): the best first. A recorder files a reply under the first; a replay answers with the
    first that has one (fixtures recorded before this order filed some replies under a neighbour)."""

    cases: Sequence[Case]
    _keys: list[tuple[Case, str, list[str], list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._keys = [(c, _squash(c.question), [_squash(p.text)[:24] for p in c.context],
                       [_squash(p.text[:TAIL_CHARS])[-24:] for p in c.context]) for c in self.cases]

    def match(self, user_text: str, *, with_passages: bool, sentences: bool = False, cited: bool = False,
              ) -> list[Case]:
        """The cases a request is about: its question, and its passages' beginnings (``with_passages``)
        or, for the small turn's extraction (``sentences``), every sentence it shows in one of them;
        for a call about one answer sentence (``cited``: no question in it), the cases one of whose
        passages it carries, the most first."""
        hay = _squash(user_text)
        if cited:
            hits = [(sum(h in hay for h in heads), c) for c, _, heads, _ in self._keys]
            return [c for n, c in sorted(hits, key=lambda x: -x[0]) if n]
        found = [(c, q, heads, tails) for c, q, heads, tails in self._keys if q and q in hay]
        if sentences:
            # a passage's own sentences (its heading, "n.0", aside), as the prompt writes them (one line)
            shown = [_squash(m.group(2)) for m in _SHOWN_SENTENCE.finditer(user_text) if m.group(1) != "0"]
            return [c for c, *_ in found if all(any(s in _squash(p.text) for p in c.context) for s in shown)]
        if with_passages:
            found = [item for item in found if all(h in hay for h in item[2])]

            def rank(item: tuple[Case, str, list[str], list[str]]) -> tuple[int, int, int]:
                return len(item[2]), sum(t in hay for t in item[3]), len(item[1])

            found.sort(key=rank, reverse=True)
            if found:  # cases missing a passage of the best are not about this request
                most = len(found[0][2])
                found = [item for item in found if len(item[2]) == most]
        else:
            found.sort(key=lambda item: len(item[1]), reverse=True)
        return [item[0] for item in found]


_NO_PASSAGES = {"route", "rewrite", "query-rewrite", "direct", "relevance"}
_SHOWN_SENTENCE = re.compile(r"^\(\d+\.(\d+)\) (.+)$", re.MULTILINE)  # a sentence of the extraction prompt


_VERIFIED_SENTENCE = re.compile(r"^SENTENCE: (.*)$", re.MULTILINE)  # the sentence of a verify prompt


_RELEVANCE_PART = re.compile(r"^Question part: (.*)\nQuote: (.*)$", re.MULTILINE)  # a relevance prompt's part and quote


def about_of(call: str, user_text: str) -> str | None:
    """What a call about one piece of an answer is about, from its prompt: the sentence of a verify
    call, the part and quote of a relevance call (one line each); None for other calls."""
    if call == "verify":
        m = _VERIFIED_SENTENCE.search(user_text)
        return m.group(1) if m else None
    if call == "relevance":
        r = _RELEVANCE_PART.search(user_text)
        return f"{r.group(1)}\n{r.group(2)}" if r else None
    return None


def reply_key(call: str, about: str | None) -> str:
    """What a reply is filed under beside its case and attempt: the call, and for a call about one
    piece of an answer (``about_of``) that piece too."""
    return call if about is None else f"{call}:{_squash(about)}"


def question_cases(items: Iterable[Any]) -> list[Case]:
    """Cases for calls whose prompt carries only the question (the query rewriter's), from anything
    with an ``id`` and a ``question`` (``rag.eval.retrieval_cases.RetrievalCase``)."""
    return [Case(id=i.id, question=i.question, context=(), label_enough=False, kind="question") for i in items]


# --------------------------------------------------------------------------- fixtures
def load_fixture(path: str | Path, cases: Sequence[Case]) -> dict[tuple[str, str, int], Any]:
    """(case id, call, attempt) -> reply, span references restored from each case's context."""
    by_id = {c.id: c for c in cases}
    replies: dict[tuple[str, str, int], Any] = {}
    for number, record in jsonl_records(Path(path)):
        where = f"{Path(path).name}:{number}"
        case_id, call = str(record.get("case", "")), str(record.get("call", ""))
        if not case_id or not call or "reply" not in record:
            raise CaseError(f"{where}: a reply record needs 'case', 'call' and 'reply'")
        case = by_id.get(case_id)
        if case is None:
            continue  # a reply for a case not asked for (another case file or --limit)
        if record.get("question") and _squash(str(record["question"])) != _squash(case.question):
            logger.warning("%s: case %s's question changed since the reply was recorded; skipped", where, case_id)
            continue
        context = case_context(case)
        reply = _map_strings(record["reply"], lambda s, ctx=context: decode_spans(s, ctx))
        about = decode_spans(record["sentence"], context) if isinstance(record.get("sentence"), str) else None
        replies[(case_id, reply_key(call, about), int(record.get("attempt") or 1))] = reply
    return replies


def fixture_record(case: Case, call: str, reply: Any, attempt: int = 1, *, sentence: str | None = None,
                   ) -> dict[str, Any]:
    """One fixture line for ``reply`` (novel text stored as span references); ``sentence``: what a call
    about one piece of an answer was about (``about_of``: its key beside the case)."""
    context = case_context(case)
    record: dict[str, Any] = {"case": case.id, "call": call, "question": case.question}
    if attempt != 1:
        record["attempt"] = attempt
    if sentence is not None:
        record["sentence"] = encode_spans(sentence, context)
    record["reply"] = _map_strings(reply, lambda s: encode_spans(s, context))
    return record


def write_fixture(path: str | Path, header: Iterable[str], records: Iterable[dict[str, Any]]) -> None:
    lines = [f"# {h}" for h in header]
    lines += [json.dumps(r, ensure_ascii=False) for r in records]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- servers
class _Keyed:
    """Shared by replay and record: the request's call, case candidates and attempt, and the loopback
    server (``self.stub``, set by the subclass) as a context manager."""

    stub: OpenAIStub

    def __init__(self, cases: Sequence[Case]) -> None:
        self.matcher = CaseMatcher(cases)
        self.lock = threading.Lock()
        self.misses: list[str] = []

    @property
    def base_url(self) -> str:
        return self.stub.base_url

    def __enter__(self) -> Any:
        self.stub.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stub.__exit__(*exc)

    def key(self, body: dict[str, Any]) -> tuple[str, str | None, list[Case], int]:
        """The request's call, what it is about (``about_of``), its case candidates and attempt."""
        call = call_of(body)
        text, attempt = _user_text(body)
        cases = self.matcher.match(text, with_passages=call not in _NO_PASSAGES, sentences=call == "extract",
                                   cited=call == "verify")
        return call, about_of(call, text), cases, attempt


class ReplayServer(_Keyed):
    """A loopback OpenAI-compatible server answering from a fixture (``base_url``; use as a context
    manager). A request with no recorded reply gets HTTP 404 naming the call and case, and is counted
    in ``misses``."""

    def __init__(self, fixture: str | Path, cases: Sequence[Case], missed: str | Path | None = None) -> None:
        super().__init__(cases)
        self.replies = load_fixture(fixture, cases)
        self.served = 0
        self.missed = Path(missed) if missed else None  # where the prompts of the missed requests go
        self.stub = OpenAIStub(self._respond, models=("replay",))

    def _respond(self, body: dict[str, Any]) -> Any:
        call, about, candidates, attempt = self.key(body)
        for case in candidates:
            reply = self.replies.get((case.id, reply_key(call, about), attempt))
            if reply is not None:
                with self.lock:
                    self.served += 1
                return reply
        what = (f"{reply_key(call, about)} for case {', '.join(c.id for c in candidates) or '(no case matched)'} "
                f"attempt {attempt}")
        with self.lock:
            self.misses.append(what)
            if self.missed is not None and candidates:  # the prompt to have a model answer (it holds book text)
                with self.missed.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"case": candidates[0].id, "call": call, "attempt": attempt, "sentence": about,
                                         "messages": body.get("messages")}, ensure_ascii=False) + "\n")
        return (404, f"no recorded reply: {what}")



def reply_of(response: dict[str, Any]) -> Any:
    """What a chat-completions response says: a tool call's or a JSON reply's object, else the text."""
    message = (response.get("choices") or [{}])[0].get("message") or {}
    calls = message.get("tool_calls") or []
    text = calls[0]["function"]["arguments"] if calls else _content(message)
    try:
        parsed = json.loads(text, strict=False)
    except (TypeError, ValueError):
        return text
    return parsed if isinstance(parsed, dict) else text


class RecordingServer(_Keyed):
    """A loopback proxy to a real OpenAI-compatible endpoint that writes each exchange as a fixture
    record to ``path`` (and the rendered prompt to ``path`` + ``.prompts.jsonl``, which holds the
    book's text and stays out of the repository)."""

    def __init__(self, path: str | Path, cases: Sequence[Case], *, upstream: str, api_key: str = "",
                 header: Sequence[str] = (), timeout: float = 900.0) -> None:
        import httpx

        super().__init__(cases)
        self.path = Path(path)
        self.prompts_path = self.path.with_name(self.path.name + ".prompts.jsonl")
        self.client = httpx.Client(base_url=upstream.rstrip("/"), timeout=timeout,
                                   headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            self.path.write_text("".join(f"# {h}\n" for h in header), encoding="utf-8")
        self.recorded = 0
        self.stub = OpenAIStub(self._respond, models=("record",))

    def _respond(self, body: dict[str, Any]) -> Any:
        call, about, candidates, attempt = self.key(body)
        upstream = dict(body, stream=False)
        upstream.pop("stream_options", None)
        response = self.client.post("/chat/completions", json=upstream)
        if response.status_code != 200:
            return (response.status_code, response.text[:500])
        reply = reply_of(response.json())
        with self.lock:
            if candidates:
                record = fixture_record(candidates[0], call, reply, attempt, sentence=about)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                self.recorded += 1
            else:
                self.misses.append(f"{call}: no case matched the request; not recorded")
            with self.prompts_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"case": candidates[0].id if candidates else None, "call": call,
                                     "attempt": attempt, "messages": body.get("messages")},
                                    ensure_ascii=False) + "\n")
        return reply

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self.client.close()
