"""Convex fusion of max-normalised scores (the search's); weighted RRF (the LanceDB reranker's): equal
weights are plain RRF; weights and agreement change the order; floor; MMR."""

from __future__ import annotations

import numpy as np
import pytest

from assist.retrieve.fusion import below_floor, convex, mmr, weighted_rrf

LISTS = {"vector": ["a", "b", "c", "d"], "fts": ["d", "c", "e"]}


def plain_rrf(lists, k=60):
    scores = {}
    for ids in lists.values():
        for rank, doc in enumerate(ids, 1):
            scores[doc] = scores.get(doc, 0.0) + 1 / (k + rank)
    return scores


def test_equal_weights_without_bonus_are_plain_rrf_exactly():
    expected = plain_rrf(LISTS)
    for w in (0.5, 1.0, 3.0):
        fused = weighted_rrf(LISTS, {"vector": w, "fts": w})
        assert {f.id: f.score for f in fused} == expected
        assert [f.id for f in fused] == sorted(expected, key=lambda d: -expected[d])


def test_changing_weights_changes_the_ranking():
    lists = {"vector": ["a", "b", "c"], "fts": ["e", "f", "g"]}
    semantic = [f.id for f in weighted_rrf(lists, {"vector": 0.9, "fts": 0.1})]
    lexical = [f.id for f in weighted_rrf(lists, {"vector": 0.1, "fts": 0.9})]
    assert semantic == ["a", "b", "c", "e", "f", "g"]
    assert lexical == ["e", "f", "g", "a", "b", "c"]
    # on overlapping lists too, though agreement still counts for much at k=60
    assert [f.id for f in weighted_rrf(LISTS, {"vector": 0.9, "fts": 0.1})] != [
        f.id for f in weighted_rrf(LISTS, {"vector": 0.1, "fts": 0.9})
    ]


def test_a_strategy_without_a_weight_is_an_error_not_a_default():
    with pytest.raises(ValueError, match="no fusion weight"):
        weighted_rrf(LISTS, {"vector": 1.0})


def test_agreement_bonus_lifts_what_several_strategies_found():
    lists = {"vector": ["solo", "both"], "fts": ["other", "both"]}
    without = [f.id for f in weighted_rrf(lists, {"vector": 1, "fts": 1})]
    with_bonus = weighted_rrf(lists, {"vector": 1, "fts": 1}, agreement_bonus=0.2)
    assert without[0] == "both"  # RRF already sums: 2/62 > 1/61
    top = with_bonus[0]
    assert top.id == "both"
    assert top.found_by == ["vector", "fts"]
    assert top.score == pytest.approx(2 / 62 * 1.2)
    assert with_bonus[1].score == pytest.approx(1 / 61)  # found once: no bonus


def test_floor_drops_weak_vector_only_candidates_never_lexical_ones():
    assert below_floor(["vector"], 0.1, 0.2)
    assert not below_floor(["vector"], 0.3, 0.2)
    assert not below_floor(["fts_relaxed"], None, 0.2)
    assert not below_floor(["vector", "fts_relaxed"], 0.05, 0.2)


def test_mmr_lambda_one_keeps_the_fused_order_and_lower_lambda_diversifies():
    vecs = np.array([[1, 0], [0.999, 0.04], [0, 1]], dtype=np.float32)  # 0 and 1 nearly identical
    rel = [1.0, 0.95, 0.9]
    assert mmr(rel, vecs, 3, 1.0) == [0, 1, 2]
    assert mmr(rel, vecs, 2, 0.5) == [0, 2]


def test_convex_divides_each_list_by_its_best_and_a_missing_list_adds_nothing():
    lists = {"vector": [("a", 0.8), ("b", 0.4)], "fts_relaxed": [("b", 12.0), ("c", 3.0)]}
    scores = {f.id: f.score for f in convex(lists, {"vector": 0.5, "fts_relaxed": 0.5})}
    assert scores == pytest.approx({"a": 0.5, "b": 0.5 * 0.5 + 0.5, "c": 0.5 * 0.25})


def test_convex_keeps_a_far_ahead_hit_ahead_where_rrf_forgets_the_margin():
    """A BM25 hit thirty times the next, seen by no other list, against a chunk both lists saw weakly:
    RRF ranks the chunk seen twice first, the convex combination keeps the margin."""
    lists = {"vector": [("v1", 0.52), ("v2", 0.51), ("x", 0.40)], "fts_relaxed": [("star", 30.0), ("x", 1.0)]}
    by_convex = [f.id for f in convex(lists, {"vector": 0.5, "fts_relaxed": 0.5})]
    by_rrf = [
        f.id for f in weighted_rrf({n: [i for i, _ in h] for n, h in lists.items()}, {"vector": 1, "fts_relaxed": 1})
    ]
    assert by_convex.index("star") < by_convex.index("x")
    assert by_rrf.index("x") < by_rrf.index("star")


def test_convex_weights_change_the_order_and_a_missing_weight_is_an_error():
    lists = {"vector": [("a", 0.9), ("b", 0.1)], "fts_relaxed": [("b", 5.0), ("a", 0.5)]}
    assert convex(lists, {"vector": 0.9, "fts_relaxed": 0.1})[0].id == "a"
    assert convex(lists, {"vector": 0.1, "fts_relaxed": 0.9})[0].id == "b"
    with pytest.raises(ValueError, match="no fusion weight"):
        convex(lists, {"vector": 1.0})
