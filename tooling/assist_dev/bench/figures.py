"""How every `assist bench …` prints: `--json` gives the one JSON object (its keys are the
contract); otherwise a table of the same figures, each beside its baseline or budget, for a person.

Each bench module returns its result as a dict and says how to lay it out with a `table(result)`
function; the command passes both to `show`, so no command formats figures itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assist.commands.common import emit


@dataclass(frozen=True)
class Table:
    """Rows of figures under `columns` (the first cell of a row is its label), then notes: one
    line each, for figures that are not per row (a baseline, a build time, what was left out)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    notes: Sequence[str] = field(default_factory=list)


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render(table: Table) -> str:
    """Labels left-aligned, figures right-aligned, columns as wide as their widest cell."""
    lines = [[cell(c) for c in row] for row in (table.columns, *table.rows)]
    widths = [max(len(line[i]) for line in lines if i < len(line)) for i in range(len(table.columns))]
    out = []
    for line in lines:
        first, rest = line[0].ljust(widths[0]), [c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=False)]
        out.append("  ".join([first, *rest]).rstrip())
    return "\n".join([*out, *table.notes]) + "\n"


def ratio(value: float | None, baseline: float | None, digits: int = 2) -> float | None:
    """value / baseline, or None when either is missing or the baseline is zero."""
    if value is None or not baseline:
        return None
    return round(value / baseline, digits)


def show(result: dict[str, Any], as_json: bool, table: Callable[[dict[str, Any]], Table]) -> None:
    if as_json:
        emit(result)
        return
    sys.stdout.write(render(table(result)))
    sys.stdout.flush()
