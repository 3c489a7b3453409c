"""Every reference in the code and the docs names a file in the repository (ADR 0074): no design document,
seed or issue a reader of the repository cannot open, and no repo path (in docs/, the README, a docstring or a
comment) that does not exist, however the files move."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"DESIGN\.md|STYLE\.md|\bseeds? \d{3}\b|\b[Ii]ssues? \d+\b|/work/")
PLACES = ("layers", "tooling", "functions", "tests", "docs", "infra")
# a path with a folder: checked when it starts at a top-level folder or a package, or names a Python file
PATH = re.compile(
    r"(?<![\w./:<{*~$-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|json|jsonl|yaml|yml|tsv|js|css|html|toml|sh|txt))(?![\w/])"
)
TOP = {"layers", "tooling", "functions", "tests", "docs", "infra", "data", "assist", "assist_dev"}
# where a path written relative to a package or a folder is looked up
BASES = [ROOT / b for b in ("", "layers/common/python", "layers/common/python/assist", "tooling", "tooling/assist_dev")]
EXAMPLES = {"sdk/client.py"}  # docs/sources.md: a document id a code file gets, not a file of ours


def texts() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / "template.yaml"]
    files += [p for place in PLACES for p in (ROOT / place).rglob("*") if p.suffix in {".py", ".md", ".json", ".yaml"}]
    return [p for p in files if p != Path(__file__).resolve() and ".egg-info" not in str(p)]


def outside_references() -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{n}: {m.group(0)}"
        for p in texts()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        for m in [OUTSIDE.search(line)]
        if m
    ]


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """A document's lines; a Python file's docstrings and comments (its string literals are data)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield from ((n, lines[n - 1]) for n in range(first.lineno, (first.end_lineno or first.lineno) + 1))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def exists(ref: str, where: Path) -> bool:
    first = ref.split("/")[0]
    if ref in EXAMPLES or (first not in TOP and not ref.endswith(".py")):
        return True
    if any((base / ref).exists() for base in [*BASES, where.parent]):
        return True
    # a third party's file (moto/…): under the installed package's folder
    spec = importlib.util.find_spec(first) if first.isidentifier() and first not in TOP else None
    return bool(
        spec
        and spec.submodule_search_locations
        and (Path(next(iter(spec.submodule_search_locations))).parent / ref).exists()
    )


def missing_paths() -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{n}: {m.group(1)}"
        for p in texts()
        if p.suffix in {".py", ".md"} or p.parent == ROOT
        for n, line in prose(p)
        for m in PATH.finditer(line)
        if not exists(m.group(1), p)
    ]


def test_no_reference_leaves_the_repository():
    assert outside_references() == []


def test_every_repo_path_named_in_docs_and_docstrings_exists():
    assert missing_paths() == []


def test_a_moved_file_is_caught(tmp_path):
    doc = tmp_path / "note.md"
    doc.write_text("See `memory/file.py` and `retrieve/fusion.py`, `tests/unit/gone.py`, and `guide/a.md`.\n")
    assert [m.group(1) for _, line in prose(doc) for m in PATH.finditer(line) if not exists(m.group(1), doc)] == [
        "memory/file.py",
        "tests/unit/gone.py",
    ]
