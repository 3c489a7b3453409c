"""The library's modules import one another without a circle (ADR 0063).

The graph is read from the source with `ast`: every `import` and `from … import`, at module level and
inside functions alike (a function-level import is a deferred edge, not a missing one: it still makes
the two modules one unit to understand and change). Imports under `if TYPE_CHECKING:` are left out:
they never run, and are how a module names a type without depending on its module."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / "layers" / "common" / "python"


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` under `root`, by dotted name (a package by its own name)."""
    out = {}
    for path in (root / package).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST, here: str, is_package: bool) -> list[str]:
    """The dotted names an import statement may reach (a `from m import x` names m and m.x)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        anchor = here.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module → the package's modules it imports (at any depth of the file, TYPE_CHECKING blocks left out)."""
    found = modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skipped = {id(n) for b in ast.walk(tree) if isinstance(b, ast.If) and _type_checking(b) for n in ast.walk(b)}
        edges = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            for target in _imported(node, name, path.name == "__init__.py"):
                if target in found and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), each sorted: the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_the_library_has_no_import_cycles():
    graph = import_graph(LIBRARY, "assist")
    assert len(graph) > 100  # the whole library was read
    assert cycles(graph) == []


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_planted_cycle_is_found_even_through_a_function_level_import(tmp_path):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "def thing():\n    from pkg import c\n    return c\n",
            "pkg/c.py": "import pkg.a\n",
            "pkg/d.py": "from pkg import a\n",  # imports into the circle, not part of it
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_relative_imports_count_and_type_checking_imports_do_not(tmp_path):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from . import x\n",
            "pkg/sub/x.py": "from .. import y\n",
            "pkg/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import x\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.x"}
    assert graph["pkg.sub.x"] == {"pkg", "pkg.y"}
    assert graph["pkg.y"] == set()
    assert cycles(graph) == []
    (tmp_path / "pkg/y.py").write_text("from pkg.sub import x\n")
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.sub", "pkg.sub.x", "pkg.y"]]
