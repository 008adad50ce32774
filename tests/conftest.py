"""Shared test helpers: settings isolated from the developer's env and .env, scripted models, and
the two things a fresh clone may lack: the public-domain corpus (tests marked ``corpus``) and a
Chromium (tests marked ``browser``). Without them those tests skip with one reason;
``REQUIRE_CORPUS=1`` / ``REQUIRE_BROWSER=1`` (set by CI) make the skip a failure."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rag.eval.cases import CORPUS_DIR_ENV, default_corpus_dir

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if os.environ.get(CORPUS_DIR_ENV, "").strip():  # tests run in tmp directories: make it absolute
    os.environ[CORPUS_DIR_ENV] = str(Path(os.environ[CORPUS_DIR_ENV].strip()).expanduser().resolve())

REPO = Path(__file__).resolve().parents[1]
CORPUS = default_corpus_dir()
CORPUS_MISSING = "put the corpus at ../shared/corpus or set EVAL_CORPUS_DIR"

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BROWSER_MISSING = ("no Chromium: set CHROMIUM_PATH, or install one with `.venv/bin/python -m playwright "
                   "install chromium` (Debian: `sudo apt-get install chromium`)")


def corpus_present() -> bool:
    return (CORPUS / "xiyouji.txt").is_file()


@functools.cache
def find_chromium() -> str | None:
    """$CHROMIUM_PATH, else Debian's /usr/bin/chromium, else the Chromium Playwright installed (under
    ~/.cache/ms-playwright or $PLAYWRIGHT_BROWSERS_PATH, on Linux and macOS); None if there is none."""
    explicit = os.environ.get("CHROMIUM_PATH", "").strip()
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            path = pw.chromium.executable_path
    except Exception:  # noqa: BLE001 - no driver, no browser: the same answer
        return None
    return path if path and os.access(path, os.X_OK) else None


def launch_chromium(pw: Any) -> Any:
    """Headless Chromium for a ``browser`` test, from ``find_chromium()``."""
    path = find_chromium()
    if path is None:
        raise RuntimeError(BROWSER_MISSING)
    return pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)


def _missing(require_var: str, reason: str, failure: str) -> None:
    if os.environ.get(require_var, "").strip() == "1":
        pytest.fail(f"{require_var}=1 but {failure}", pytrace=False)
    pytest.skip(reason)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or with REQUIRE_*=1 fail) a ``corpus`` test without the corpus, a ``browser`` test
    without a Chromium. A setup hook, so it runs before any fixture of the test, module-scoped ones
    included."""
    if item.get_closest_marker("corpus") and not corpus_present():
        _missing("REQUIRE_CORPUS", CORPUS_MISSING, f"there is no corpus at {CORPUS}: {CORPUS_MISSING}")
    if item.get_closest_marker("browser") and find_chromium() is None:
        _missing("REQUIRE_BROWSER", BROWSER_MISSING, BROWSER_MISSING)


_ENV_PREFIXES = ("LLM_", "SEARCH_", "BOCHA_", "TAVILY_", "SEARXNG_", "EMBEDDING_", "CHROMA_", "RETRIEVAL_",
                 "MAX_WEB_ROUNDS", "DATA_DIR", "OLLAMA_", "EVAL_LOG", "ACTIVE_BOOK", "LOCAL_", "HF_", "MCP_")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's .env or keys, or finds a local Ollama."""
    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_AUTODETECT", "false")
    # Nothing configured means the embedded model (LLM_PROVIDER=auto): a test never downloads one;
    # this file does not exist, so the app and the CLI say so at once and stay retrieval-only.
    monkeypatch.setenv("LOCAL_MODEL_PATH", str(tmp_path / "no-model.gguf"))
    monkeypatch.chdir(tmp_path)  # so a stray .env in the repo is not read


def make_settings(**overrides: Any):
    from rag.config import Settings

    return Settings(_env_file=None, **overrides)


