"""The `assist` command: collects the subcommands of `assist.commands` and runs one."""

from __future__ import annotations

import argparse
import importlib
import sys

from assist.commands import MODULES


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="assist", description="Adaptive-routing RAG assistance engine")
    sub = p.add_subparsers(dest="command", required=True)
    for name in MODULES:
        importlib.import_module(f"assist.commands.{name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from assist.errors import AssistError

    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except AssistError as exc:
        print(f"assist: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
