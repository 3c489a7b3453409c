"""The docs relevance set through `evaluate` (real LanceDB, real embedder): adaptive beats each of its
parts and LanceDB's own hybrid, and stays above a floor that catches regressions."""

from __future__ import annotations

import pytest

from assist.offline.retrieve.evaluate import STRATEGIES, evaluate
from tests.conftest import ROOT

pytestmark = pytest.mark.integration
DATA = ROOT / "data/retrieval"
# measured 0.80 when the set was written over 182 sections (ADR 0020); 0.74 over 278 sections of a later docs/, with
# one fusion for every query kind (ADR 0039: rrf 0.69 there); 0.718–0.721 over 454 sections (rrf 0.656), where an
# ADR's edit elsewhere flips a near tie (q059: 0.8058 against 0.8051); 0.706 over 494 sections (rrf 0.644, fts 0.636),
# the same with the retrieval code of 03e8844 on that corpus: the drop is this round's new ADRs and docs, not code;
# 0.690 over 557 sections (rrf 0.640, fts 0.626), and the retrieval code of 2ccb026 gives the same 0.6903 there.
# Sections added to docs/ take ranks from the judged ones, so the floor follows the corpus, a little below what was
# measured; a drop below it is a regression
FLOOR = 0.68


def test_adaptive_beats_fts_vector_and_lancedb_rrf_on_the_docs_set(base_settings, embedder):
    index_dir = str(ROOT / ".assist/test-cache/eval-docs")  # reused between runs: only changed sections re-embed
    results = {
        s: evaluate(
            DATA / "corpus.jsonl",
            DATA / "queries.jsonl",
            DATA / "qrels.tsv",
            s,
            index_dir,
            base_settings.with_(logs={"level": "WARNING"}),
            embedder,
        )
        for s in STRATEGIES
    }
    ndcg = {s: r["ndcg@10"] for s, r in results.items()}
    assert results["adaptive"]["queries"] >= 60
    assert ndcg["adaptive"] >= max(ndcg["fts"], ndcg["vector"], ndcg["rrf"]), ndcg
    assert ndcg["adaptive"] >= FLOOR, ndcg
