"""Every reference in the code and the docs names a file in the repository (ADR 0074): no design document,
seed or issue a reader of the repository cannot open."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"DESIGN\.md|STYLE\.md|\bseeds? \d{3}\b|\b[Ii]ssues? \d+\b|/work/")
PLACES = ("layers", "tooling", "functions", "tests", "docs", "infra")


def outside_references() -> list[str]:
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / "template.yaml"]
    files += [p for place in PLACES for p in (ROOT / place).rglob("*") if p.suffix in {".py", ".md", ".json", ".yaml"}]
    return [
        f"{p.relative_to(ROOT)}:{n}: {m.group(0)}"
        for p in files
        if p != Path(__file__).resolve() and ".egg-info" not in str(p)
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        for m in [OUTSIDE.search(line)]
        if m
    ]


def test_no_reference_leaves_the_repository():
    assert outside_references() == []
