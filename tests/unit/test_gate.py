"""The gate's thresholds chosen together by cross-validation (ADR 0056), on made-up rows."""

from __future__ import annotations

import numpy as np

from assist.offline.classify.gate import Rows, Targets, choose, choose_held, cross_validated


def rows(seed: int = 0) -> tuple[Rows, Rows]:
    """Known rows: right when confident; unknown rows: less similar to any class, some of them confident."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.3, 1.0, 2000)
    ok = rng.uniform(size=2000) < p  # accuracy grows with the probability
    known = Rows(p, rng.normal(0.7, 0.08, 2000), ok)
    unknown = Rows(rng.uniform(0.3, 1.0, 300), rng.normal(0.45, 0.08, 300))
    return known, unknown


def test_the_pair_chosen_meets_the_targets_at_the_highest_coverage_found():
    known, unknown = rows()
    t, g, figures = choose(known, unknown, Targets(0.95, 0.95))
    decided = (known.p >= t) & (known.sim >= g)
    assert figures["met"] is True
    assert known.ok[decided].mean() >= 0.95
    assert 1 - ((unknown.p >= t) & (unknown.sim >= g)).mean() >= 0.95
    assert figures["coverage"] == round(decided.mean(), 4)
    # a stricter accuracy costs coverage
    assert choose(known, unknown, Targets(0.99, 0.95))[2]["coverage"] < figures["coverage"]


def test_unreachable_targets_say_so():
    known, unknown = rows()
    assert choose(known, unknown, Targets(1.01, 0.95))[2]["met"] is False


def test_cross_validated_figures_are_near_the_targets_on_rows_of_the_same_kind():
    known, unknown = rows()
    cv = cross_validated(known, unknown, Targets(0.95, 0.95))
    assert len(cv["thresholds_per_fold"]) == 5
    assert abs(cv["selective_accuracy"] - 0.95) < 0.02
    assert cv["abstention"] > 0.9


def test_choose_held_asks_for_stricter_targets_until_the_choice_holds_on_held_out_folds():
    known, unknown = rows()
    _, _, figures = choose_held(known, unknown, Targets(0.95, 0.95))
    assert figures["held"] is True
    assert figures["cross_validated"]["selective_accuracy"] >= 0.95
    assert figures["cross_validated"]["abstention"] >= 0.95
    asked = figures["asked"]
    assert asked["selective_accuracy"] >= 0.95
    assert asked["abstention"] >= 0.95
    assert figures["on_all_rows"]["selective_accuracy"] >= asked["selective_accuracy"]
    # a target the rows cannot reach on held-out folds is reported as not held
    assert choose_held(known, unknown, Targets(0.999, 0.999), steps=2)[2]["held"] is False


def test_a_margin_set_on_the_far_rows_is_stricter_when_they_are_harder():
    known, unknown = rows(1)
    rng = np.random.default_rng(2)
    far = rng.uniform(size=len(known.p)) < 0.3
    # the far rows are wrong more often at the same probability: a choice judged on all rows overrates them
    ok = known.ok.copy()
    ok[far] &= rng.uniform(size=int(far.sum())) < 0.95
    hard = Rows(known.p, known.sim, ok)
    t_all, _, plain = choose_held(hard, unknown, Targets(0.9, 0.9))
    t_far, _, margin = choose_held(hard, unknown, Targets(0.9, 0.9), far=far)
    assert margin["cross_validated"]["far"]["rows"] == int(far.sum())
    assert margin["asked"]["selective_accuracy"] > plain["asked"]["selective_accuracy"]
    assert t_far > t_all
    assert margin["held"]
    assert margin["cross_validated"]["far"]["selective_accuracy"] >= 0.9
