"""No function in the runtime package is longer than 60 lines unless the comment right above it says why
(ADR 0073)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers/common/python/assist"
LIMIT = 60


def too_long(path: Path, root: Path = PACKAGE) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > LIMIT:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            above = lines[first - 2].strip() if first > 1 else ""
            if not (above.startswith("#") and "lines:" in above):
                out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})")
    return out


def test_no_function_is_over_the_limit_without_a_reason():
    files = list(PACKAGE.rglob("*.py"))
    assert len(files) > 100
    assert [hit for p in files for hit in too_long(p)] == []


def test_the_check_sees_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\n# {LIMIT + 1} lines: a reason\ndef explained():\n{body}")
    assert too_long(tmp_path / "long.py", tmp_path) == ["long.py:1 long (61)"]
