"""`assist X` imports only X's command modules (ADR 0100): the table in `assist.commands` says which, and
must say it truly."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from assist.cli import parser
from assist.commands import COMMANDS, HELP


def _names(module: str) -> set[str]:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    return set(sub.choices)


def test_the_table_names_every_subcommand_with_the_modules_that_register_it():
    modules = {m for ms in COMMANDS.values() for m in ms}
    registered = {m: _names(m) for m in modules}
    for name, ms in COMMANDS.items():
        assert {m for m in modules if name in registered[m]} == set(ms), name
    assert set().union(*registered.values()) == set(COMMANDS)


@pytest.mark.parametrize(
    ("argv", "imported"),
    [
        (["keys", "list"], ["assist.commands.keys"]),
        (["eval", "routing", "--help"], ["assist.commands.classify", "assist.commands.retrieval"]),
        (["--help"], []),  # every subcommand's line from HELP, no command module
        (["no-such-command"], []),
    ],
)
def test_a_command_line_imports_only_its_own_command_modules(argv, imported):
    code = (
        f"import json, sys; from assist.cli import parser; parser({argv!r});"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('assist.commands.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == sorted(["assist.commands.common", *imported])


def test_the_listing_shows_every_subcommand_with_its_line():
    listing = parser(["--help"])._subparsers._group_actions[0]
    assert {a.dest: a.help for a in listing._choices_actions}.items() >= {n: HELP[n] for n in COMMANDS}.items()
