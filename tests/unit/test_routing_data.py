"""Shape and coverage checks for the routing data sets in data/routing/ (see its README)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "routing"
TYPES = {"RETRIEVAL", "CODE_GENERATION", "CONVERSATIONAL", "PLATFORM"}
TAGS = {"single", "with_history", "anchoring", "deictic", "prefix", "trap", "code_pasted"}
LANGS = {"en", "es", "mixed"}
REQUIRED = {"id": str, "message": str, "history": list, "expected": str, "tags": list, "lang": str}
PREFIX = "you are a direct and concise assistant"
MAX_HISTORY = 6
MAX_TOPIC = 60
MIN_TYPE_SHARE = 0.18
MIN_SPANISH_SHARE = 0.30

# minimum counts per file
MINIMA = {
    "seed": {"rows": 900, "history": 180, "anchoring": 70, "deictic": 70, "prefix": 25, "trap": 60},
    "holdout": {"rows": 240, "history": 50, "anchoring": 20, "deictic": 20, "prefix": 10, "trap": 20},
}
FILES = sorted(MINIMA)


def _load(name: str) -> list[dict]:
    rows = []
    with open(DATA / f"{name}.jsonl", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            assert line.strip(), f"{name}.jsonl line {n} is blank"
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                pytest.fail(f"{name}.jsonl line {n} is not valid JSON: {e}")
    return rows


@pytest.fixture(scope="module")
def sets() -> dict[str, list[dict]]:
    return {name: _load(name) for name in FILES}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


@pytest.mark.parametrize("name", FILES)
def test_every_line_is_a_json_object_with_the_required_keys(sets, name):
    for row in sets[name]:
        assert isinstance(row, dict)
        for key, kind in REQUIRED.items():
            assert key in row, f"{row.get('id')}: missing {key}"
            assert isinstance(row[key], kind), f"{row.get('id')}: {key} is not {kind.__name__}"
        assert row["message"].strip(), f"{row['id']}: empty message"
        assert row["expected"] in TYPES, f"{row['id']}: expected={row['expected']!r}"
        assert row["lang"] in LANGS, f"{row['id']}: lang={row['lang']!r}"
        assert row["tags"], f"{row['id']}: no tags"
        assert set(row["tags"]) <= TAGS, f"{row['id']}: unknown tags {set(row['tags']) - TAGS}"
        assert len(row["tags"]) == len(set(row["tags"])), f"{row['id']}: repeated tag"


@pytest.mark.parametrize("name", FILES)
def test_history_entries_are_valid(sets, name):
    for row in sets[name]:
        history = row["history"]
        assert len(history) <= MAX_HISTORY, f"{row['id']}: {len(history)} history entries"
        for entry in history:
            assert isinstance(entry, dict), f"{row['id']}: {entry!r}"
            assert set(entry) == {"type", "topic"}, f"{row['id']}: {entry!r}"
            assert entry["type"] in TYPES, f"{row['id']}: history type {entry['type']!r}"
            assert isinstance(entry["topic"], str), f"{row['id']}: topic is not a string"
            assert entry["topic"].strip(), f"{row['id']}: empty topic"
            assert len(entry["topic"]) <= MAX_TOPIC, f"{row['id']}: topic longer than {MAX_TOPIC}"


def test_ids_are_unique_and_named_after_their_file(sets):
    seen = set()
    for name in FILES:
        for row in sets[name]:
            assert re.fullmatch(rf"{name}-\d{{4}}", row["id"]), row["id"]
            assert row["id"] not in seen, f"duplicate id {row['id']}"
            seen.add(row["id"])


@pytest.mark.parametrize("name", FILES)
def test_tags_agree_with_history(sets, name):
    for row in sets[name]:
        tags, history = set(row["tags"]), row["history"]
        if "single" in tags:
            assert not history, f"{row['id']}: 'single' but has history"
        if tags & {"with_history", "anchoring", "deictic"}:
            assert history, f"{row['id']}: {tags} but no history"
        if not history:
            assert "single" in tags, f"{row['id']}: no history but not tagged 'single'"
        if "anchoring" in tags:
            counts = Counter(e["type"] for e in history)
            top, n = counts.most_common(1)[0]
            detail = f"{row['id']}: anchoring history is not dominated by another type: {dict(counts)}"
            assert top != row["expected"], detail
            assert 2 * n > len(history), detail
        if "with_history" in tags:
            assert history[-1]["type"] == row["expected"], f"{row['id']}: with_history but last turn differs"


@pytest.mark.parametrize("name", FILES)
def test_count_constraints(sets, name):
    rows, want = sets[name], MINIMA[name]
    tags = Counter(tag for row in rows for tag in row["tags"])
    with_history = [row for row in rows if row["history"]]
    assert len(rows) >= want["rows"]
    assert len(with_history) >= want["history"]
    assert sum("anchoring" in r["tags"] for r in with_history) >= want["anchoring"]
    assert sum("deictic" in r["tags"] for r in with_history) >= want["deictic"]
    assert tags["prefix"] >= want["prefix"]
    assert tags["trap"] >= want["trap"]


@pytest.mark.parametrize("name", FILES)
def test_every_type_is_well_represented(sets, name):
    rows = sets[name]
    counts = Counter(row["expected"] for row in rows)
    for kind in TYPES:
        assert counts[kind] / len(rows) >= MIN_TYPE_SHARE, f"{name}: {kind} is {counts[kind]}/{len(rows)}"


@pytest.mark.parametrize("name", FILES)
def test_spanish_share(sets, name):
    rows = sets[name]
    spanish = sum(row["lang"] == "es" for row in rows)
    assert spanish / len(rows) >= MIN_SPANISH_SHARE, f"{name}: {spanish}/{len(rows)} Spanish rows"


@pytest.mark.parametrize("name", FILES)
def test_prefix_rows_start_with_the_prefix_and_expect_platform(sets, name):
    for row in sets[name]:
        starts = row["message"].casefold().startswith(PREFIX)
        if "prefix" in row["tags"]:
            assert starts, f"{row['id']}: tagged prefix but does not start with it"
            assert row["expected"] == "PLATFORM", f"{row['id']}: prefix row expects {row['expected']}"
        else:
            assert not starts, f"{row['id']}: starts with the prefix but is not tagged 'prefix'"


def test_no_holdout_message_appears_in_the_seed(sets):
    seed = {_norm(row["message"]) for row in sets["seed"]}
    leaked = [row["id"] for row in sets["holdout"] if _norm(row["message"]) in seed]
    assert not leaked, f"holdout messages also in seed: {leaked}"
