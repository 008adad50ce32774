"""The embedded llama.cpp runtime (``rag.local``) with a real model: the tiny GGUF the tests write
(``rag.testing.tiny_gguf``), loaded once per session by the real ``xllamacpp`` server, called over
real HTTP by the project's own client code (``rag.llm``). Part of the normal suite: no network, no
downloaded model, about a second of model time in all."""

from __future__ import annotations

import faulthandler
import json
import socket
import threading
import time
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx
import pytest
from conftest import make_settings
from pydantic import BaseModel, Field

from rag import deadline as turn_deadline
from rag.deadline import Deadline, DeadlineExceeded
from rag.llm import DeadlineBound, judge_model, make_chat_model, stream_text, structured_invoke
from rag.local import runtime as runtime_module
from rag.local.runtime import LocalRuntime, LocalRuntimeError
from rag.testing.tiny_gguf import CHATML_TEMPLATE, write_tiny_gguf

# A reply the tiny model would write to the end of its context if nothing cut it short.
LONG = {"max_tokens": 4000, "ignore_eos": True}


class Verdict(BaseModel):
    """Bounded fields, so that even a model of random weights ends a reply that fits."""

    reason: str = Field(max_length=24)
    enough: bool
    source: Literal["book", "web", "none"]


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("models") / "tiny.gguf")


@pytest.fixture(scope="session")
def runtime(tiny_gguf: Path):
    rt = LocalRuntime(tiny_gguf, threads=2, ctx=4096, alias="tiny")
    rt.start(timeout=60)
    yield rt
    rt.stop()


@pytest.fixture()
def llm(runtime: LocalRuntime):
    settings = make_settings(llm_base_url=runtime.base_url, llm_api_key=runtime.api_key, llm_model=runtime.alias,
                             llm_max_tokens=256, llm_max_retries=0, llm_timeout=60)
    yield make_chat_model(settings)
    wait_idle(runtime)  # a test that gave up on a reply leaves the model free for the next one


