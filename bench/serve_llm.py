"""Serve a GGUF model on loopback with xllamacpp (llama.cpp's own server, in-process) for measuring.

    OMP_WAIT_POLICY=PASSIVE nice -n 5 python bench/serve_llm.py --model /path/to/qwen1.5b.gguf --port 8023

The OpenAI-compatible API is then at http://127.0.0.1:PORT/v1 (model name: --alias). Runs until killed.
Not a project dependency: ``pip install xllamacpp`` (see bench/README.md, "The local 1.5B model").
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading

logger = logging.getLogger("serve_llm")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--port", type=int, default=8023)
    parser.add_argument("--alias", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--n-predict", type=int, default=2048)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp  # type: ignore[import-not-found]

    p = xllamacpp.CommonParams()
    p.model.path = args.model
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.model_alias = {args.alias}
    p.n_predict = args.n_predict
    server = xllamacpp.Server(p)
    logger.info("listening on %s (model %s)", server.listening_address, args.alias)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
