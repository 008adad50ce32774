"""Fault suite, a read-only Chroma directory (a volume mounted read-only, a copy made by another
user): the books already embedded there keep their vector search (the store is searched from a
copy), and nothing new is written to it. Real index (Chroma on disk + BM25, the hash embedder); the
reopened index runs in a child process that obeys file permissions. Root ignores them, so as root the
child keeps its user (it can still reach the clone, the interpreter and its packages wherever they
are, even under a directory closed to others) and only loses the capabilities that override
permission bits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, make_settings
from fixtures_index.books import make_epub
from fixtures_ui.live import make_index

# Without these two capabilities root is held to the permission bits of the files it owns.
DROP_DAC = "--bounding-set=-dac_override,-dac_read_search"
REOPEN = """
import json, sys
from conftest import make_settings
from fixtures_ui.live import make_index
settings = make_settings(data_dir=sys.argv[1])
index = make_index(None, settings)
try:
    vector = index.search("仙石 石猴", k=3, mode="vector")
    hybrid = index.search("仙石 石猴", k=3)
    print(json.dumps({"status": [b.status for b in index.books()], "vector": [p.source for p in vector.passages],
                      "hybrid": [p.source for p in hybrid.passages], "notes": [str(n) for n in hybrid.notes]}))
finally:
    index.close()
"""


def reopen_read_only(data_dir: Path) -> dict:
    command = [sys.executable, "-c", REOPEN, str(data_dir)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv (util-linux): root writes through read-only permissions")
        command = [setpriv, DROP_DAC, "--inh-caps=-all", *command]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}", "HOME": str(data_dir.parent)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_read_only_chroma_directory_keeps_vector_search(tmp_path: Path) -> None:
    settings = make_settings(data_dir=tmp_path / "data")
    index = make_index(tmp_path, settings)
    try:
        index.ingest(make_epub(tmp_path / "b.epub", [("第一回 石猴", "花果山顶有一块仙石，仙石迸裂，生出一个石猴。" * 30),
                                                    ("第二回 学艺", "石猴拜师学艺，学会七十二变。" * 30)], title="石猴传"),
                     background=False)
    finally:
        index.close()
    database = settings.chroma_dir / "chroma.sqlite3"
    before = database.read_bytes()
    for folder, dirs, files in os.walk(settings.chroma_dir):
        for name in [*(os.path.join(folder, n) for n in files), *(os.path.join(folder, n) for n in dirs), folder]:
            os.chmod(name, os.stat(name).st_mode & ~0o222)
    try:
        seen = reopen_read_only(settings.data_dir)
    finally:
        for folder, dirs, files in os.walk(settings.chroma_dir):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.chmod(name, os.stat(name).st_mode | 0o200)
    assert seen["status"] == ["ready"]
    # before: "Chroma store … could not be opened (… attempt to write a readonly database)"; keyword only
    assert seen["vector"] and set(seen["vector"]) == {"vector"}, seen
    assert "hybrid" in seen["hybrid"] and not seen["notes"], seen
    assert database.read_bytes() == before  # nothing was written to the store
