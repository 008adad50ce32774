"""Start the app: settings, logging, book index, sample book, launch. Used by ``app.py``."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SAMPLE_BOOK = Path(__file__).resolve().parents[2] / "assets" / "xiyouji-guide.epub"
#: Uploads that never reach the ingest handler are deleted from Gradio's cache after this long.
UPLOAD_CACHE_SECONDS = 3600
#: Where Gradio serves MCP with MCP_SERVER=true (under the app's URL).
MCP_PATH = "/gradio_api/mcp/"
MCP_SSE_PATH = "/gradio_api/mcp/sse"


def server_host(settings_host: str) -> str:
    """0.0.0.0 on a Hugging Face Space (SPACE_ID is set there), else the configured host."""
    return "0.0.0.0" if os.environ.get("SPACE_ID") else settings_host


def upload_limit_bytes(settings: Any) -> int:
    """The largest upload Gradio accepts: MAX_BOOK_MB, the same limit the book loader applies."""
    return int(float(settings.max_book_mb) * 1024 * 1024)


def port_problem(host: str, port: int) -> str | None:
    """Why the app cannot listen on ``host:port`` (in one line, with what to do), or None."""
    if not port:
        return None
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return (f"cannot listen on {host}:{port} ({reason}): another server probably uses the port; stop it, "
                    f"or choose another port: make run PORT={port + 1} (or PORT={port + 1} python app.py)")
    return None


def check_data_dir(data_dir: Path) -> None:
    """Create DATA_DIR and prove it is a writable directory; raises OSError otherwise."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=data_dir, prefix=".write-test-"):
        pass


def launch(demo: Any, settings: Any, *, host: str, port: int, **options: Any) -> Any:
    """Queue and launch ``demo`` the way the app is served: uploads capped at MAX_BOOK_MB (larger
    ones are refused with HTTP 413 before they are kept), stale uploads deleted hourly, and with
    MCP_SERVER=true the script API served as MCP tools (``mcp_server`` is always passed, so
    Gradio's own GRADIO_MCP_SERVER variable cannot turn it on behind the settings' back).
    ``options`` go to ``Blocks.launch`` (tests pass ``prevent_thread_lock``)."""
    # uvicorn believes X-Forwarded-For from 127.0.0.1 unless told otherwise: then anyone on this machine
    # (or a loopback call that carries a client's headers) picks the address a search budget is counted
    # under. Only the proxies FORWARDED_ALLOW_IPS names are believed (e.g. 127.0.0.1 behind a local nginx).
    os.environ.setdefault("FORWARDED_ALLOW_IPS", "")
    demo.queue(default_concurrency_limit=4, max_size=64)
    if getattr(demo, "delete_cache", None) is None:
        demo.delete_cache = (UPLOAD_CACHE_SECONDS, UPLOAD_CACHE_SECONDS)
    options = {"show_error": False, "footer_links": ["api"], "mcp_server": bool(getattr(settings, "mcp_server", False)),
               **options}
    if not options["mcp_server"]:
        return demo.launch(server_name=host, server_port=port, max_file_size=upload_limit_bytes(settings), **options)
    # The MCP server object exists once the app is built: adjust it, then block as launch would have.
    block = not options.pop("prevent_thread_lock", False)
    app = demo.launch(server_name=host, server_port=port, max_file_size=upload_limit_bytes(settings),
                      prevent_thread_lock=True, **options)
    prepare_mcp(demo)
    if block:
        demo.block_thread()
    return app


def prepare_mcp(demo: Any) -> None:
    """Adjust the MCP server (``rag.ui.mcp``) and log where its tools are, or why it did not start
    (Gradio only prints its error)."""
    if getattr(demo, "mcp_server", False):
        from rag.ui.mcp import adapt_mcp_server

        adapt_mcp_server(demo)
        logger.info("MCP tools ask and ask_json served at %s (streamable HTTP) and %s (SSE)", MCP_PATH, MCP_SSE_PATH)
    else:
        logger.error("MCP_SERVER=true but the MCP server did not start: %s",
                     getattr(demo, "mcp_error", None) or "unknown reason")


#: An owner no visitor has: the books it sees are the ones every visitor sees.
NEW_VISITOR = "(new visitor)"


