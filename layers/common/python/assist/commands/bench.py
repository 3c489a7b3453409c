"""`assist bench WHAT`: speed and footprint figures printed beside their budgets, one subcommand per area.

Another area adds `assist bench NAME` by defining `register_bench(group)` in its own command
module (`group.add_parser("NAME", ...)` with `set_defaults(func=...)`) and listing that module
in `BENCHES` below; the module's heavy imports stay inside its command functions.
"""

from __future__ import annotations

import argparse
import importlib

#: modules of `assist.commands` that define `register_bench(group)`
BENCHES = ["classify"]


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("bench", help="benchmarks, each beside its budget").add_subparsers(
        dest="bench_cmd", required=True, metavar="WHAT"
    )
    for name in BENCHES:
        importlib.import_module(f"assist.commands.{name}").register_bench(group)
