"""Figures shared by training, `classifier eval` and `eval routing` (numpy only)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

#: reliability bins over the top probability; the last one starts at the default threshold
BINS = (0.0, 0.5, 0.7, 0.85, 0.95, 1.0)


def reliability(confidence: Sequence[float], correct: Sequence[bool]) -> list[dict]:
    """Per bin of top probability: rows, mean probability, accuracy — calibrated when the two agree."""
    conf, ok = np.asarray(confidence, dtype=float), np.asarray(correct, dtype=bool)
    table = []
    for lo, hi in itertools.pairwise(BINS):
        m = (conf >= lo) & ((conf < hi) if hi < 1.0 else (conf <= hi))
        if m.any():
            table.append(
                {
                    "bin": f"{lo:.2f}-{hi:.2f}",
                    "n": int(m.sum()),
                    "mean_p": round(float(conf[m].mean()), 3),
                    "accuracy": round(float(ok[m].mean()), 3),
                }
            )
    return table


def ece(confidence: Sequence[float], correct: Sequence[bool]) -> float:
    """Expected calibration error over the reliability bins."""
    n = len(confidence)
    return round(sum(r["n"] / n * abs(r["mean_p"] - r["accuracy"]) for r in reliability(confidence, correct)), 4)


def selective(
    confidence: Sequence[float], correct: Sequence[bool], threshold: float, novel: Sequence[bool] | None = None
) -> dict[str, float | None]:
    """Coverage and accuracy of the rows decided: top probability ≥ threshold and, with a guard, not novel."""
    conf, ok = np.asarray(confidence, dtype=float), np.asarray(correct, dtype=bool)
    decided = conf >= threshold
    if novel is not None:
        decided &= ~np.asarray(novel, dtype=bool)
    return {
        "coverage": round(float(decided.mean()), 4) if len(conf) else 0.0,
        "selective_accuracy": round(float(ok[decided].mean()), 4) if decided.any() else None,
    }


def grouped_accuracy(keys: Iterable[Iterable[str]], correct: Sequence[bool]) -> dict[str, float]:
    """Accuracy per key, where each row may carry several keys (tags)."""
    hits: dict[str, list[bool]] = defaultdict(list)
    for ks, ok in zip(keys, correct, strict=True):
        for k in ks:
            hits[k].append(bool(ok))
    return {k: round(sum(v) / len(v), 4) for k, v in sorted(hits.items())}


def confusion(expected: Sequence[str], got: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """Rows: expected label; columns: predicted label."""
    table = {a: dict.fromkeys(labels, 0) for a in labels}
    for a, b in zip(expected, got, strict=True):
        if a in table and b in table[a]:
            table[a][b] += 1
    return table