def sample_wanted(index: Any, path: Path) -> bool:
    """Whether the sample book should be indexed: no book is every visitor's (an empty library, or
    only visitors' own books), or the sample is there but no longer everyone's (its manifest was
    lost and rebuilt from the chunks, so whose it was is unknown)."""
    seen = {b.id for b in index.books(owner=NEW_VISITOR)}
    if not seen:
        return True
    from rag.index.catalog import book_id_of
    from rag.index.loaders import load_book

    sample = book_id_of(load_book(path))
    return sample not in seen and sample in {b.id for b in index.books()}


def start_sample_ingest(index: Any, path: Path = SAMPLE_BOOK) -> threading.Thread | None:
    """Index the sample book in a background thread when no visitor would see it (``sample_wanted``).
    Never blocks."""
    if index is None or not path.is_file():
        return None
    try:
        if not sample_wanted(index, path):
            return None
    except Exception as exc:  # noqa: BLE001
        logger.warning("could not list books: %s", exc)
        return None

    def run() -> None:
        try:
            info = index.ingest(str(path), background=True)
            logger.info("sample book indexed: %s", getattr(info, "title", path.name))
        except Exception as exc:  # noqa: BLE001 - the app works without it
            logger.warning("indexing the sample book failed: %s", exc)

    thread = threading.Thread(target=run, name="sample-book-ingest", daemon=True)
    thread.start()
    return thread


def local_model(settings: Any) -> Any | None:
    """The embedded model when the settings use it (``rag.llm.provider_of`` "local"), not started
    yet: ``build_app`` starts it in the background (the page comes at once, retrieval-only until
    the model is ready)."""
    from rag.llm import provider_of

    try:
        if provider_of(settings) != "local":
            return None
    except Exception as exc:  # noqa: BLE001 - a ConfigError is reported when the deps are built
        logger.debug("no embedded model: %s", exc)
        return None
    from rag.local import shared_model

    return shared_model(settings)


def open_book_index(settings: Any) -> Any | None:
    try:
        from rag.index import open_index
    except ImportError as exc:
        logger.warning("book index unavailable (%s); the book panel is disabled", exc)
        return None
    try:
        return open_index(settings)
    except Exception as exc:  # noqa: BLE001 - the chat still works in a limited way
        logger.error("opening the book index failed: %s", exc)
        return None


def main(argv: list[str] | None = None) -> None:
    """``python app.py``: serve on 127.0.0.1:7860 (0.0.0.0:7860 on a Space)."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = argparse.ArgumentParser(description="Enough RAG web UI")
    parser.add_argument("--host", default=None, help="interface to listen on (default: settings / 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: settings / 7860)")
    parser.add_argument("--no-sample", action="store_true", help="do not index the sample book on first start")
    args = parser.parse_args(argv)

    from rag.config import load_settings
    from rag.errors import ConfigError, filesystem_problem
    from rag.logs import setup_logging

    try:
        settings = load_settings()
    except ConfigError as exc:
        sys.exit(f"configuration error: {exc}")
    setup_logging(settings)
    try:
        check_data_dir(settings.data_dir)
    except OSError as exc:  # not a directory, not writable, disk full: one line, no traceback
        sys.exit(f"configuration error: {filesystem_problem(exc, settings.data_dir)}")

    from rag.agent.wiring import make_deps
    from rag.ui.blocks import build_app

    index = open_book_index(settings)
    local = local_model(settings)
    build_deps = functools.partial(make_deps, local=local) if local is not None else make_deps
    try:
        deps = build_deps(settings, index=index)
    except ConfigError as exc:  # e.g. SEARCH_PROVIDER=bocha without BOCHA_API_KEY
        sys.exit(f"configuration error: {exc}")
    host = args.host or server_host(settings.host)
    port = args.port or settings.port
    problem = port_problem(host, port)  # before the app starts: one line, no traceback
    if problem:
        if index is not None:
            index.close()
        sys.exit(f"error: {problem}")
    demo = build_app(deps, index=index, make_deps=build_deps, local=local)
    if index is not None:
        try:
            index.resume_embedding(background=True)  # finish what a previous run left half-embedded
        except Exception as exc:  # noqa: BLE001
            logger.warning("could not resume embedding: %s", exc)
    if not args.no_sample:
        start_sample_ingest(index)
    logger.info("serving on http://%s:%d (mode: %s, web: %s)", host, port, deps.mode,
                "on" if deps.web_enabled else "off")
    try:
        launch(demo, settings, host=host, port=port)
    except OSError as exc:  # the port was taken in between, or the host is not an address of this machine
        sys.exit(f"error: cannot listen on {host}:{port} ({exc.strerror or exc}); choose another port: "
                 f"make run PORT={port + 1}")
