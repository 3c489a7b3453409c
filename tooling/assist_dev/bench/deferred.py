"""What each deferred import of the runtime package saves (`assist bench deferred`, ADR 0104).

A deferral is an import inside a function, outside `if TYPE_CHECKING` (ADR 0100). For the modules a deferral
loads, a fresh process imports the module that holds the deferral first (it is loaded whenever the deferral can
run), then times their import: the seconds a process that loads that module but never reaches the deferral does
not pay. The median of `runs` processes; each deferral's reason beside it.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import assist

RUNTIME = Path(assist.__file__).resolve().parent
_TIME = (
    "import importlib, sys, time\n"
    "importlib.import_module(sys.argv[1])\n"
    "t = time.perf_counter()\n"
    "for name in sys.argv[2].split(','): importlib.import_module(name)\n"
    "print(time.perf_counter() - t)\n"
)


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def function_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    """The imports of `source` inside a function, outside `if TYPE_CHECKING`."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                found.append(child)
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(source), False)
    return found


def reason(lines: list[str], node: ast.Import | ast.ImportFrom, taken: set[int]) -> str | None:
    """The `# deferred …` comment of a deferral, on its line or just above it (a block shares one), else None."""
    if "# deferred" in lines[node.lineno - 1]:
        return lines[node.lineno - 1].split("# deferred", 1)[1].strip(" ,:")
    i = node.lineno - 2
    while i >= 0 and (i in taken or not lines[i].strip()):  # the block's other imports, blank lines
        i -= 1
    comment: list[str] = []
    while i >= 0 and lines[i].strip().startswith("#"):  # the comment above, over one or more lines
        comment.insert(0, lines[i].strip().lstrip("# "))
        if lines[i].strip().startswith("# deferred"):
            return " ".join(comment).removeprefix("deferred").strip(" ,:")
        i -= 1
    return None


def deferrals(root: Path = RUNTIME) -> list[dict[str, Any]]:
    """Every deferral of the package under `root`: where, what it imports, and its reason (None: none given)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        lines, found = source.splitlines(), function_imports(source)
        taken = {i for n in found for i in range(n.lineno - 1, n.end_lineno or n.lineno)}
        at = path.relative_to(root)
        for node in found:
            out.append(
                {
                    "at": f"{at}:{node.lineno}",
                    "module": ",".join(_modules(node, path, root)),
                    "after": ".".join([root.name, *at.with_suffix("").parts]),
                    "reason": reason(lines, node, taken),
                }
            )
    return out


def _modules(node: ast.Import | ast.ImportFrom, path: Path, root: Path) -> list[str]:
    """What the import statement loads: its modules, and the submodules a `from … import` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative: from the file's own package
        package = [root.name, *path.relative_to(root).parent.parts]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    subs = [f"{base}.{a.name}" for a in node.names if _is_submodule(base, a.name)]
    return subs or [base]


def _is_submodule(package: str, name: str) -> bool:
    """Whether `name` is a module of `package`, read from the package's folders: the package itself is not
    imported (only its parents, for a dotted name), so listing the deferrals loads none of the heavy libraries."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # a parent not installed here
        return False
    locations = spec.submodule_search_locations if spec else None
    return bool(locations) and any(m.name == name for m in pkgutil.iter_modules(locations))


def import_seconds(modules: str, after: str, runs: int) -> float | None:
    """Median seconds to import `modules` (comma-separated) in a fresh process that has `after` loaded; None if
    it fails (not installed here)."""
    times = []
    for _ in range(runs):
        argv = [sys.executable, "-c", _TIME, after, modules]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            return None
        times.append(float(proc.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def measure(runs: int = 3) -> dict[str, Any]:
    found = deferrals()
    seconds = {(d["module"], d["after"]): import_seconds(d["module"], d["after"], runs) for d in found}
    rows = [d | {"seconds": None if (t := seconds[d["module"], d["after"]]) is None else round(t, 4)} for d in found]
    return {"deferrals": rows, "count": len(rows), "runs": runs}
