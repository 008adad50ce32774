"""`python app.py` with a bad configuration stops with a clear message, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO


@pytest.mark.parametrize("env,expected", [
    ({"SEARCH_PROVIDER": "bocha"}, "BOCHA_API_KEY is not set"),
    ({"MAX_WEB_ROUNDS": "lots"}, "MAX_WEB_ROUNDS"),
    ({"SEARCH_PROVIDER": "altavista"}, "altavista"),
])
def test_app_refuses_bad_config_clearly(tmp_path, env, expected):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "SEARCH_", "BOCHA_", "MAX_WEB"))}
    base.update({"OLLAMA_AUTODETECT": "false", "DATA_DIR": str(tmp_path / "data"), **env})
    result = subprocess.run([sys.executable, str(REPO / "app.py"), "--no-sample", "--port", "0"],
                            capture_output=True, text=True, env=base, cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    assert "configuration error" in result.stderr and expected in result.stderr
    assert "Traceback" not in result.stderr