def wait_idle(runtime: LocalRuntime, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while runtime.busy():
        assert time.monotonic() < end, "the model is still busy"
        time.sleep(0.05)


def _auth(runtime: LocalRuntime) -> dict[str, str]:
    return {"Authorization": f"Bearer {runtime.api_key}"}


def tokens_predicted(runtime: LocalRuntime) -> float:
    base = (runtime.base_url or "").removesuffix("/v1")
    metrics = httpx.get(f"{base}/metrics", headers=_auth(runtime), timeout=5).text
    for line in metrics.splitlines():
        if line.startswith("llamacpp:tokens_predicted_total"):
            return float(line.split()[1])
    raise AssertionError("no tokens_predicted_total in /metrics")


# --------------------------------------------------------------------------- the tiny model
def test_the_tiny_gguf_is_small_the_same_every_time_and_a_chatml_llama(tiny_gguf: Path, tmp_path: Path):
    import gguf

    assert tiny_gguf.stat().st_size < 2 * 1024 * 1024
    assert write_tiny_gguf(tmp_path / "again.gguf").read_bytes() == tiny_gguf.read_bytes()
    reader = gguf.GGUFReader(tiny_gguf)

    def string(key: str) -> str:
        field = reader.fields[key]
        return bytes(field.parts[field.data[0]]).decode("utf-8")

    assert string("general.architecture") == "llama"
    assert string("tokenizer.ggml.model") == "gpt2"
    assert string("tokenizer.chat_template") == CHATML_TEMPLATE
    assert len(reader.fields["tokenizer.ggml.tokens"].data) >= 256 + 3


# --------------------------------------------------------------------------- serving
def test_it_serves_on_loopback_behind_its_key(runtime: LocalRuntime):
    assert runtime.running and runtime.alias == "tiny"
    url = urlsplit(runtime.base_url or "")
    assert (url.scheme, url.hostname, url.path) == ("http", "127.0.0.1", "/v1") and url.port
    assert runtime.start() == runtime.base_url  # already running: the same server
    assert httpx.get(f"{runtime.base_url}/models", timeout=5).status_code == 401
    assert httpx.get(f"{runtime.base_url}/models", headers={"Authorization": "Bearer wrong"}, timeout=5).status_code == 401
    models = httpx.get(f"{runtime.base_url}/models", headers=_auth(runtime), timeout=5).json()
    assert [m["id"] for m in models["data"]] == ["tiny"]
    assert httpx.get(f"http://127.0.0.1:{url.port}/", timeout=5).status_code == 404  # no web UI
    assert runtime.api_key not in repr(runtime)


def test_a_json_schema_reply_is_valid_for_the_schema(llm):
    judge = judge_model(llm)
    for question in ("Is the weight of the staff in the passages?", "Who wrote the book?", "孙悟空的金箍棒有多重？"):
        verdict = structured_invoke(judge, Verdict, [("system", "Judge whether the passages answer."),
                                                     ("user", question)], "json_schema")
        assert isinstance(verdict, Verdict)
    # Without the schema the same model writes no such object: the constraint is what makes it valid.
    plain = judge.invoke([("user", "Who wrote the book?")])
    with pytest.raises(ValueError):
        Verdict.model_validate_json(str(plain.content))


def test_a_json_schema_reply_can_be_streamed(llm):
    # llama.cpp stops a streamed reply whose client hangs up, but not one that is not streamed:
    # streaming is how a structured call that a turn gives up on can free the model at once.
    schema = {"name": "Verdict", "schema": Verdict.model_json_schema(), "strict": False}
    bound = judge_model(llm).model_copy(update={"disable_streaming": False}).bind(
        response_format={"type": "json_schema", "json_schema": schema})
    pieces = [str(chunk.content) for chunk in bound.stream([("user", "Who wrote the book?")]) if chunk.content]
    assert len(pieces) > 1
    assert isinstance(Verdict.model_validate_json("".join(pieces)), Verdict)


def test_the_reply_streams_in_pieces(llm):
    pieces = [chunk.content for chunk in llm.stream([("user", "Tell me about the book.")]) if chunk.content]
    assert len(pieces) > 1
    streamed = stream_text(llm, [("user", "Tell me about the book.")])
    assert streamed.cut is None and streamed.text


def test_the_prompt_cache_reuses_a_shared_prefix(runtime: LocalRuntime):
    system = "You judge whether passages from the book answer a question. " * 20

    def ask(question: str) -> dict:
        body = {"model": runtime.alias, "max_tokens": 4,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}]}
        resp = httpx.post(f"{runtime.base_url}/chat/completions", json=body, headers=_auth(runtime), timeout=30)
        resp.raise_for_status()
        return resp.json()["usage"]

    ask("first question")
    usage = ask("second question")
    assert usage["prompt_tokens_details"]["cached_tokens"] > usage["prompt_tokens"] // 2


# --------------------------------------------------------------------------- time limits and Stop
def test_the_turns_time_limit_ends_a_model_call_and_stop_ends_what_the_server_still_runs(tiny_gguf: Path):
    # A runtime of its own: llama.cpp does not notice that the client of a call that is not streamed
    # gave up, and works on to max_tokens; stop() is what ends that work (here, and at exit).
    with LocalRuntime(tiny_gguf, alias="limited") as rt:
        settings = make_settings(llm_base_url=rt.base_url, llm_api_key=rt.api_key, llm_model=rt.alias,
                                 llm_max_tokens=LONG["max_tokens"], llm_max_retries=0)
        chat = make_chat_model(settings)
        assert chat is not None
        long = DeadlineBound(chat.model_copy(update={"extra_body": LONG}))
        started = time.monotonic()
        with turn_deadline.scope(Deadline.after(0.3)), pytest.raises(DeadlineExceeded) as caught:
            long.invoke([("user", "Write the whole book.")])
        assert time.monotonic() - started < 3
        assert caught.value.msg.code == "turn.deadline"
        port = urlsplit(rt.base_url or "").port
    assert port and not rt.running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_the_turns_time_limit_cuts_a_stream_and_frees_the_model(runtime: LocalRuntime, llm):
    long = llm.model_copy(update={"max_tokens": LONG["max_tokens"], "extra_body": LONG})
    before = tokens_predicted(runtime)
    with turn_deadline.scope(Deadline.after(0.2)):  # the tiny model's babble may loop: only the deadline here
        streamed = stream_text(long, [("user", "Write the whole book.")], stop_repeats=False)
    assert streamed.cut == "turn" and streamed.text
    wait_idle(runtime)
    # The server stopped when the stream was closed, long before the 4000 tokens it was asked for.
    assert 0 < tokens_predicted(runtime) - before < LONG["max_tokens"] // 2


