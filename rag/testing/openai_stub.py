"""A loopback OpenAI-compatible server for tests: real HTTP, scripted replies.

``OpenAIStub(responder)`` serves ``POST /v1/chat/completions`` (plain and streamed SSE) and
``GET /v1/models``. ``responder(body) -> dict | str | tuple[int, str] | Trickle | HANG`` gets the
parsed request: a dict is returned as a tool call when the request has tools, else as JSON text; a
str is the message text; ``(status, body)`` sends an HTTP error; ``Trickle(text, every)`` streams
the text one piece every ``every`` seconds (a plain request gets it whole after the same total
time), optionally going silent after ``stall_after`` pieces; ``HANG`` never answers (the request
waits until the stub closes).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], Any]

HANG = object()  # a reply that never comes


@dataclass(frozen=True)
class Trickle:
    """A slow model: ``text`` in pieces of ``piece`` characters, one every ``every`` seconds (the
    first after ``first_after`` seconds, when given); after ``stall_after`` pieces (None: never) it
    sends nothing more until the stub closes."""

    text: str
    every: float
    piece: int = 1
    stall_after: int | None = None
    first_after: float | None = None


def request_kind(body: dict[str, Any]) -> str | None:
    """'RouteDecision' / 'Evaluation' / ... for structured calls, None for plain text."""
    tools = body.get("tools") or []
    if tools:
        return tools[0]["function"]["name"]
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["name"]
    if fmt.get("type") == "json_object":
        system = body["messages"][0]["content"] if body.get("messages") else ""
        if "judge of retrieval sufficiency" in system:
            return "Evaluation"
        return "EvidenceJudgement" if "numbered SOURCES answer a QUESTION" in system else "RouteDecision"
    return None


class OpenAIStub:
    def __init__(self, responder: Responder, models: tuple[str, ...] = ("stub-model",)) -> None:
        self.responder = responder
        self.models = models
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.closed = threading.Event()  # set on exit: hanging and trickling replies end
        self.hung_up = threading.Event()  # set when a client hung up on a trickling reply

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"stub": self}))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    """One request to an ``OpenAIStub`` (the stub is the class attribute ``stub``)."""

    stub: OpenAIStub

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/api/tags"):  # Ollama's model list
            self._send(200, {"models": [{"name": m} for m in self.stub.models]})
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.stub.models]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.stub.requests.append(body)
        self.stub.headers.append({k.lower(): v for k, v in self.headers.items()})
        reply = self.stub.responder(body)
        if reply is HANG:
            self.stub.closed.wait()
            return
        if isinstance(reply, Trickle):
            self._trickle(body, reply)
            return
        if isinstance(reply, tuple):
            status, text = reply
            self._send(status, {"error": {"message": text, "type": "stub_error"}})
            return
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(reply, dict) and body.get("tools"):
            message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function",
                                      "function": {"name": body["tools"][0]["function"]["name"],
                                                   "arguments": json.dumps(reply, ensure_ascii=False)}}]
        else:
            message["content"] = json.dumps(reply, ensure_ascii=False) if isinstance(reply, dict) else str(reply)
        if body.get("stream"):
            self._stream(body, message)
        else:
            self._send(200, {
                "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "stub-model"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })

    def _trickle(self, body: dict[str, Any], reply: Trickle) -> None:
        pieces = [reply.text[i:i + reply.piece] for i in range(0, len(reply.text), reply.piece)]
        if reply.stall_after is not None:
            pieces = pieces[:reply.stall_after]
        if not body.get("stream"):
            if self.stub.closed.wait(reply.every * len(pieces)) or reply.stall_after is not None:
                self.stub.closed.wait()
                return
            self._send(200, {"id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                             "model": body.get("model", "stub-model"),
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": reply.text}}]})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            self._event(body, {"role": "assistant", "content": ""})
            for i, piece in enumerate(pieces):
                pause = reply.first_after if i == 0 and reply.first_after is not None else reply.every
                if self.stub.closed.wait(pause):
                    return
                self._event(body, {"content": piece})
            if reply.stall_after is not None:
                self.stub.closed.wait()
                return
            self._event(body, {}, "stop")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:  # the client gave up: that is what a trickle is for
            self.stub.hung_up.set()
            return

    def _event(self, body: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> None:
        chunk = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": body.get("model", "stub-model"),
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        self.wfile.flush()

    def _stream(self, body: dict[str, Any], message: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

        def event(delta: dict[str, Any], finish: str | None = None) -> None:
            self._event(body, delta, finish)

        event({"role": "assistant", "content": ""})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            event({"tool_calls": [{"index": 0, **call}]})
            event({}, "tool_calls")
        else:
            text = message["content"] or ""
            for i in range(0, len(text), 5):
                event({"content": text[i:i + 5]})
            event({}, "stop")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
