"""Fault battery, a visitor's own API key in the server log: a visitor types a key in the Settings tab,
the model endpoint answers 401 echoing it ("Incorrect API key provided: sk-…"). With the app's
logging set up (``setup_logging``), no log record, whatever logger or handler, holds the key: not
the message, not its traceback, not what the app's handler writes. Real langchain-openai client
against a loopback stub; the settings page's own ``apply_settings``."""

from __future__ import annotations

import io
import logging
import uuid
from collections.abc import Iterator

import pytest
from conftest import make_settings

from rag.agent.events import TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.agent.wiring import make_deps
from rag.logs import redact, setup_logging
from rag.schemas import Passage
from rag.testing.fakes import FakeRetriever
from rag.testing.openai_stub import OpenAIStub
from rag.ui.pages.settings import SettingsForm, apply_settings

SK_CANARY = "sk-visitor-canary-5e4d3c2b1a09f8e7"
#: A key of no known shape (Zhipu's are "<id>.<secret>"): only knowing the visitor's keys finds it.
PLAIN_CANARY = "5e4d3c2b1a09f8e7d6c5b4a3.VisitorCanaryZq"
SERVER_KEY = "server-key-0000-aaaa-bbbb"
PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]


@pytest.fixture
def app_logging() -> Iterator[io.StringIO]:
    """The app's logging as ``rag.ui.serve`` sets it up, writing to a buffer; undone afterwards."""
    root = logging.getLogger()
    factory, level = logging.getLogRecordFactory(), root.level
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        logging.setLogRecordFactory(factory)
        root.setLevel(level)


def _echo_key(stub: list[OpenAIStub]):
    def reply(body):
        sent = stub[0].headers[-1].get("authorization", "")
        key = sent.removeprefix("Bearer ")
        return 401, f"Incorrect API key provided: {key}. The token {key} is not valid for this gateway."
    return reply


@pytest.mark.parametrize("canary", [SK_CANARY, PLAIN_CANARY])
def test_a_visitors_key_is_in_no_log_record(app_logging, caplog, canary: str) -> None:
    holder: list[OpenAIStub] = []
    with OpenAIStub(_echo_key(holder)) as stub:
        holder.append(stub)
        server = make_settings(llm_base_url=stub.base_url, llm_api_key=SERVER_KEY, llm_model="stub-model",
                               llm_max_retries=0, search_provider="none", turn_timeout=30.0, query_rewrite=True,
                               log_level="DEBUG")
        setup_logging(server)
        caplog.set_level(logging.DEBUG)  # every record of every logger, the libraries' too
        deps = make_deps(server, index=FakeRetriever(PASSAGES))
        visitor = apply_settings(deps, deps.retriever, make_deps,
                                 SettingsForm(model="stub-model", key=canary, k=server.retrieval_k,
                                              rounds=server.max_web_rounds))
        final = list(run_turn(build_graph(visitor), "三打白骨精是第几回？", thread_id=uuid.uuid4().hex))[-1]
        try:
            raise RuntimeError(f"a failure that names {canary}")
        except RuntimeError:
            logging.getLogger("rag.test").exception("with a traceback")
        logging.getLogger("rag.test").warning("as an argument: %s", canary)
    assert isinstance(final, TurnFinished)
    assert any(h.get("authorization") == f"Bearer {canary}" for h in stub.headers)  # the visitor's key was used
    assert "401" in caplog.text and "generation failed" in caplog.text  # the failures were logged
    records = caplog.records
    assert len(records) >= 5
    for record in records:
        for part in (record.getMessage(), record.exc_text or "", str(record.msg)):
            assert canary not in part and SERVER_KEY not in part, (record.name, part)
    written = app_logging.getvalue()
    assert "generation failed" in written and canary not in written and SERVER_KEY not in written


@pytest.mark.parametrize("line", [
    f"generation failed: Error code: 401 - Incorrect API key provided: {SK_CANARY}.",
    f"headers {{'Authorization': 'Bearer {SK_CANARY}'}}",
    f"x-api-key: {SK_CANARY}",
    f"the key {SK_CANARY} was rejected",
    "key tvly-dev-0123456789abcdefABC rejected",
])
def test_key_shapes_are_redacted_without_being_known(line: str) -> None:
    clean = redact(line, [])
    assert SK_CANARY not in clean and "tvly-dev-0123456789" not in clean, clean
