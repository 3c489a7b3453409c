"""The gate's two thresholds — the probability threshold and the novelty guard's — chosen together by
cross-validation over the training rows and the out-of-scope (guard) rows (ADR 0056).

Every training row has an out-of-fold top probability (calibrated, from a fold model that never saw it)
and a leave-one-out similarity to its class's centroid; every guard row has a top probability from a fold
model and its similarity to the nearest centroid. A pair (probability threshold t, guard threshold g)
decides a row when p ≥ t and similarity ≥ g. `choose` takes the pair with the highest coverage of the
training rows whose selective accuracy and out-of-scope abstention meet the targets the operator names;
`cross_validated` runs that choice in K folds of both kinds of rows and scores each fold with the pair
chosen without it, so its figures are those of the procedure on rows it did not choose on.
numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

FOLDS = 5
GRID = 200  # candidate thresholds of each kind: quantiles of the rows' own values
DIGITS = 6


@dataclass(frozen=True)
class Rows:
    """What the gate sees of a set of rows: top probability, similarity, and (training rows) correctness."""

    p: np.ndarray
    sim: np.ndarray
    ok: np.ndarray | None = None

    def take(self, idx: np.ndarray) -> Rows:
        return Rows(self.p[idx], self.sim[idx], None if self.ok is None else self.ok[idx])


@dataclass(frozen=True)
class Targets:
    selective_accuracy: float
    abstention: float


def _candidates(values: np.ndarray) -> np.ndarray:
    return np.unique(np.quantile(values, np.linspace(0.0, 1.0, GRID)))


def _scan(known: Rows, unknown: Rows, g: float, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coverage, selective accuracy and abstention at guard g for every probability threshold in ts."""
    assert known.ok is not None
    passed = known.sim >= g
    p = known.p[passed]
    order = np.argsort(p)
    p, ok = p[order], known.ok[passed][order]
    ok_from = np.concatenate([np.cumsum(ok[::-1])[::-1], [0]])  # correct rows at or above each position
    at = np.searchsorted(p, ts, side="left")
    decided = len(p) - at
    coverage = decided / max(len(known.p), 1)
    selective = np.where(decided > 0, ok_from[at] / np.maximum(decided, 1), 1.0)
    q = np.sort(unknown.p[unknown.sim >= g])
    abstention = 1.0 - (len(q) - np.searchsorted(q, ts, side="left")) / max(len(unknown.p), 1)
    return coverage, selective, abstention


def choose(known: Rows, unknown: Rows, targets: Targets) -> tuple[float, float, dict[str, Any]]:
    """(probability threshold, guard threshold, figures on these rows). Without a pair meeting both targets,
    the pair that misses them least (the larger of the two shortfalls smallest), `met: false`."""
    ts = _candidates(known.p)
    best: tuple[Any, ...] | None = None
    for g in _candidates(np.concatenate([known.sim, unknown.sim])):
        coverage, selective, abstention = _scan(known, unknown, g, ts)
        short = np.maximum(targets.selective_accuracy - selective, targets.abstention - abstention).clip(min=0)
        # met first, then the smallest shortfall, then the highest coverage
        i = int(np.lexsort((-coverage, short))[0])
        key = (short[i] > 0, short[i], -coverage[i])
        if best is None or key < best[0]:
            best = (key, float(ts[i]), float(g), coverage[i], selective[i], abstention[i])
    assert best is not None
    _, t, g, coverage, selective, abstention = best
    return (
        _down(t),
        _down(g),
        {
            "met": bool(best[0][1] == 0),
            "coverage": round(float(coverage), 4),
            "selective_accuracy": round(float(selective), 4),
            "abstention": round(float(abstention), 4),
        },
    )


def cross_validated(
    known: Rows,
    unknown: Rows,
    targets: Targets,
    folds: int = FOLDS,
    seed: int = 0,
    far: np.ndarray | None = None,
) -> dict[str, Any]:
    """The choice's figures on rows it was not made on: K folds of both kinds, each scored with the pair chosen
    on the others; the counts are pooled over the folds. `far`: a mask of training rows (those least like the
    others) whose held-out figures are also given apart (`far`)."""
    assert known.ok is not None
    rng = np.random.default_rng(seed)
    fold_in = rng.permutation(len(known.p)) % folds
    fold_out = rng.permutation(len(unknown.p)) % folds
    decided = np.zeros(len(known.p), dtype=bool)
    passed_out = 0
    chosen = []
    for f in range(folds):
        t, g, _ = choose(known.take(fold_in != f), unknown.take(fold_out != f), targets)
        chosen.append([t, g])
        k, u = known.take(fold_in == f), unknown.take(fold_out == f)
        decided[fold_in == f] = (k.p >= t) & (k.sim >= g)
        passed_out += int(((u.p >= t) & (u.sim >= g)).sum())
    out = {
        "folds": folds,
        **_figures(decided, known.ok),
        "abstention": round(1.0 - passed_out / max(len(unknown.p), 1), 4),
        "thresholds_per_fold": chosen,
    }
    if far is not None:
        out["far"] = {"rows": int(far.sum()), **_figures(decided[far], known.ok[far])}
    return out


def _figures(decided: np.ndarray, ok: np.ndarray) -> dict[str, Any]:
    n = int(decided.sum())
    return {
        "coverage": round(n / max(len(decided), 1), 4),
        "selective_accuracy": round(int(ok[decided].sum()) / n, 4) if n else None,
    }


def choose_held(
    known: Rows,
    unknown: Rows,
    targets: Targets,
    folds: int = FOLDS,
    steps: int = 10,
    far: np.ndarray | None = None,
) -> tuple[float, float, dict[str, Any]]:
    """`choose`, asked for stricter targets until the choice holds on rows it was not made on: the targets are
    moved toward 1 by a share k/steps of what is left (k = 0, 1, …) until `cross_validated` meets the real ones;
    the pair is then chosen on all rows with those stricter targets. Returns (t, g, figures with both).

    `far` (ADR 0085): the margin is set on the training rows least like the others instead of on all of them:
    their held-out selective accuracy must meet the target. New messages are further from the training rows
    than training rows are from each other (ADR 0069), so these rows, held out, are the nearer stand-in."""
    for k in range(steps):
        share = k / steps
        strict = Targets(
            targets.selective_accuracy + share * (1 - targets.selective_accuracy),
            targets.abstention + share * (1 - targets.abstention),
        )
        cv = cross_validated(known, unknown, strict, folds, far=far)
        judged = cv["far"] if far is not None else cv
        accurate = (judged["selective_accuracy"] or 0.0) >= targets.selective_accuracy
        held = accurate and cv["abstention"] >= targets.abstention
        if held:
            break
    t, g, chosen = choose(known, unknown, strict)
    return (
        t,
        g,
        {
            "asked": {
                "selective_accuracy": round(strict.selective_accuracy, 4),
                "abstention": round(strict.abstention, 4),
            },
            "held": held,
            "on_all_rows": chosen,
            "cross_validated": cv,
        },
    )


def _down(x: float) -> float:
    """Rounded down, so the row the cut was set at still passes."""
    return float(np.floor(x * 10**DIGITS) / 10**DIGITS)
