"""The widget's limits are named once (`settings.VisitorLimits`): the deployment's defaults (WIDGET_*), a key's own
(`Limits`), the limits in force (`effective_limits`) and `assist keys create`'s options all read that one list."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import msgspec

from assist.commands import keys as keys_command
from assist.settings import Settings, VisitorLimits, variables
from assist.widget.gate import effective_limits
from assist.widget.store.store import Limits, SiteKey

NAMES = [f.name for f in msgspec.structs.fields(VisitorLimits)]
RUNTIME = Path(__file__).resolve().parents[2] / "layers/common/python/assist"


def test_every_reader_has_the_same_names_in_the_same_order():
    assert len(NAMES) == 8
    assert [f.name for f in msgspec.structs.fields(Limits)] == NAMES
    assert [f.name for f in msgspec.structs.fields(effective_limits(_key(), Settings()))] == NAMES
    assert {n: variables()[f"WIDGET_{n.upper()}"] for n in NAMES} == {n: f"widget.{n}" for n in NAMES}
    parser = argparse.ArgumentParser()
    keys_command.register(parser.add_subparsers())
    create = parser.parse_args(["keys", "create", "--origin", "https://a.example", "--key-burst", "3"])
    assert [n for n in NAMES if hasattr(create, n)] == NAMES
    assert create.key_burst == 3


def test_a_name_is_written_once_in_the_runtime():
    """A field, a dict key or a string of a limit's name, anywhere in the runtime: only VisitorLimits' own."""
    found: dict[str, list[str]] = {n: [] for n in NAMES}
    for path in RUNTIME.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            named = (
                node.target.id
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                else node.value
                if isinstance(node, ast.Constant)
                else None
            )
            if named in found:
                found[named].append(f"{path.relative_to(RUNTIME)}:{node.lineno}")
    assert {n: where for n, where in found.items() if len(where) != 1} == {}
    assert {where[0].split(":")[0] for where in found.values()} == {"settings.py"}


def _key(limits: Limits | None = None) -> SiteKey:
    return SiteKey(key="pk_x", origins=[], created_at="", limits=limits or Limits())
