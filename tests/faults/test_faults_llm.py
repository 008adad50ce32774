"""Fault suite (issue 12), the model: a refused connection, a rejected key (401) or a timeout is an
``LLMUnavailable`` ("transport"), a reply that is not the JSON asked for is an ``LLMOutputError``
("invalid_output"); only the second may count as invalid JSON in the evaluation log. Real
langchain-openai client against tests/openai_stub.py on loopback."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest
from conftest import make_settings
from langchain_core.messages import HumanMessage

from rag.agent.deps import Deps
from rag.agent.evallog import JsonlEvalLog
from rag.agent.events import run_turn
from rag.agent.graph import build_graph
from rag.errors import LLMError, LLMOutputError, LLMUnavailable
from rag.llm import failure_kind, make_chat_model, structured_invoke, unavailable
from rag.schemas import Evaluation, Passage
from rag.testing.fakes import FakeRetriever
from rag.testing.openai_stub import OpenAIStub, request_kind

KEY = "sk-live-SECRET-0a1b2c3d4e5f"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens here once the socket is closed


def invoke(base_url: str, method: str = "function_calling", timeout: float = 10.0) -> LLMError:
    settings = make_settings(llm_base_url=base_url, llm_api_key=KEY, llm_model="stub-model", llm_max_retries=0,
                             llm_timeout=timeout, llm_structured_method=method)
    with pytest.raises(LLMError) as info:
        structured_invoke(make_chat_model(settings), Evaluation, [HumanMessage("enough?")], method)
    return info.value


def test_rejected_key_is_transport_and_names_the_endpoint_not_the_key() -> None:
    with OpenAIStub(lambda body: (401, f"Incorrect API key provided: {KEY}")) as stub:
        error = invoke(stub.base_url)
    assert isinstance(error, LLMUnavailable) and failure_kind(error) == "transport"
    assert error.endpoint == stub.base_url and stub.base_url in str(error)
    assert "HTTP 401" in str(error) and "LLM_API_KEY" in str(error)
    assert KEY not in str(error) and KEY not in repr(error.args)


def test_refused_connection_is_transport() -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    error = invoke(base)
    assert isinstance(error, LLMUnavailable) and failure_kind(error) == "transport"
    assert "cannot connect" in str(error) and base in str(error) and KEY not in str(error)


def test_timeout_is_transport() -> None:
    with OpenAIStub(lambda body: time.sleep(3) or {"reason": "late"}) as stub:
        error = invoke(stub.base_url, timeout=0.5)
    assert isinstance(error, LLMUnavailable) and failure_kind(error) == "transport"
    assert "LLM_TIMEOUT" in str(error)


@pytest.mark.parametrize(("method", "reply"), [
    ("json_mode", "I think the passages are probably enough!"),  # not JSON at all
    ("function_calling", {"verdict": "yes"}),  # JSON, wrong schema
])
def test_unusable_reply_is_invalid_output(method: str, reply) -> None:
    with OpenAIStub(lambda body: reply) as stub:
        error = invoke(stub.base_url, method=method)
    assert isinstance(error, LLMOutputError) and failure_kind(error) == "invalid_output"
    assert not isinstance(error, LLMUnavailable)


def test_failure_kind_of_messages_and_raw_exceptions() -> None:
    assert failure_kind(LLMUnavailable("http://x/v1", "model call failed at http://x/v1 (cannot connect)")) == "transport"
    assert failure_kind(LLMOutputError("invalid structured output for Evaluation: no JSON")) == "invalid_output"
    assert failure_kind(ConnectionRefusedError()) == "transport"
    assert failure_kind(ValueError("no JSON object")) == "invalid_output"
    # the kind is the exception's type: a model reply quoted inside an output error cannot pass for a transport failure
    quoted = LLMOutputError("invalid structured output for Evaluation: no JSON object in reply: 'model call failed'")
    assert failure_kind(quoted) == "invalid_output"


def _judge_fails_twice(base_url: str, eval_log: JsonlEvalLog, method: str = "function_calling") -> None:
    settings = make_settings(llm_base_url=base_url, llm_api_key=KEY, llm_model="stub-model", llm_max_retries=0,
                             llm_structured_method=method)
    deps = Deps(settings=settings, llm=make_chat_model(settings), eval_log=eval_log,
                retriever=FakeRetriever([Passage(id="p1", text="第二十七回 尸魔三戏唐三藏", score=0.9)]))
    list(run_turn(build_graph(deps), "三打白骨精是第几回？", thread_id=uuid.uuid4().hex))


def test_the_evaluation_log_reason_tells_transport_from_invalid_output(tmp_path) -> None:
    """What the eval-log record holds for each kind: its ``invalid_json`` flag (read from the
    errors' types, never their wording) separates them."""
    log = JsonlEvalLog(tmp_path / "eval_log.jsonl")

    def route_then(reply):
        return lambda body: ({"reason": "about the book", "strategy": "complex"}
                             if request_kind(body) == "RouteDecision" else reply)

    with OpenAIStub(route_then((401, "bad key"))) as stub:
        _judge_fails_twice(stub.base_url, log)
    with OpenAIStub(route_then("not JSON, just prose")) as stub:
        _judge_fails_twice(stub.base_url, log, method="json_mode")
    records = [json.loads(line) for line in log.path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2
    reasons = [r["evaluation"]["reason"] for r in records]
    assert all("invalid twice" in reason for reason in reasons)  # both took the conservative path
    assert [r["invalid_json"] for r in records] == [False, True]
    assert KEY not in log.path.read_text(encoding="utf-8")


def test_llm_errors_carry_their_message_as_codes() -> None:
    class Rejected(Exception):
        status_code = 401

    error = unavailable(object(), Rejected("bad key"))
    assert error.msg.code == "llm.call_failed" and error.msg.level == "error"
    assert error.msg.params["what"].code == "llm.key_rejected"
    assert str(error) == "model call failed at object (HTTP 401, the key was rejected: check LLM_API_KEY; Rejected): bad key"
    assert "密钥被拒绝" in error.msg.text("zh") and failure_kind(error) == "transport"
