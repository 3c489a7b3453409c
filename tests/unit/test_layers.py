"""The layer contract (pyproject.toml's `[tool.importlinter]`, ADR 0071) holds, and a break of it is seen.

`lint-imports` reads every import statement, function-level ones included. functions/*/app.py are not a
package import-linter can read; they are held here to the layer above every other: they import
`assist.serverless` and nothing else of ours."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")
PACKAGES = {"assist": ROOT / "layers/common/python/assist", "assist_dev": ROOT / "tooling/assist_dev"}


def lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)} if cwd != ROOT else None
    return subprocess.run(
        [str(LINT), "--no-cache", str(ROOT / "pyproject.toml")], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_the_contract_holds():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


def test_a_planted_retrieve_to_answer_import_breaks_it_even_inside_a_function(tmp_path):
    for name, path in PACKAGES.items():
        shutil.copytree(path, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    planted = tmp_path / "assist/retrieve/planted.py"
    planted.write_text("def late():\n    from assist.answer import phrases\n\n    return phrases\n")
    result = lint(tmp_path)
    assert result.returncode == 1
    assert "assist.retrieve is not allowed to import assist.answer" in result.stdout
    assert "assist.retrieve.planted -> assist.answer.phrases (l.2)" in result.stdout


def test_the_functions_import_only_the_serverless_layer():
    apps = sorted((ROOT / "functions").glob("*/app.py"))
    assert len(apps) == 5
    for app in apps:
        ours = set()
        for node in ast.walk(ast.parse(app.read_text())):
            if isinstance(node, ast.Import):
                ours |= {a.name for a in node.names if a.name.split(".")[0] in {*PACKAGES, "tests"}}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in {*PACKAGES, "tests"}:
                ours.add(node.module)
        assert ours, app
        assert all(m.startswith("assist.serverless") for m in ours), (app, ours)
