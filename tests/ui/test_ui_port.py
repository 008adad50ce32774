"""`make run` on a port that is taken stops with one clear line (no "serving on", no traceback),
and `make run PORT=...` passes the port through."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest
from conftest import REPO

from rag.ui.serve import port_problem


def test_app_on_a_taken_port_says_so_in_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert port_problem("127.0.0.1", port) is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "SEARCH_", "PORT"))}
        env.update({"OLLAMA_AUTODETECT": "false", "DATA_DIR": str(tmp_path / "data"), "PORT": str(port)})
        result = subprocess.run([sys.executable, str(REPO / "app.py"), "--no-sample"], capture_output=True,
                                text=True, env=env, cwd=tmp_path, timeout=180)
    assert result.returncode != 0
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert lines[-1].startswith(f"error: cannot listen on 127.0.0.1:{port}"), result.stderr
    assert f"make run PORT={port + 1}" in lines[-1]
    assert "Traceback" not in result.stderr and "serving on" not in result.stderr
    assert port_problem("127.0.0.1", port) is None  # free again once the other server is gone
    assert port_problem("127.0.0.1", 0) is None


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_run_passes_the_port():
    dry = subprocess.run(["make", "-n", "run", "PORT=7999"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert dry.returncode == 0 and "app.py --port 7999" in dry.stdout
    plain = subprocess.run(["make", "-n", "run"], capture_output=True, text=True, cwd=REPO, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "PORT"})
    assert "--port" not in plain.stdout
