"""llama.cpp in this process (``xllamacpp``), serving the OpenAI-compatible API on loopback.

``LocalRuntime(model_path).start()`` loads one GGUF model and returns the base URL
(``http://127.0.0.1:PORT/v1``, a free port) that ``langchain_openai.ChatOpenAI`` talks to, with
``api_key=runtime.api_key`` and ``model=runtime.alias``. llama.cpp's own server runs in threads of
this process: chat completions, streaming, JSON-schema constrained output (``response_format``
``json_schema``, LLGuidance) and the prompt cache (a request that starts like the last one reuses
its KV cache). Nobody has to start anything else.

What was measured on this machine kind (2 cores, shared), and is built in:

- The server's constructor holds the GIL for the whole load: every other Python thread stops until
  the model is loaded. The file is therefore read once beforehand (reads release the GIL, so the
  disk part of the wait happens while the app keeps running), the warm-up run is off, and weight
  repacking is off by default (``repack=False``): with it the 1.5B Q4_K_M model took 11 s to load
  and 1.9 GB RSS, without it 3.3 s and 1.3 GB, at the same generation speed.
- ``OMP_WAIT_POLICY=PASSIVE`` is set (unless already set) before llama.cpp's OpenMP runtime loads:
  with OpenMP's busy waiting, generation under CPU contention collapses.
- llama.cpp stops generating when the client of a *streamed* reply hangs up (at its next piece),
  but not for a reply that is not streamed: a call that a turn's deadline gave up on keeps the
  model busy to its ``max_tokens``, and the next call waits behind it. Stream what may be given up.
- ``stop()`` hangs up on every client first: llama.cpp's destructor holds the GIL while it waits
  for its request handlers, and a handler waits for its client, which here needs the GIL.
- A random key guards the port (another local user, or a web page in the user's browser, cannot
  use the model) and llama.cpp's web UI is off. llama.cpp's own log (to stderr, naming the model's
  path) is off unless ``llama_log=True``.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from rag.errors import LLMError
from rag.i18n import Msg

logger = logging.getLogger(__name__)

# Before llama.cpp's OpenMP runtime (libgomp) loads, with ``xllamacpp`` in ``start()``: it reads
# the policy once. (A library loaded earlier may have loaded libgomp already; then this is late.)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

GGUF_MAGIC = b"GGUF"
#: Memory wanted on top of the file's size: compute buffers, plus the KV cache per context token.
_BASE_MARGIN = 64 * 1024 * 1024
_PER_CTX_TOKEN = 32 * 1024
_PREFETCH_CHUNK = 8 * 1024 * 1024
_MIB = 1024 * 1024

#: Runtimes that are running, held until ``stop()``: a runtime dropped while running is not
#: collected (its server's destructor must not run without ``stop()``'s hang-up), and exit stops it.
_LIVE: set[LocalRuntime] = set()


class LocalRuntimeError(LLMError):
    """The local model could not be started: a missing or broken file, too little memory, or
    llama.cpp refused it. ``msg`` has a ``local.*`` code; it names the file, never its folder."""


def available_memory() -> int | None:
    """Bytes this process can still use: the smaller of the system's available memory and the
    cgroup's limit less its usage (a container); None where neither can be read."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text(encoding="ascii").strip())
            found.append(max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def _rss_bytes() -> int | None:
    try:
        with open(f"/proc/{os.getpid()}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class LocalRuntime:
    """One GGUF model served by llama.cpp in this process, on 127.0.0.1 at a free port.

    ``threads``: CPU threads for prompt and generation; ``ctx``: the context size in tokens;
    ``alias``: the model name the API answers to; ``max_tokens``: the server's cap on a reply's
    length when a request sets none; ``repack``: let llama.cpp repack the weights for its CPU
    kernels (slower to load, more memory; see the module's notes); ``llama_log``: let llama.cpp
    write its own log to stderr (its lines name the model's path; for debugging). Thread-safe; ``stop()`` may be
    called any number of times; a stopped runtime can be started again."""

    def __init__(self, model_path: Path, *, threads: int = 2, ctx: int = 4096, alias: str = "local",
                 max_tokens: int = 2048, repack: bool = False, llama_log: bool = False) -> None:
        self.model_path = Path(model_path)
        self.threads = max(1, int(threads))
        self.ctx = max(256, int(ctx))
        self.max_tokens = int(max_tokens)
        self.repack = repack
        self.llama_log = llama_log
        self._alias = alias
        self._api_key = secrets.token_urlsafe(24)
        self._server: Any | None = None
        self._base_url: str | None = None
        self._port = 0
        self._lock = threading.RLock()
        #: Seconds the last ``start()`` took from its call to a listening server.
        self.load_seconds: float | None = None

    # ------------------------------------------------------------------ properties
    @property
    def base_url(self) -> str | None:
        """``http://127.0.0.1:PORT/v1`` while the model is served, else None."""
        return self._base_url

    @property
    def alias(self) -> str:
        """The model name to send (``ChatOpenAI(model=...)``)."""
        return self._alias

    @property
    def api_key(self) -> str:
        """The key this runtime's port asks for (``ChatOpenAI(api_key=...)``); random per runtime.
        A secret: never log it or show it."""
        return self._api_key

    @property
    def running(self) -> bool:
        return self._server is not None

    def __repr__(self) -> str:  # no key, no folder
        state = "running" if self.running else "stopped"
        return f"LocalRuntime({self.model_path.name!r}, {state})"

    # ------------------------------------------------------------------ start and stop
    def start(self, timeout: float = 120.0) -> str:
        """Load the model and serve it; the base URL. Raises ``LocalRuntimeError`` when the file is
        missing, unreadable or not GGUF, when memory is short, when llama.cpp cannot load it, or
        when the server does not answer within ``timeout`` seconds. Already running: its URL."""
        with self._lock:
            if self._server is not None and self._base_url:
                return self._base_url
            started = time.monotonic()
            name = self.model_path.name
            size = self._check_file()
            self._check_memory(size)
            try:
                import xllamacpp
            except ImportError as exc:
                raise LocalRuntimeError(Msg.of("local.no_runtime", level="error")) from exc
            self._prefetch(started + timeout)
            params = self._params(xllamacpp)
            handlers = _python_signal_handlers()
            try:
                server = xllamacpp.Server(params)  # holds the GIL until the model is loaded
            except (RuntimeError, ValueError, MemoryError) as exc:
                logger.warning("llama.cpp could not load the local model %s: %s", name, exc)
                raise LocalRuntimeError(Msg.of("local.load_failed", level="error", name=name)) from exc
            finally:
                _restore_signal_handlers(handlers)
            address = str(server.listening_address).rstrip("/")
            self._server = server
            self._port = int(address.rsplit(":", 1)[1])
            self._base_url = f"{address}/v1"
            _LIVE.add(self)
            if not self._wait_healthy(address, started + timeout):
                self.stop()
                raise LocalRuntimeError(Msg.of("local.silent_after_load", level="error", name=name,
                                               seconds=f"{timeout:g}"))
            self.load_seconds = time.monotonic() - started
            rss = _rss_bytes()
            logger.info("local model %s ready in %.1f s (%d threads, context %d, RSS %s MB)", name,
                        self.load_seconds, self.threads, self.ctx, rss // _MIB if rss else "?")
            return self._base_url

    def stop(self) -> None:
        """Stop serving and free the model and the port (the call returns once both are free).
        A request still running is cut off. Idempotent."""
        with self._lock:
            server, self._server, self._base_url = self._server, None, None
            if server is None:
                return
            _LIVE.discard(self)
            # llama.cpp's destructor runs with the GIL held and waits for every request handler; a
            # handler waits until its client hangs up, and a client in this process needs the GIL
            # to do that: a deadlock. Hang up on every client first, from the server's side.
            cut = _hang_up(self._port)
            if cut:
                logger.info("stopping the local model: %d open connection(s) cut", cut)
            del server  # the last reference: llama.cpp's destructor stops the HTTP server and the loop
            logger.info("local model %s stopped", self.model_path.name)

    def __enter__(self) -> LocalRuntime:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ helpers
    def _check_file(self) -> int:
        name = self.model_path.name
        if not self.model_path.is_file():
            raise LocalRuntimeError(Msg.of("local.model_missing", level="error", name=name))
        try:
            with self.model_path.open("rb") as fh:
                magic = fh.read(4)
            size = self.model_path.stat().st_size
        except OSError as exc:
            raise LocalRuntimeError(Msg.of("local.unreadable", level="error", name=name,
                                           reason=exc.strerror or type(exc).__name__)) from exc
        if magic != GGUF_MAGIC:
            raise LocalRuntimeError(Msg.of("local.not_gguf", level="error", name=name))
        return size

    def _check_memory(self, size: int) -> None:
        free = available_memory()
        need = size + _BASE_MARGIN + self.ctx * _PER_CTX_TOKEN
        if free is not None and need > free:
            raise LocalRuntimeError(Msg.of("local.out_of_memory", level="error", name=self.model_path.name,
                                           need_mb=need // _MIB, free_mb=free // _MIB))

    def _prefetch(self, until: float) -> None:
        """Read the file once, so that llama.cpp's load (which stops every Python thread) finds it
        in the page cache: these reads release the GIL."""
        buffer = bytearray(_PREFETCH_CHUNK)
        try:
            with self.model_path.open("rb", buffering=0) as fh:
                while fh.readinto(buffer) and time.monotonic() < until:
                    pass
        except OSError as exc:  # the load will say what is wrong; the error text would name the folder
            logger.debug("prefetching the local model failed: %s", exc.strerror or type(exc).__name__)

    def _params(self, xllamacpp: Any) -> Any:
        p = xllamacpp.CommonParams()
        p.model.path = str(self.model_path)
        p.model_alias = {self._alias}
        p.n_ctx = self.ctx
        p.n_parallel = 1  # one request at a time: all threads on it, and one slot for the prompt cache
        p.n_predict = self.max_tokens
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.hostnames = ["127.0.0.1"]
        p.port = 0  # a free port, chosen when the server binds
        p.api_keys = [self._api_key]
        p.ui = False
        p.warmup = False
        p.cache_prompt = True
        p.no_extra_bufts = not self.repack
        p.endpoint_slots = True  # GET /slots (behind the key): whether a request is still running
        p.endpoint_metrics = True  # GET /metrics (behind the key): tokens predicted, for benches and tests
        p.verbosity = 3 if self.llama_log else 0
        return p

    def _wait_healthy(self, address: str, until: float) -> bool:
        while True:
            try:
                if httpx.get(f"{address}/health", timeout=2.0).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            if time.monotonic() >= until:
                return False
            time.sleep(0.05)

    def busy(self) -> bool:
        """Whether the model is working on a request now (False when stopped)."""
        base = self._base_url
        if not base:
            return False
        try:
            resp = httpx.get(f"{base.removesuffix('/v1')}/slots", timeout=2.0,
                             headers={"Authorization": f"Bearer {self._api_key}"})
            resp.raise_for_status()
            return any(slot.get("is_processing") for slot in resp.json())
        except (httpx.HTTPError, ValueError, AttributeError):
            return False


def _server_socket_inodes(port: int) -> set[int]:
    """Inodes of the connected sockets whose local end is 127.0.0.1:``port`` (the server's side of
    each client connection), from /proc/net/tcp; empty where there is no /proc."""
    inodes: set[int] = set()
    try:
        lines = Path("/proc/net/tcp").read_text(encoding="ascii").splitlines()[1:]
    except OSError:
        return inodes
    for line in lines:
        fields = line.split()
        if len(fields) < 10:
            continue
        local, state, inode = fields[1], fields[3], fields[9]
        if local.endswith(f":{port:04X}") and state != "0A" and inode.isdigit():  # 0A: listening
            inodes.add(int(inode))
    return inodes


def _hang_up(port: int) -> int:
    """Shut down (not close: the server still owns them) this process's server-side sockets of the
    connections to ``port``; their clients see the connection end. How many were cut."""
    if not port:
        return 0
    inodes = _server_socket_inodes(port)
    if not inodes:
        return 0
    cut = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for name in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if not (target.startswith("socket:[") and int(target[8:-1]) in inodes):
            continue
        try:
            dup = os.dup(int(name))
        except OSError:
            continue
        try:
            if os.fstat(dup).st_ino in inodes:  # still the same socket
                sock = socket.socket(fileno=dup)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                    cut += 1
                except OSError:
                    pass
                finally:
                    sock.close()  # closes the duplicate only
                continue
        except OSError:
            pass
        os.close(dup)
    return cut


def _python_signal_handlers() -> dict[int, Any]:
    """Python's SIGINT/SIGTERM handlers, to put back if llama.cpp's server installs its own (some
    builds do: Ctrl-C would then stop the model but not the app). Only the main thread can."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(handlers: dict[int, Any]) -> None:
    for sig, handler in handlers.items():
        if handler is not None:
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError):
                logger.debug("could not restore the handler of signal %s", sig)


@atexit.register
def _stop_all() -> None:
    """Stop every runtime still running when the interpreter exits (llama.cpp's threads then end
    before the interpreter does)."""
    for runtime in list(_LIVE):
        try:
            runtime.stop()
        except Exception:  # noqa: BLE001 - exiting anyway
            logger.debug("stopping a local runtime at exit failed", exc_info=True)
