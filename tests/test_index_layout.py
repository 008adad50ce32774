"""The book index's modules: none imports another that (directly or not) imports it back, and none
is over 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

INDEX = Path(__file__).resolve().parent.parent / "rag" / "index"


def _imports() -> dict[str, set[str]]:
    modules = {f"rag.index.{f.stem}": f for f in INDEX.glob("*.py") if f.stem != "__init__"}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            else:
                continue
            graph[name] |= {m for m in found if m in modules and m != name}
    return graph


def test_no_module_of_the_index_imports_itself_back() -> None:
    graph = _imports()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
        return False

    assert [m for m in graph if reaches(m, m)] == []
    assert "rag.index.store" not in graph["rag.index.library"]


def test_no_module_of_the_index_is_over_600_lines() -> None:
    sizes = {f.name: f.read_text(encoding="utf-8").count("\n") for f in INDEX.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 600} == {}
