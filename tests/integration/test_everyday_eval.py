"""`assist eval everyday` on the docs set (real LanceDB, the real embedder and routing classifier, the verdict under
the corpus's own calibration): ADR 0127's acceptance holds with translation, as with a model configured, and the
baseline beside it is what the first-turn policy changes."""

from __future__ import annotations

import pytest

from assist.offline.retrieve import evaluate_everyday
from assist.offline.retrieve.evaluate_verdict import DataSet
from tests.conftest import ROOT

pytestmark = pytest.mark.integration
DATA = ROOT / "data"


def test_everyday_first_turns_are_not_in_the_docs_and_answerable_ones_are_answered(base_settings, embedder):
    docs = DataSet(
        "eval-docs",  # the index test_retrieval_eval keeps: only changed sections re-embed
        str(DATA / "retrieval/corpus.jsonl"),
        str(DATA / "retrieval/qrels.tsv"),
        (str(DATA / "retrieval/queries.jsonl"), str(DATA / "retrieval/queries_es.jsonl")),
    )
    result = evaluate_everyday.run(
        [docs],
        str(DATA / "uncertain/everyday.jsonl"),
        str(DATA / "uncertain/recall.jsonl"),
        str(ROOT / ".assist/test-cache"),
        base_settings.with_(logs={"level": "WARNING"}),
        embedder,
    )["sets"]["eval-docs"]
    assert result["calibrated"]
    got = result["translated"]
    everyday, answerable, recall = got["everyday"], got["answerable"], got["recall"]
    assert (everyday["n"], recall["n"]) == (44, 16)
    assert everyday["flagged_first_turn"] >= 0.90, everyday["missed"]
    assert everyday["flagged_baseline"] < everyday["flagged_first_turn"]
    assert answerable["n"] >= 100
    assert answerable["flagged_first_turn"] <= 0.05, answerable["flagged"]
    assert recall["conversational_first_turn"] >= 15 / 16
