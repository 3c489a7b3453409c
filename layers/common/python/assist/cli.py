"""The `assist` command: collects the subcommands of `assist.commands`, and those other installed
distributions register under the `assist.commands` entry points (the development tooling), and runs one."""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import entry_points

from assist.commands import ENTRY_POINTS, MODULES
from assist.errors import AssistError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="assist", description="Adaptive-routing RAG assistance engine")
    sub = p.add_subparsers(dest="command", required=True)
    for name in MODULES:
        importlib.import_module(f"assist.commands.{name}").register(sub)
    for plugin in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        plugin.load().register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except AssistError as exc:
        print(f"assist: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
