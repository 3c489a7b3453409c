"""The OpenAPI schema of every HTTP app the functions serve, as one JSON object keyed by app, and the one rule the
wire keeps: a later schema may only add to an earlier one (fields, paths, enum members), never remove or change.

`python -m tests.support.openapi > tests/snapshots/openapi.json` records the schema after a deliberate addition;
`python -m tests.support.openapi --diff OLD.json` prints what a change added (and what it broke)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.serverless import routes
from assist.settings import Settings


def schemas() -> dict[str, Any]:
    settings = Settings()
    engine = build_engine(settings)  # lazy: no index, store or model is reached to describe the routes
    apps = {
        "api": create_app(engine),
        "classify": routes.classify_app(engine),
        "retrieve": routes.retrieve_app(engine),
        "export": routes.export_app(settings),
        "sync": routes.sync_app(settings),
    }
    return json.loads(json.dumps({name: app.openapi_schema.to_schema() for name, app in apps.items()}))


def compare(old: Any, new: Any, where: str = "") -> tuple[list[str], list[str]]:
    """(added, broken): every place the new schema adds to the old one, and every place it removes or changes."""
    if isinstance(old, dict) and isinstance(new, dict):
        added = [f"{where}/{k}" for k in new.keys() - old.keys()]
        broken = [f"{where}/{k}: removed" for k in old.keys() - new.keys()]
        for k in old.keys() & new.keys():
            a, b = compare(old[k], new[k], f"{where}/{k}")
            added += a
            broken += b
        return added, broken
    if isinstance(old, list) and isinstance(new, list) and where.rsplit("/", 1)[-1] in {"required", "enum"}:
        # a new field without a default is required in a response; a new member joins an enum
        gone = [v for v in old if v not in new]
        return [f"{where}: +{v}" for v in new if v not in old], [f"{where}: -{v}" for v in gone]
    return ([], []) if old == new else ([], [f"{where}: {old!r} → {new!r}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--diff", type=Path, help="an earlier dump: print what the current schema adds and breaks")
    args = parser.parse_args()
    if args.diff is None:
        json.dump(schemas(), sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return
    added, broken = compare(json.loads(args.diff.read_text(encoding="utf-8")), schemas())
    print("\n".join([*(f"+ {a}" for a in sorted(added)), *(f"! {b}" for b in sorted(broken))]))
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
