"""The docs relevance set (data/retrieval/) stays in step with docs/, and the BEIR readers and metrics."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from assist.offline.retrieve.beir import BeirError, docs_corpus, read_corpus, read_qrels, read_queries
from assist.offline.retrieve.evaluate import best_chunk_order, mrr, ndcg, recall
from tests.conftest import DOCS, ROOT

DATA = ROOT / "data/retrieval"


def test_corpus_file_is_docs_as_it_is_now():
    """After editing docs/, run `assist eval docs-corpus docs --out data/retrieval/corpus.jsonl`."""
    written = [json.loads(line) for line in (DATA / "corpus.jsonl").read_text().splitlines()]
    assert written == docs_corpus(DOCS)


def test_every_judgement_points_at_a_section_and_every_query_is_judged():
    corpus, queries, qrels = (
        read_corpus(DATA / "corpus.jsonl"),
        read_queries(DATA / "queries.jsonl"),
        read_qrels(DATA / "qrels.tsv"),
    )
    assert len(queries) >= 60
    assert set(qrels) == set(queries)
    assert {d for rels in qrels.values() for d in rels} <= set(corpus)
    assert all(2 in rels.values() for rels in qrels.values())
    kinds = Counter(json.loads(line)["metadata"]["kind"] for line in (DATA / "queries.jsonl").read_text().splitlines())
    assert set(kinds) == {"exact_quote", "entity", "identifier", "conceptual", "factual", "exploratory"}


def test_qrels_need_the_header_and_drop_zero_grades(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1\td1\t1\n")
    with pytest.raises(BeirError, match="header"):
        read_qrels(bad)
    good = tmp_path / "good.tsv"
    good.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td3\t2\n")
    assert read_qrels(good) == {"q1": {"d1": 1}, "q2": {"d3": 2}}


def test_metrics_on_a_hand_computed_ranking():
    rels = {"a": 2, "b": 1}
    ranked = ["x", "a", "y", "b"]
    ideal = 2 + 1 / math.log2(3)
    assert ndcg(ranked, rels, 10) == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert recall(ranked, rels, 2) == 0.5
    assert recall(ranked, rels, 10) == 1.0
    assert mrr(ranked, rels, 10) == 0.5
    assert mrr(ranked, rels, 1) == 0.0
    assert best_chunk_order(["d1", "d2", "d1", "d3"]) == ["d1", "d2", "d3"]
