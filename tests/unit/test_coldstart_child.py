"""The cold-start bench's child process loads nothing before its clock starts but the standard library: what it
loaded first, a real cold start would pay for and the figure would leave out."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import assist_dev.bench.coldstart as coldstart


def top_level_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or ".").split(".")[0])
    return names


def test_the_child_imports_only_the_standard_library_and_runs_as_a_script():
    imported = top_level_imports(coldstart.CHILD)
    assert imported, "the child imports its tools"
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_the_check_sees_a_runtime_import(tmp_path):
    planted = tmp_path / "child.py"
    planted.write_text("import json\nfrom assist.settings import Settings\n")
    assert top_level_imports(planted) - set(sys.stdlib_module_names) == {"assist"}


def test_import_times_are_summed_per_top_level_package_the_largest_first():
    stderr = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:      2000 |       2000 |   lancedb.query",
            "import time:      1000 |       1500 |     pyarrow",
            "import time:      3000 |       6000 | lancedb",
            "import time:        50 |         50 | json",
            "a log line on stderr",
        ]
    )
    assert coldstart.import_shares(stderr) == {"lancedb": 0.005, "pyarrow": 0.001, "json": 0.0}
    assert coldstart.import_shares(stderr, top=1) == {"lancedb": 0.005, "(others)": 0.001}
