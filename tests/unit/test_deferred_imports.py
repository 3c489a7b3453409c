"""Imports at the top (ADR 0100): an import inside a function (outside `if TYPE_CHECKING`) is a deferral,
there are at most `CEILING` of them in the runtime package, and each says what it saves in a `# deferred …`
comment, on its line or in the comment just above it (an import block under one comment shares it)."""

from __future__ import annotations

from pathlib import Path

from assist_dev.bench.deferred import deferrals, function_imports, reason

ROOT = Path(__file__).resolve().parents[2] / "layers" / "common" / "python" / "assist"
#: function-level imports in the runtime package: 199 before ADR 0100, 85 after it, 39 after ADR 0104
CEILING = 39


def deferred(source: str) -> list[tuple[int, bool]]:
    """Each function-level import of `source`: its line, and whether a `# deferred` comment gives its reason."""
    lines, found = source.splitlines(), function_imports(source)
    taken = {i for n in found for i in range(n.lineno - 1, n.end_lineno)}
    return [(n.lineno, reason(lines, n, taken) is not None) for n in found]


def _all() -> dict[str, list[tuple[int, bool]]]:
    return {str(p.relative_to(ROOT)): deferred(p.read_text()) for p in sorted(ROOT.rglob("*.py"))}


def test_the_checker_sees_a_deferral_and_its_reason():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import os\n"
        "def f():\n    # deferred, ADR 0100: lancedb 3.1 s\n    import lancedb\n    import pyarrow\n\n"
        "    import json\n"
        "def g():\n    # a comment, no reason\n    import numpy  # fast enough\n"
    )
    assert deferred(source) == [(6, True), (7, True), (9, True), (12, False)]


def test_function_level_imports_stay_under_the_ceiling():
    count = sum(len(v) for v in _all().values())
    assert count <= CEILING, f"{count} function-level imports (ceiling {CEILING}): import at the top (ADR 0100)"


def test_each_deferral_says_what_it_saves():
    silent = [f"{path}:{line}" for path, found in _all().items() for line, ok in found if not ok]
    assert not silent, f"a deferred import needs a `# deferred, ADR …: what it saves` comment: {silent}"


def test_the_bench_lists_what_the_test_counts():
    # `assist bench deferred` measures the same deferrals this test counts, each with the reason it gives
    listed = deferrals(ROOT)
    assert len(listed) == sum(len(v) for v in _all().values())
    assert {d["at"] for d in listed} == {f"{path}:{line}" for path, found in _all().items() for line, _ in found}
    assert all(d["reason"] for d in listed)
    assert {"lancedb.expr", "ollama", "assist.retrieve.search"} <= {d["module"] for d in listed}
