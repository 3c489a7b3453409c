"""The attacker's table: each front-door attack test ends with one row (attack, limit, what happened).

The rows are printed together at the end of the run (tests/conftest.py's terminal summary), so `make test` shows
the whole table an ADR quotes. A row is recorded only after the test's assertions held.
"""

from __future__ import annotations

ROWS: list[tuple[str, str, str]] = []


def record(attack: str, limit: str, happened: str) -> None:
    ROWS.append((attack, limit, happened))


def table() -> list[str]:
    lines = ["| attack | limit | what happened |", "|---|---|---|"]
    lines += [f"| {a} | {limit} | {h} |" for a, limit, h in ROWS]
    return lines
