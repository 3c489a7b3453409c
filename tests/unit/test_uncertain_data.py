"""The development rows of the uncertainty verdict (data/uncertain/, ADR 0082) say what they claim: an
in-domain-but-absent question's named things occur nowhere in its corpus, and every answerable row of the
corpora added for it (Vite's, Click's) is judged against sections that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.shared_data import SHARED, require

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
# SciFact's corpus is public development data kept beside the checkout, not in the repo (tests/support/shared_data.py)
SCIFACT = SHARED / "scifact-dev" / "corpus.jsonl"
SETS = {
    "docs": (DATA / "retrieval" / "corpus.jsonl", DATA / "uncertain" / "docs-absent.jsonl"),
    "vite": (DATA / "uncertain" / "vite" / "corpus.jsonl", DATA / "uncertain" / "vite" / "absent.jsonl"),
    "scifact": (SCIFACT, DATA / "uncertain" / "scifact-absent.jsonl"),
    "click": (DATA / "uncertain" / "click" / "corpus.jsonl", DATA / "uncertain" / "click" / "absent.jsonl"),
}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(SETS))
def test_absent_rows_name_things_their_corpus_never_mentions(name):
    corpus, absent = SETS[name]
    require(corpus)
    text = " ".join(f"{r.get('title', '')} {r['text']}" for r in rows(corpus)).lower()
    found = {}
    for row in rows(absent):
        named = row["metadata"]["absent"]
        assert named, row["_id"]
        hits = [t for t in named if re.search(rf"(?<![\w-]){re.escape(t.lower())}(?![\w-])", text)]
        if hits:
            found[row["_id"]] = hits
    assert not found, f"{absent.name}: rows whose named things the corpus mentions: {found}"


@pytest.mark.parametrize(("name", "licence"), [("vite", "MIT License"), ("click", "Copyright 2014 Pallets")])
def test_the_added_corpora_judge_their_questions_against_sections_they_have(name, licence):
    folder = DATA / "uncertain" / name
    ids = {r["_id"] for r in rows(folder / "corpus.jsonl")}
    qrels = [line.split("\t") for line in (folder / "qrels.tsv").read_text().splitlines()[1:]]
    assert {q for q, _, _ in qrels} == {r["_id"] for r in rows(folder / "queries.jsonl")}
    assert {d for _, d, _ in qrels} <= ids
    assert (folder / "LICENSE").read_text().startswith(licence)
