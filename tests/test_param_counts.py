"""No function in ``rag/`` takes more than seven parameters (``scripts/check_params.py``): values
that travel together travel as one object (``TurnConfig``, ``JudgeConfig``, ``Scope``,
``SettingsForm``, ``Banner``, ``HttpOptions``, ``RrfOptions``, a retrieval ``Request``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from conftest import REPO


def _check_params():
    spec = importlib.util.spec_from_file_location("check_params", REPO / "scripts" / "check_params.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_function_in_rag_takes_more_than_seven_parameters() -> None:
    found = _check_params().too_many([REPO / "rag"])
    over = [f"{count} {where.removeprefix(REPO.as_posix() + '/')} {name}" for count, where, name in found]
    assert over == [], f"functions over 7 parameters: {over}"


def test_the_count_leaves_self_out_and_counts_star_args(tmp_path) -> None:
    (tmp_path / "m.py").write_text(
        "class A:\n"
        "    def ok(self, a, b, c, d, e, f, g): ...\n"
        "def over(a, b, c, d, e, f, *args, **kwargs): ...\n"
        "def kw(a, *, b, c, d, e, f, g, h): ...\n", encoding="utf-8")
    found = _check_params().too_many([tmp_path])
    assert [(count, name) for count, _, name in found] == [(8, "over"), (8, "kw")]


def test_the_script_exits_nonzero_on_a_long_signature(tmp_path) -> None:
    (tmp_path / "m.py").write_text("def f(a, b, c, d, e, f, g, h): ...\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "check_params.py"), str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1 and " f" in done.stdout
    (tmp_path / "m.py").write_text("def f(a, b, c, d, e, f, g): ...\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "check_params.py"), str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0
