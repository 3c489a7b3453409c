"""The wire may only gain fields: every app's OpenAPI schema holds everything the recorded one does
(tests/snapshots/openapi.json), unchanged; what it adds is allowed and printed. After a deliberate addition,
record it again with `python -m tests.support.openapi > tests/snapshots/openapi.json`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.openapi import compare, schemas

SNAPSHOT = Path(__file__).resolve().parents[1] / "snapshots" / "openapi.json"


def test_the_schema_only_adds_to_the_recorded_one():
    added, broken = compare(json.loads(SNAPSHOT.read_text(encoding="utf-8")), schemas())
    print("added:", *added, sep="\n  ")
    assert broken == []


def test_the_comparison_tells_an_addition_from_a_break():
    old = {"A": {"properties": {"x": {"type": "string"}}, "required": ["x"]}}
    grown = {"A": {"properties": {"x": {"type": "string"}, "y": {"type": "integer"}}, "required": ["x", "y"]}}
    assert sorted(compare(old, grown)[0]) == ["/A/properties/y", "/A/required: +y"]
    assert compare(old, grown)[1] == []
    retyped = {"A": {"properties": {"x": {"type": "integer"}}, "required": ["x"]}}
    assert compare(old, retyped)[1] == ["/A/properties/x/type: 'string' → 'integer'"]
    assert sorted(compare(old, {"A": {"properties": {}, "required": []}})[1]) == [
        "/A/properties/x: removed",
        "/A/required: -x",
    ]
