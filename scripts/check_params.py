"""Functions with too many parameters: every function and method under the given folders (default
``rag``) whose parameters, ``self``/``cls`` not counted and ``*args``/``**kwargs`` counted as one
each, number more than ``--max`` (default 7). Prints ``count path:line name`` for each, most first;
exits 1 when there is any. A long parameter list is a sign that values belong together in one
object (a configuration, a request, a record).

    python scripts/check_params.py [--max 7] [FOLDER ...]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

MAX_PARAMS = 7


def count_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg not in ("self", "cls")]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def too_many(folders: list[Path], most: int = MAX_PARAMS) -> list[tuple[int, str, str]]:
    """(count, "path:line", name) of every function over ``most`` parameters, most first."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and count_params(node) > most:
                    found.append((count_params(node), f"{path.as_posix()}:{node.lineno}", node.name))
    return sorted(found, key=lambda f: (-f[0], f[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[Path("rag")])
    parser.add_argument("--max", type=int, default=MAX_PARAMS)
    args = parser.parse_args(argv)
    found = too_many(args.folders, args.max)
    for count, where, name in found:
        print(f"{count} {where} {name}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
