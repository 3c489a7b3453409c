"""The value sets the stages decide and compare — layer, retrieval confidence, query kind, degraded and
uncertain reasons (ADR 0072); model slot, corpus kind and how its documents were found, source kind, who wrote an
answer or a search query and what an answer without a model quotes (ADR 0099) — are written once, as enums in
contracts.py, and used as such everywhere else.

Read from the source with `ast`: no string literal spells a degraded or uncertain reason outside contracts.py,
and no comparison or keyword argument about a layer, confidence, query kind or reason uses a bare string where
a member belongs (the words `low` or `llm` mean other things elsewhere, so those are judged by context)."""

from __future__ import annotations

import ast
import typing
from enum import StrEnum
from pathlib import Path

import msgspec

from assist.contracts import (
    AnsweredBy,
    AnsweredFrom,
    AnyStage,
    Confidence,
    CorpusKind,
    CorpusStage,
    Degraded,
    FoundBy,
    GenerateStage,
    Layer,
    QueryBy,
    QueryKind,
    Slot,
    UncertainReason,
)

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "layers/common/python/assist", ROOT / "tooling/assist_dev"]
CONTRACTS = ROOT / "layers/common/python/assist/contracts.py"
#: values that name nothing else: never a bare literal outside contracts.py (`deadline` and `budget` also name a
#: request's time and the benches' limits)
DISTINCT = {m.value for e in (Degraded, UncertainReason) for m in e} - {"deadline", "budget"}
#: (`not_covered` and `account_data` also name sentences of answer/phrases.py)
DISTINCT |= {"very_high", "speculative", "extractive", "existence"}
SETS = (Layer, Confidence, QueryKind, Degraded, UncertainReason, Slot, AnsweredBy, AnsweredFrom, QueryBy, CorpusKind)
ANY_VALUE = {m.value for e in (*SETS, FoundBy) for m in e} - {""}
ABOUT = ("layer", "confidence", "query_kind", "degraded", "reason", "uncertain", "slot", "answered_by", "answered_from")
ABOUT += ("kind", "found_by", "by")


def strings(node: ast.AST) -> set[str]:
    """The str constants a node is, or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {v for e in node.elts for v in strings(e)}
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in {"frozenset", "set"}:
        return {v for a in node.args for v in strings(a)}
    return set()


def bare_values(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and node.value in DISTINCT:
            found.append(f"{where} {node.value!r}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            about = any(word in ast.unparse(s) for s in sides for word in ABOUT)
            if about and (hits := {v for s in sides for v in strings(s)} & ANY_VALUE):
                found.append(f"{where} compares {sorted(hits)}")
        elif isinstance(node, ast.keyword) and (node.arg or "").endswith(ABOUT):
            found += [f"{where} {node.arg}={v!r}" for v in sorted(strings(node.value) & ANY_VALUE)]
    return found


def test_no_value_of_the_contracts_is_spelled_outside_them():
    files = [p for root in SOURCES for p in root.rglob("*.py") if p != CONTRACTS]
    assert len(files) > 150
    assert [hit for p in files for hit in bare_values(p)] == []


def test_the_check_sees_a_bare_value(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(state, route):\n"
        "    state.degraded.append('llm_unavailable')\n"
        "    if route.layer == 'llm' or state.retrieval.confidence in ('low', 'none'):\n"
        "        return Route(layer='rules')\n"
    )
    assert bare_values(planted) == [
        "planted.py:2 'llm_unavailable'",
        "planted.py:3 compares ['llm']",
        "planted.py:3 compares ['low', 'none']",
        "planted.py:4 layer='rules'",
    ]


def test_members_encode_as_the_plain_strings_of_the_wire():
    assert msgspec.json.encode([Degraded.SLOT_FALLBACK, Layer.LLM, Confidence.VERY_HIGH]) == (
        b'["slot_fallback","llm","very_high"]'
    )
    assert all(isinstance(m, StrEnum) for m in (Degraded.DEADLINE, QueryKind.HYBRID, UncertainReason.OUT_OF_SCOPE))
    # each stage's detail follows its header; `missing` keeps its key for both meanings (ADR 0099)
    stage = GenerateStage(ms=1.5, answered_by=AnsweredBy.EXTRACTIVE, missing_models=["m:1b"])
    assert msgspec.json.decode(msgspec.json.encode(stage)) == {
        "name": "generate",
        "ms": 1.5,
        "degraded": [],
        "skipped": False,
        "slot": None,
        "model": None,
        "answered_by": "extractive",
        "answered_from": None,
        "lang": None,
        "model_ms": None,
        "usage": {},
        "prompt": None,
        "asked": None,
        "forced": False,
        "missing": ["m:1b"],
        "verdict": None,
    }
    assert msgspec.json.decode(msgspec.json.encode(CorpusStage(missing_ids=["adr-9"])))["missing"] == ["adr-9"]


def test_every_stage_field_is_in_its_json():
    """No stage has an optional field (ADR 0099): each detail struct's fields are all encoded, null where the stage
    decided nothing; the header is every stage's; the stages' names are distinct tags and decode back."""
    stages = typing.get_args(AnyStage)
    assert len({s.__struct_config__.tag for s in stages}) == len(stages) == 9
    for kind in stages:
        assert [f for f in msgspec.structs.fields(kind) if f.default is msgspec.UNSET] == []
        keys = set(msgspec.json.decode(msgspec.json.encode(kind())))
        assert {"name", "ms", "degraded", "skipped"} <= keys
        assert keys == {"name"} | {f.encode_name for f in msgspec.structs.fields(kind)}
    trace = [s() for s in stages]
    assert msgspec.json.decode(msgspec.json.encode(trace), type=list[AnyStage]) == trace
