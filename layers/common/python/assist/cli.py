"""The `assist` command: registers the subcommand a command line names (the modules `assist.commands.COMMANDS`
lists for it, and those other installed distributions register under the `assist.commands` entry points, the
development tooling) and runs it."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

from assist.commands import COMMANDS, ENTRY_POINTS, HELP
from assist.commands.common import log_more
from assist.errors import AssistError


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the subcommand `argv` names, importing only its modules (`COMMANDS`); for `assist --help`,
    or a name the table does not hold, every subcommand's line (`HELP`) and no command module."""
    p = argparse.ArgumentParser(prog="assist", description="Adaptive-routing RAG assistance engine")
    # read by `main` wherever it stands on the line (`assist ask "…" -v` too); listed here for --help
    p.add_argument("-v", "--verbose", action="count", default=0, help="log INFO events (-vv: DEBUG) to stderr")
    sub = p.add_subparsers(dest="command", required=True)
    name = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    if name in COMMANDS:
        for module in COMMANDS[name]:
            importlib.import_module(module).register(sub)
    else:
        for each in COMMANDS:
            sub.add_parser(each, help=HELP[each])
    for plugin in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        plugin.load().register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv, verbosity = verbose(sys.argv[1:] if argv is None else argv)
    args = parser(argv).parse_args(argv)
    log_more(verbosity)

    try:
        return runner(args.func)(args)
    except KeyboardInterrupt:
        return 130
    except AssistError as exc:
        print(f"assist: {exc}", file=sys.stderr)
        return 2


def verbose(argv: list[str]) -> tuple[list[str], int]:
    """The command line without its -v/-vv/--verbose flags, and how many there were."""
    flags = {"-v": 1, "-vv": 2, "--verbose": 1}
    return [a for a in argv if a not in flags], sum(flags.get(a, 0) for a in argv)


def runner(func: Callable[[argparse.Namespace], int] | str) -> Callable[[argparse.Namespace], int]:
    """A command's function, or `"module:function"` for one whose module is loaded only when it runs (its
    arguments are parsed, and its `--help` shown, without it)."""
    if isinstance(func, str):
        module, _, name = func.partition(":")
        return getattr(importlib.import_module(module), name)
    return func


if __name__ == "__main__":
    sys.exit(main())
