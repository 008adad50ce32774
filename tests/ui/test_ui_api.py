"""The script API (issue 13, item 15) on the live app (rag.ui.serve.launch on a loopback port, the
real graph with the scripted model and search): two public endpoints with English parameter
names, ``/ask`` streaming the answer text and ``/ask_json`` returning everything about it; the
page's own events hidden; and README's gradio_client example, run as written against the app."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from conftest import REPO, make_settings
from fixtures_ui.live import (
    ANSWER,
    PASSAGES,
    QUESTION,
    WEB,
    SlowScriptedChatModel,
    scripted_responder,
    served_app,
)
from gradio_client import Client

from rag.agent.deps import Deps
from rag.testing.fakes import FakeRetriever, FakeWebSearch
from rag.ui.blocks import build_app


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api")
    settings = make_settings(search_provider="fake", max_web_rounds=2, llm_model="scripted-fake",
                             data_dir=tmp / "data")
    model = SlowScriptedChatModel(responder=scripted_responder(), delay_s=0.02)
    deps = Deps(settings=settings, llm=model, retriever=FakeRetriever(PASSAGES), web_search=FakeWebSearch(WEB))
    demo = build_app(deps)
    with served_app(demo, settings) as url:
        yield f"{url}/"


def test_only_the_two_public_endpoints_are_documented(live):
    info = Client(live, verbose=False).view_api(print_info=False, return_format="dict")
    assert set(info["named_endpoints"]) == {"/ask", "/ask_json"}
    assert info["unnamed_endpoints"] == {}
    for name in ("/ask", "/ask_json"):
        params = [p["parameter_name"] for p in info["named_endpoints"][name]["parameters"]]
        assert params == ["question", "book", "chapter_from", "chapter_to", "read_up_to", "allow_web_spoilers"]


def test_ask_streams_the_answer_text(live):
    client = Client(live, verbose=False)
    job = client.submit(QUESTION, api_name="/ask")
    texts = list(job)
    assert texts[-1] == ANSWER
    assert len(texts) >= 3 and all(ANSWER.startswith(x) for x in texts)  # it grew, and is plain text
    assert "<a" not in texts[-1]


def test_ask_json_returns_everything_about_the_answer(live):
    result = Client(live, verbose=False).predict(QUESTION, api_name="/ask_json")
    assert result["status"] == "done" and result["answer"] == ANSWER and result["mode"] == "full"
    assert [e["enough"] for e in result["evaluations"]] == [False, True]
    assert [p["status"] for p in result["evaluations"][1]["parts"]] == ["verified"]
    assert result["evaluations"][1]["model_enough"] is True and result["evaluations"][1]["mode"] == "evidence"
    assert [p["n"] for p in result["passages"]] == [1, 2] and result["passages"][0]["retriever"] == "hybrid"
    assert [w["url"] for w in result["web_sources"]][:2] == [WEB[0].url, WEB[1].url]
    assert [c["status"] for c in result["sentence_checks"]] == ["supported", "supported", "unsupported", "uncited"]
    assert [t["node"] for t in result["trace"]][-1] == "verify_answer"


def test_the_scope_reaches_run_turn_when_it_takes_it(live, monkeypatch):
    import rag.agent.events

    seen: list[dict] = []
    original = rag.agent.events.run_turn

    def run_turn(graph, question, *, thread_id, book_id=None, scope=None):
        seen.append({"chapters": scope.chapters, "read_up_to": scope.read_up_to,
                     "allow_web_spoilers": scope.allow_web_spoilers})
        return original(graph, question, thread_id=thread_id, book_id=book_id)

    monkeypatch.setattr(rag.agent.events, "run_turn", run_turn)
    client = Client(live, verbose=False)
    client.predict(QUESTION, "", 5, 3, 4, True, api_name="/ask_json")
    client.predict(QUESTION, api_name="/ask_json")
    assert seen == [{"chapters": (3, 5), "read_up_to": 4, "allow_web_spoilers": True},
                    {"chapters": None, "read_up_to": None, "allow_web_spoilers": False}]


def test_a_bad_question_is_a_clear_error(live):
    client = Client(live, verbose=False)
    with pytest.raises(Exception, match="the question is empty"):
        client.predict("  ", api_name="/ask_json")
    with pytest.raises(Exception, match="no book index"):
        client.predict(QUESTION, "西游记", api_name="/ask_json")


def test_the_readme_example_runs_against_the_app(live):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Script API", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 'Client("http://127.0.0.1:7860/")' in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("http://127.0.0.1:7860/", live), "README.md", "exec"), {})  # noqa: S102
    lines = [line for line in out.getvalue().splitlines() if not line.startswith("Loaded as API")]
    assert lines[0] == f"full {ANSWER}"
    assert lines[1:5] == [f"{s} {t}" for s, t in zip(
        ["supported", "supported", "unsupported", "uncited"], re.findall(r"[^。]+。", ANSWER), strict=True)]
    assert lines[-1] == f"{len(ANSWER)} characters so far" and len(lines) > 6  # streamed in several steps


def test_scripts_see_only_shared_books_when_the_library_is_private():
    from rag.ui.api import ScriptApi

    class Library:
        def __init__(self, owner=None):
            self.owner = owner
            self.asked: list = []

        def for_owner(self, owner):
            return Library(owner)

        def find_book(self, name):
            return None if self.owner else type("Info", (), {"id": "own-book"})()

        def books(self):
            return []

    graphs: list = []
    api = ScriptApi(lambda owner: graphs.append(owner) or object(), Library(), owner=lambda: "script-1")
    with pytest.raises(Exception, match="no book matches"):
        next(api.turns(QUESTION, "own-book"))  # the view of "script-1" does not find it
    shared = ScriptApi(lambda owner: graphs.append(owner), Library())
    assert shared._book_id("own-book", shared._library(None)) == "own-book"


def test_ask_json_has_a_typed_result_that_names_every_field(live):
    """Issue 25, item 9: ``view_api()`` (and MCP clients) see ``/ask_json``'s fields, not "Any",
    and the JSON returned is exactly what the type says, key by key."""
    from typing import get_args, get_origin, get_type_hints, is_typeddict

    from pydantic import TypeAdapter

    from rag.ui.api import AskResult

    client = Client(live, verbose=False)
    info = client.view_api(print_info=False, return_format="dict")
    (returned,) = info["named_endpoints"]["/ask_json"]["returns"]
    schema = returned["type"]
    assert returned["python_type"]["type"] != "Any"
    assert list(schema["properties"]) == list(get_type_hints(AskResult))
    assert schema["properties"]["passages"]["items"]["properties"]["retriever"] == {"type": "string"}
    assert "enough" in schema["properties"]["evaluations"]["items"]["properties"]

    result = client.predict(QUESTION, api_name="/ask_json")
    TypeAdapter(AskResult).validate_python(result)

    def same_keys(value, hint, where="result"):
        if is_typeddict(hint):
            assert set(value) == set(get_type_hints(hint)), where
            for key, sub in get_type_hints(hint).items():
                same_keys(value[key], sub, f"{where}.{key}")
        elif get_origin(hint) is list:
            for i, item in enumerate(value):
                same_keys(item, get_args(hint)[0], f"{where}[{i}]")

    same_keys(result, AskResult)
    assert result["passages"] and result["evaluations"][1]["parts"] and result["sentence_checks"]
