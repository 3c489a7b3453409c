"""`assist eval everyday` (real LanceDB, the real embedder and routing classifier, the verdict under each corpus's
own calibration) on the docs set and on SciFact, a corpus of another kind (it needs ../shared/data and skips,
saying so, without it): ADR 0127's acceptance holds with translation, as with a model configured, and the baseline
beside it is what the first-turn policy changes."""

from __future__ import annotations

import pytest

from assist.offline.retrieve import evaluate_everyday
from assist.offline.retrieve.evaluate_verdict import DataSet
from tests.conftest import ROOT
from tests.support.shared_data import SHARED, require

pytestmark = pytest.mark.integration
DATA = ROOT / "data"


def docs() -> DataSet:
    return DataSet(
        "eval-docs",  # the index test_retrieval_eval keeps: only changed sections re-embed
        str(DATA / "retrieval/corpus.jsonl"),
        str(DATA / "retrieval/qrels.tsv"),
        (str(DATA / "retrieval/queries.jsonl"), str(DATA / "retrieval/queries_es.jsonl")),
    )


def scifact() -> DataSet:
    folder = require(SHARED / "scifact-dev")
    return DataSet(
        "eval-scifact",  # kept under .assist/test-cache like the docs set's: built once (5,183 abstracts)
        str(folder / "corpus.jsonl"),
        str(folder / "qrels_train.tsv"),
        (str(folder / "queries_train.jsonl"),),
    )


#: SciFact's index is 7,210 chunks: 5 to 6 minutes of embedding on 2 cores when not cached, past the suite's 300 s per
#: test and a fifth of its time, so it is the slow tier's (`make test SLOW=1`); `assist eval everyday` prints the same
#: figures
SCIFACT_CASE = pytest.param(scifact, 300, marks=[pytest.mark.slow, pytest.mark.timeout(1200)], id="scifact")


@pytest.mark.parametrize(("dataset", "limit"), [pytest.param(docs, None, id="docs"), SCIFACT_CASE])
def test_everyday_first_turns_are_not_in_the_docs_and_answerable_ones_are_answered(
    base_settings, embedder, dataset, limit
):
    ds = dataset()
    result = evaluate_everyday.run(
        [ds],
        str(DATA / "uncertain/everyday.jsonl"),
        str(DATA / "uncertain/recall.jsonl"),
        str(ROOT / ".assist/test-cache"),
        base_settings.with_(logs={"level": "WARNING"}),
        embedder,
        limit,
    )["sets"][ds.name]
    assert result["calibrated"]
    got = result["translated"]
    everyday, answerable, recall = got["everyday"], got["answerable"], got["recall"]
    assert (everyday["n"], recall["n"]) == (44, 16)
    assert everyday["flagged_first_turn"] >= 0.90, everyday["missed"]
    assert everyday["flagged_baseline"] < everyday["flagged_first_turn"]
    assert answerable["n"] >= 100
    assert answerable["flagged_first_turn"] <= 0.05, answerable["flagged"]
    assert recall["conversational_first_turn"] == 1.0, recall
