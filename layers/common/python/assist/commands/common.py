"""What every subcommand shares: settings from the environment, logs configured, JSON out."""

from __future__ import annotations

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


def report(obj: dict[str, Any], as_json: bool) -> None:
    """`--json`: the one JSON object; otherwise its top-level figures, one per line, for a person."""
    if as_json:
        emit(obj)
        return
    for key, value in obj.items():
        text = value if isinstance(value, str | int | float) or value is None else json.dumps(value, ensure_ascii=False)
        sys.stdout.write(f"{key}: {text}\n")