def test_stop_ends_a_stream_and_frees_the_model(runtime: LocalRuntime, llm):
    long = llm.model_copy(update={"max_tokens": LONG["max_tokens"], "extra_body": LONG})
    stop = threading.Event()
    before = tokens_predicted(runtime)
    got = []
    for chunk in turn_deadline.pump(lambda: long.stream([("user", "Write the whole book.")]), cancel=stop):
        got.append(chunk)
        if len(got) == 5:
            stop.set()  # what the page's Stop button does to a turn
    assert len(got) >= 5
    wait_idle(runtime)
    assert 0 < tokens_predicted(runtime) - before < LONG["max_tokens"] // 2


def test_stop_cuts_a_reply_in_progress_and_does_not_hang(tiny_gguf: Path):
    # llama.cpp's destructor holds the GIL and waits for every request handler, which waits for its
    # client, which (in this process) needs the GIL: stop() must hang up on clients first.
    rt = LocalRuntime(tiny_gguf, alias="busy")
    rt.start(timeout=30)
    outcome: dict[str, object] = {}

    def call() -> None:
        body = {"model": "busy", "messages": [{"role": "user", "content": "Write the whole book."}], **LONG}
        try:
            outcome["status"] = httpx.post(f"{rt.base_url}/chat/completions", json=body, headers=_auth(rt),
                                           timeout=60).status_code
        except httpx.HTTPError as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    end = time.monotonic() + 30
    while not rt.busy():
        assert time.monotonic() < end and caller.is_alive(), outcome
        time.sleep(0.02)
    faulthandler.dump_traceback_later(60, exit=True)  # a deadlock ends the run instead of hanging it
    try:
        rt.stop()
    finally:
        faulthandler.cancel_dump_traceback_later()
    caller.join(10)
    assert isinstance(outcome.get("error"), httpx.HTTPError), outcome
    assert not rt.running


CTRL_C = """
import signal, sys, time
from pathlib import Path
from rag.local.runtime import LocalRuntime
# as in a terminal: a command started in the background by a shell without job control inherits
# SIGINT ignored, and Python then installs no handler of its own
signal.signal(signal.SIGINT, signal.default_int_handler)
rt = LocalRuntime(Path(sys.argv[1]), threads=1, ctx=512, alias="tiny")
rt.start(timeout=60)
try:
    signal.raise_signal(signal.SIGINT)
    time.sleep(2)
    print("no KeyboardInterrupt")
except KeyboardInterrupt:
    print("KeyboardInterrupt")
finally:
    rt.stop()
"""


def test_ctrl_c_still_reaches_python(runtime: LocalRuntime, tiny_gguf: Path):
    """Ctrl-C after llama.cpp's server has started: Python's handler, not the server's. In a process of
    its own, with Python's handler installed first: how the suite was started (``make test &`` ignores
    SIGINT for the whole tree) must not decide it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CTRL_C, str(tiny_gguf)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip().splitlines()[-1:] == ["KeyboardInterrupt"], done.stdout + done.stderr[-2000:]
    assert runtime.running
    assert httpx.get(f"{(runtime.base_url or '').removesuffix('/v1')}/health", timeout=5).status_code == 200


# --------------------------------------------------------------------------- failures
def _start_error(path: Path) -> LocalRuntimeError:
    with pytest.raises(LocalRuntimeError) as caught:
        LocalRuntime(path).start(timeout=30)
    return caught.value


def test_a_bad_file_gives_a_clear_message_that_names_only_the_file(tmp_path: Path, tiny_gguf: Path):
    (tmp_path / "notes.gguf").write_text("not a model", encoding="utf-8")
    (tmp_path / "cut.gguf").write_bytes(tiny_gguf.read_bytes()[:4096])  # a download that stopped early
    cases = {"missing.gguf": "local.model_missing", "notes.gguf": "local.not_gguf", "cut.gguf": "local.load_failed"}
    for name, code in cases.items():
        error = _start_error(tmp_path / name)
        assert error.msg.code == code, name
        for lang in ("en", "zh"):
            shown = error.msg.text(lang)
            assert name in shown and str(tmp_path) not in shown and code not in shown
    assert _start_error(tmp_path).msg.code == "local.model_missing"  # a folder is not a model


def test_too_little_memory_is_said_before_loading(tiny_gguf: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runtime_module, "available_memory", lambda: 1024 * 1024)
    error = _start_error(tiny_gguf)
    assert error.msg.code == "local.out_of_memory"
    assert error.msg.params["free_mb"] == 1 and int(str(error.msg.params["need_mb"])) > 1


def test_stop_frees_the_port_and_a_runtime_can_start_again(tiny_gguf: Path, caplog: pytest.LogCaptureFixture,
                                                          capfd: pytest.CaptureFixture[str]):
    rt = LocalRuntime(tiny_gguf, alias="again")
    with caplog.at_level("DEBUG", logger="rag.local"):
        base = rt.start(timeout=30)
    port = urlsplit(base).port
    assert port and httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "tiny.gguf" in logged and rt.api_key not in logged and str(tiny_gguf.parent) not in logged
    written = capfd.readouterr()  # llama.cpp's own log (stderr) is off: it would name the folder
    assert str(tiny_gguf.parent) not in written.err + written.out
    rt.stop()
    assert rt.base_url is None and not rt.running and not rt.busy()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with socket.socket() as sock:  # the port is free for anyone to take
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    rt.stop()  # idempotent
    with rt:  # and it starts again
        reply = httpx.post(f"{rt.base_url}/chat/completions", headers=_auth(rt), timeout=30,
                           json={"model": "again", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 200 and json.loads(reply.text)["model"] == "again"
    assert rt.base_url is None


class Essay(BaseModel):
    """A reply that runs as long as the model is let (the grammar does not let it end sooner): only
    the turn's deadline ends it."""

    text: str = Field(min_length=1500)


