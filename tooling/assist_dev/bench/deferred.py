"""What each deferred import of the runtime package saves (`assist bench deferred`, ADR 0104).

A deferral is an import inside a function, outside `if TYPE_CHECKING` (ADR 0100). For each module a deferral
names, a fresh process imports the Lambda entry point first (what every function has loaded before any deferral
runs), then times that module's import: the seconds a function that never reaches the deferral does not pay.
The median of `runs` processes; the reason each deferral gives is printed beside its figure.
"""

from __future__ import annotations

import ast
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import assist

RUNTIME = Path(assist.__file__).resolve().parent
LOADED_FIRST = "assist.serverless.lambda_entry"
_TIME = (
    "import importlib, sys, time\n"
    f"import {LOADED_FIRST}\n"
    "t = time.perf_counter(); importlib.import_module(sys.argv[1]); print(time.perf_counter() - t)\n"
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
        for node in found:
            out.append(
                {
                    "at": f"{path.relative_to(root)}:{node.lineno}",
                    "module": _module(node, path, root),
                    "reason": reason(lines, node, taken),
                }
            )
    return out


def _module(node: ast.Import | ast.ImportFrom, path: Path, root: Path) -> str:
    if isinstance(node, ast.Import):
        return node.names[0].name
    if node.level:  # relative: from the file's own package
        package = [root.name, *path.relative_to(root).parent.parts]
        return ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    return node.module or ""


def import_seconds(module: str, runs: int) -> float | None:
    """Median seconds to import `module` in a fresh process that has the entry point loaded; None if it fails."""
    times = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", _TIME, module], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            return None
        times.append(float(proc.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def measure(runs: int = 3) -> dict[str, Any]:
    found = deferrals()
    seconds = {m: import_seconds(m, runs) for m in sorted({d["module"] for d in found})}
    rows = [d | {"seconds": None if seconds[d["module"]] is None else round(seconds[d["module"]], 4)} for d in found]
    return {"deferrals": rows, "count": len(rows), "loaded_first": LOADED_FIRST, "runs": runs}
