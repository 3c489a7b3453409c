"""What every subcommand shares: settings from the environment, logs configured, JSON out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from assist.commands import HELP
from assist.settings import Settings

#: `assist -v`: INFO events on stderr (`-vv`: DEBUG) where LOG_LEVEL does not name a level
_verbosity = [0]


def log_more(verbosity: int) -> None:
    _verbosity[0] = verbosity


def settings(**overrides: dict[str, Any]) -> Settings:
    """Settings from the environment, with a command's options on top: `settings(index={"uri": args.index})`;
    an option left unset (None) keeps the environment's value."""
    # deferred, ADR 0104: structlog, 0.04 s; `assist --help` and the tooling's command modules import this
    from assist.logs import configure

    s = Settings.from_env()
    if _verbosity[0] and not s.logs.level:
        s = s.with_(logs={"level": "DEBUG" if _verbosity[0] > 1 else "INFO"})
    s = s.with_(**{name: {k: v for k, v in fields.items() if v is not None} for name, fields in overrides.items()})
    configure(s)
    return s


def emit(obj: Any) -> None:
    """One JSON object on stdout (progress and logs go to stderr)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def group(sub: argparse._SubParsersAction, name: str) -> argparse._SubParsersAction:
    """The subcommands of group `name` (`assist eval …`, `assist bench …`), created on first use,
    so each area's module adds its own to one group."""
    parser = sub.choices.get(name) or sub.add_parser(name, help=HELP[name])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{name}_cmd", required=True)


def report(obj: dict[str, Any], as_json: bool) -> None:
    """`--json`: the one JSON object; otherwise its top-level figures, one per line, for a person."""
    if as_json:
        emit(obj)
        return
    for key, value in obj.items():
        text = value if isinstance(value, str | int | float) or value is None else json.dumps(value, ensure_ascii=False)
        sys.stdout.write(f"{key}: {text}\n")