def test_a_structured_call_of_the_embedded_model_cut_by_the_deadline_frees_the_model(runtime: LocalRuntime):
    from rag.errors import LLMUnavailable
    from rag.llm import LOCAL_MODEL

    settings = make_settings(llm_base_url=runtime.base_url, llm_api_key=runtime.api_key, llm_model=runtime.alias,
                             llm_max_tokens=LONG["max_tokens"], llm_max_retries=0, llm_timeout=60)
    chat = make_chat_model(settings)
    assert chat is not None
    long = {"max_tokens": LONG["max_tokens"]}
    local = judge_model(chat.model_copy(update={"extra_body": long, "metadata": {LOCAL_MODEL: True}}))
    assert local.disable_streaming is False  # the embedded model's structured replies are streamed
    before = tokens_predicted(runtime)
    started = time.monotonic()
    with turn_deadline.scope(Deadline.after(0.4)), pytest.raises(LLMUnavailable) as caught:
        structured_invoke(DeadlineBound(local), Essay, [("user", "Write the whole book.")], "json_schema")
    assert time.monotonic() - started < 5 and "TURN_TIMEOUT" in str(caught.value)
    wait_idle(runtime, limit=10)  # not the 4000 tokens a plain request would have gone on to
    assert tokens_predicted(runtime) - before < LONG["max_tokens"] // 2


def _slot_sampling(runtime: LocalRuntime) -> dict:
    slots = httpx.get(f"{runtime.base_url.removesuffix('/v1')}/slots", timeout=5,
                      headers={"Authorization": f"Bearer {runtime.api_key}"}).json()
    params = slots[0]["params"]
    return {k: round(params[k], 2) for k in ("repeat_penalty", "repeat_last_n", "dry_multiplier",
                                              "dry_allowed_length", "dry_penalty_last_n")}


def test_the_embedded_model_samples_answers_with_the_repetition_penalties_and_the_judge_without(runtime, llm):
    """Before: llama.cpp's defaults (no repeat penalty, no DRY), and a small model looped on one
    clause to its token cap. Now an answer's request carries the penalties and llama.cpp uses them;
    the judge's (which copies quotes from the sources) carries none."""
    stream_text(llm.model_copy(update={"max_tokens": 8}), [("user", "hi")], stop_repeats=False)
    assert _slot_sampling(runtime) == {"repeat_penalty": 1.05, "repeat_last_n": 64, "dry_multiplier": 0.8,
                                       "dry_allowed_length": 3, "dry_penalty_last_n": 256}
    judge_model(llm.model_copy(update={"max_tokens": 8})).invoke([("user", "hi")])
    sampling = _slot_sampling(runtime)
    assert sampling["repeat_penalty"] == 1.0 and sampling["dry_multiplier"] == 0.0
