"""What every model-measuring ``rag eval`` command shares: the settings with the command line's
overrides, the model, the replay or recording server, and where reports go."""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from pydantic import SecretStr

from rag.config import Settings
from rag.errors import RagError

METHODS = ("auto", "function_calling", "json_mode", "json_schema")


def eval_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    update: dict[str, Any] = {}
    if getattr(args, "model", None):
        update["llm_model"] = args.model
    if getattr(args, "method", None):
        update["llm_structured_method"] = args.method
    return settings.model_copy(update=update) if update else settings


def make_llm(settings: Settings, err: TextIO) -> Any | None:
    from rag.llm import make_chat_model

    llm = make_chat_model(settings)
    if llm is None:
        print("error: no language model is configured, so there is nothing to measure. Set LLM_BASE_URL "
              "(and LLM_API_KEY, LLM_MODEL) or start Ollama, e.g. LLM_BASE_URL=http://127.0.0.1:8080/v1", file=err)
    return llm


def prepare(args: argparse.Namespace, settings: Settings, llm: Any | None, err: TextIO,
             load: Callable[[], list[Any]], stack: ExitStack | None = None) -> tuple[list[Any], Settings, Any] | int:
    """What every model-measuring command starts with: the cases (``load``), the settings with the
    command line's overrides, and the model. Returns an exit code instead when one is missing.
    With ``--replay FILE`` the model is a loopback server answering from that fixture; with
    ``--record FILE`` a loopback proxy to the configured endpoint that records every reply (both
    entered on ``stack``, so they stop when the command ends)."""
    try:
        cases = load()
    except RagError as exc:
        print(f"error: {exc}", file=err)
        return 1
    settings = eval_settings(args, settings)
    if stack is not None and (getattr(args, "replay", None) or getattr(args, "record", None)):
        try:
            settings = reply_server(args, settings, cases, stack)
        except (RagError, OSError) as exc:
            print(f"error: {exc}", file=err)
            return 1
    llm = llm if llm is not None else make_llm(settings, err)
    if llm is None:
        return 2
    quiet_http_logs()
    return cases, settings, llm


def reply_server(args: argparse.Namespace, settings: Settings, cases: list[Any], stack: ExitStack) -> Settings:
    """Start the replay or recording server for ``cases`` and point the settings' model at it."""
    from rag.eval.replay import RecordingServer, ReplayServer

    if args.replay:
        if not Path(args.replay).is_file():
            raise RagError(f"reply fixture not found: {args.replay}")
        server: Any = stack.enter_context(ReplayServer(args.replay, cases, getattr(args, "missed", None)))
        args.reply_server = server
        return settings.model_copy(update={"llm_base_url": server.base_url, "llm_api_key": SecretStr("replay"),
                                           "llm_model": f"replay:{Path(args.replay).stem}", "llm_max_retries": 0})
    if not settings.llm_base_url:
        raise RagError("--record needs the endpoint to record from: set LLM_BASE_URL (and LLM_MODEL)")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
    header = [f"replies recorded by `rag eval {args.eval_command} --record` from model {settings.llm_model} "
              f"(method {settings.llm_structured_method}) on {time.strftime('%Y-%m-%d')}"]
    server = stack.enter_context(RecordingServer(args.record, cases, upstream=settings.llm_base_url, api_key=key,
                                                 header=header, timeout=max(settings.llm_timeout, 60.0)))
    args.reply_server = server
    return settings.model_copy(update={"llm_base_url": server.base_url})


def report_misses(args: argparse.Namespace, err: TextIO) -> None:
    server = getattr(args, "reply_server", None)
    if server is not None and server.misses:
        print(f"warning: {len(server.misses)} request(s) had no recorded reply, e.g. {server.misses[0]}", file=err)


def quiet_http_logs() -> None:
    """One INFO line per HTTP request would drown the per-case progress lines."""
    for name in ("httpx", "httpx2", "httpcore", "openai"):
        logging.getLogger(name).setLevel(logging.WARNING)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "model"


def report_path(args: argparse.Namespace, settings: Settings, command: str, model: str, tag: str) -> Path:
    if getattr(args, "report", None):
        return Path(args.report)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return settings.data_dir / "eval" / f"{command}-{slug(model)}-{tag}-{stamp}.json"


def write_report(path: Path, report: dict[str, Any], out: TextIO) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"report: {path}", file=out)


def model_arguments(p: argparse.ArgumentParser, replay_help: str, record_help: str) -> None:
    """The options of a command that asks a model: which one (``--model``, ``--method``), and its replies
    replayed from or recorded to a fixture, with the prompts a fixture lacks written out (``--missed``)."""
    p.add_argument("--model", help="model name (overrides LLM_MODEL)")
    p.add_argument("--method", choices=METHODS, help="structured-output method (overrides LLM_STRUCTURED_METHOD)")
    replies = p.add_mutually_exclusive_group()
    replies.add_argument("--replay", metavar="FILE", help=replay_help)
    replies.add_argument("--record", metavar="FILE", help=record_help)
    p.add_argument("--missed", metavar="FILE", help="with --replay: write the prompts of the requests the "
                                                     "fixture has no reply for to FILE (they hold book text)")
