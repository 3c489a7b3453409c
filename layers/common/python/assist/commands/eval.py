"""`assist eval WHAT`: quality measured on a labelled data set, one subcommand per area.

Another area adds `assist eval NAME` by defining `register_eval(group)` in its own command
module (`group.add_parser("NAME", ...)` with `set_defaults(func=...)`) and listing that module
in `EVALS` below; the module's heavy imports stay inside its command functions.
"""

from __future__ import annotations

import argparse
import importlib

#: modules of `assist.commands` that define `register_eval(group)`
EVALS = ["classify"]


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("eval", help="measure quality on a labelled data set").add_subparsers(
        dest="eval_cmd", required=True, metavar="WHAT"
    )
    for name in EVALS:
        importlib.import_module(f"assist.commands.{name}").register_eval(group)
