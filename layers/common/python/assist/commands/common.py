"""What every subcommand shares: settings from the environment, logs configured, JSON out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from assist.settings import Settings


def settings(**overrides: Any) -> Settings:
    from assist.logs import configure

    s = Settings.from_env()
    s = s.with_(**{k: v for k, v in overrides.items() if v is not None})
    configure(s)
    return s


def emit(obj: Any) -> None:
    """One JSON object on stdout (progress and logs go to stderr)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def group(sub: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """The subcommands of group `name` (`assist eval …`, `assist bench …`), created on first use,
    so several modules can add to one group."""
    parser = sub.choices.get(name) or sub.add_parser(name, help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{name}_cmd", required=True)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list, rounded for printing."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[k], 3)


def report(obj: dict[str, Any], as_json: bool) -> None:
    """`--json`: the one JSON object; otherwise its top-level figures, one per line, for a person."""
    if as_json:
        emit(obj)
        return
    for key, value in obj.items():
        text = value if isinstance(value, str | int | float) or value is None else json.dumps(value, ensure_ascii=False)
        sys.stdout.write(f"{key}: {text}\n")
