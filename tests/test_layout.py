"""The layout's promises, measured from the code: no import circle between modules or between the
packages of ``rag``, no module over 600 lines and no function over 100."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "rag"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every rag module and the rag modules it imports (at any depth in its body)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found.update(t for t in targets if t in modules and t != name)
        graph[name] = found
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                out.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package(module: str) -> str:
    """``rag.agent.nodes.route`` -> ``rag.agent``; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def _is_package_init(module: str) -> bool:
    return (ROOT.parent / module.replace(".", "/") / "__init__.py").exists()


def test_no_import_circle_between_modules():
    graph = _imports()
    # A package's __init__ re-exporting its own modules is not a circle of the code's design.
    graph = {m: {d for d in deps if not (_is_package_init(d) and m.startswith(d + "."))} for m, deps in graph.items()}
    assert _circles(graph) == []


def test_no_import_circle_between_packages():
    packages: dict[str, set[str]] = {}
    for module, deps in _imports().items():
        packages.setdefault(_package(module), set()).update(_package(d) for d in deps if _package(d) != _package(module))
    assert _circles(packages) == []


def test_no_module_over_600_lines_and_no_function_over_100():
    too_long: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 600:
            too_long.append(f"{path.relative_to(ROOT.parent)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 100:
                too_long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
    assert too_long == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