def responder(route: str | dict | Exception | list = "complex", evaluations: list[Any] | None = None,
              answer: str | Exception = "answer [1]", rewrite: str = "rewritten question") -> Callable[..., Any]:
    """A ScriptedChatModel responder that answers by schema: RouteDecision, Evaluation, text."""
    evals = list(evaluations or [])
    routes = list(route) if isinstance(route, list) else None

    def reply(messages: list[Any], *, schema: str | None) -> Any:
        if schema == "RouteDecision":
            r = routes.pop(0) if routes is not None else route
            if isinstance(r, (dict, Exception)) or (isinstance(r, str) and r not in ("simple", "complex")):
                return r
            return {"reason": f"scripted {r}", "strategy": r}
        if schema in ("Evaluation", "EvidenceJudgement"):
            if not evals:
                raise AssertionError("unexpected extra evaluation call")
            return judge_reply(schema, evals.pop(0), messages)
        system = str(messages[0].content) if messages else ""
        if "standalone question" in system:
            return rewrite
        return answer

    return reply


_SOURCE_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def judge_prompt(contents: list[str]) -> str:
    """The judge's real question and sources: the last message with a QUESTION (few-shot turns come
    before it, a retry's request after it)."""
    return next((c for c in reversed(contents) if "QUESTION:" in c), contents[-1] if contents else "")


def judge_reply(schema: str | None, verdict: Any, messages: list[Any]) -> Any:
    """A scripted verdict as the schema asks for it: evidence mode gets it through ``evidence_for``
    from the judge's real prompt, verdict mode as it is."""
    if schema == "EvidenceJudgement":
        return evidence_for(verdict, judge_prompt([str(m.content) for m in messages]))
    return verdict


def evidence_for(verdict: Any, prompt: str) -> Any:
    """A scripted verdict (``ev(...)``) as the evidence-mode judge would give it, from the real
    prompt: "enough" quotes the start of the first quotable source verbatim and gives it as the answer
    to a part made of the question (its years and titles aside) and the quote (so code verifies it),
    "not enough" names each missing point as not found. Anything else (errors, text, a dict that
    already has parts) is passed through."""
    if not isinstance(verdict, dict) or "parts" in verdict or "enough" not in verdict:
        return verdict
    from rag.checks import MIN_QUOTE_WEIGHT, content_weight, normalize

    parts: list[dict[str, Any]] = []
    if verdict["enough"]:
        context = prompt.split("SOURCES", 1)[-1]
        for m in _SOURCE_LINE.finditer(context):
            body = context[m.end():].lstrip("\n").split("\n", 1)[0]
            for text in (body, m.group(2)):  # a book passage's first line, else a web result's title
                quote = text.strip()[:24]
                if quote and not quote.startswith(("URL:", "Site:", "<<<", "[")) \
                        and content_weight(normalize(quote).text) >= MIN_QUOTE_WEIGHT:
                    question = prompt.split("QUESTION:", 1)[-1].split("\n", 1)[0].strip()
                    # the question's words without its own facts (a year, a title the book has not: the
                    # parts code checks against the sources), and the quote
                    asked = re.sub(r"\d+年?|[《“][^》”]*[》”]", " ", question)
                    parts = [{"part": f"{asked} {quote}".strip(), "answer": quote, "source": int(m.group(1)),
                              "quote": quote}]
                    break
            if parts:
                break
    else:
        parts = [{"part": m, "answer": "not found", "source": None, "quote": "not found"}
                 for m in (verdict.get("missing") or ["scripted part"])]
    return {"reason": verdict.get("reason", "scripted"), "parts": parts, "enough": verdict["enough"],
            "web_query": verdict.get("web_query"), "confidence": verdict.get("confidence", 0.5)}


def ev(enough: bool, missing: list[str] | None = None, web_query: str | None = None,
       confidence: float = 0.8, reason: str = "scripted") -> dict[str, Any]:
    return {"reason": reason, "enough": enough, "missing": missing or [], "web_query": web_query,
            "confidence": confidence}
