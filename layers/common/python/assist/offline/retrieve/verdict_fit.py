"""Fitting the uncertainty verdict's weights and threshold on several development corpora (ADR 0082).

A question's evidence is what one search and the corpus vocabulary said about it: a reason decided without
the score (no passage, only loose passages), or the five signals the score weighs (`retrieve/verdict.py`).
The verdict under any weights is then arithmetic, so a fit is a search over a grid of weights:

- for each candidate (centrality, coverage, absent, named) weight, the threshold is the highest one that
  flags at most `margin × answerable` of every corpus's answerable questions (the allowance is shared by
  no corpus: each must keep to it);
- the candidate kept meets the most off-topic and absent targets (≥ 0.90, ≥ 0.60) over the corpora, then
  has the best worst ratio to its target, then the highest mean share flagged. (Maximising the worst ratio
  alone let one corpus's hard rows trade away every other target: ADR 0082.)
- the named weight's grid ends with 5: a name the corpus lacks then decides alone.

The margin (a fit holds answerable questions at half the share allowed) is there because a corpus left out
of the fit sits at another place on the score's scale: ADR 0082 gives the leave-one-corpus-out figures
with and without it. numpy only.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from assist.retrieve.verdict import Weights

#: the grid of each weight; the similarity's weight is 1 (the scale)
GRID = {
    "centrality": tuple(np.round(np.arange(0.0, 2.01, 0.25), 2)),
    "coverage": tuple(np.round(np.arange(0.0, 0.81, 0.1), 2)),
    "absent": tuple(np.round(np.arange(0.0, 2.01, 0.25), 2)),
    "named": (*np.round(np.arange(0.0, 1.01, 0.1), 2), 5.0),
}
SIGNALS = 5  # similarity, centrality, coverage, absent, named


@dataclass(frozen=True)
class Evidence:
    group: str  # answerable, off-topic, absent
    source: str  # the file the question came from
    id: str
    text: str
    confidence: str
    fixed: str | None  # the reason decided without the score, if any
    signals: tuple[float, ...] | None  # similarity, centrality, coverage, absent, named: when the score applies
    unknown: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Evidence:
        signals = row.get("signals")
        return cls(
            **{**row, "signals": tuple(signals) if signals is not None else None, "unknown": tuple(row["unknown"])}
        )


@dataclass(frozen=True)
class Targets:
    answerable: float = 0.05  # at most this share of answerable questions flagged
    off_topic: float = 0.90  # at least
    absent: float = 0.60  # at least
    margin: float = 0.5  # a fit allows answerable flags up to margin × answerable on each corpus


@dataclass
class _Set:
    scored: np.ndarray  # signals of the scored rows (m × 5)
    group: np.ndarray  # group of the scored rows
    fixed: dict[str, int]  # rows flagged without the score, per group
    n: dict[str, int]  # rows per group


def _arrays(rows: list[Evidence]) -> _Set:
    scored = [e for e in rows if e.signals is not None and not e.fixed]
    n = {g: sum(e.group == g for e in rows) for g in ("answerable", "off-topic", "absent")}
    fixed = {g: sum(e.group == g and bool(e.fixed) for e in rows) for g in n}
    signals = np.asarray([e.signals for e in scored], dtype=np.float64).reshape(len(scored), SIGNALS)
    return _Set(signals, np.asarray([e.group for e in scored]), fixed, n)


def flagged(rows: list[Evidence], w: Weights) -> np.ndarray:
    """Which rows the verdict under `w` calls uncertain."""
    out = np.zeros(len(rows), dtype=bool)
    for i, e in enumerate(rows):
        if e.fixed:
            out[i] = True
        elif e.signals is not None:
            out[i] = w.score(*e.signals) < w.threshold
    return out


def fit(found: dict[str, list[Evidence]], targets: Targets) -> tuple[Weights, dict[str, Any]]:
    """The weights and threshold that meet the targets best on every one of these corpora (see the module)."""
    sets = {name: _arrays(rows) for name, rows in found.items()}
    combos = np.asarray(list(itertools.product(*GRID.values())), dtype=np.float64)  # c × 4
    # score = similarity + c·centrality + v·coverage − a·absent − n·named, for every row and candidate
    signs = np.asarray([1.0, 1.0, -1.0, -1.0])
    scores = {name: s.scored[:, :1] + (s.scored[:, 1:] * signs) @ combos.T for name, s in sets.items()}  # m × c
    threshold = np.min(np.vstack([_threshold(scores[name], s, targets) for name, s in sets.items()]), axis=0)
    ratios, means = [], []
    for name, s in sets.items():
        below = scores[name] < threshold
        for group, target in (("off-topic", targets.off_topic), ("absent", targets.absent)):
            if s.n[group]:
                rate = (below[s.group == group].sum(axis=0) + s.fixed[group]) / s.n[group]
                ratios.append(rate / target)
                means.append(rate)
    ratio = np.vstack(ratios)
    met, worst, mean = (ratio >= 1.0 - 1e-9).sum(axis=0), ratio.min(axis=0), np.vstack(means).mean(axis=0)
    best = int(np.lexsort((-mean, -np.round(worst, 6), -met))[0])
    c, v, a, n = (float(x) for x in combos[best])
    weights = Weights(threshold=_down(float(threshold[best])), centrality=c, coverage=v, absent=a, named=n)
    return weights, {
        "targets_met": int(met[best]),
        "targets": int(ratio.shape[0]),
        "worst_ratio": round(float(worst[best]), 4),
        "candidates": len(combos),
        "sets": list(sets),
    }


def _threshold(scores: np.ndarray, s: _Set, targets: Targets) -> np.ndarray:
    """Per candidate, the highest cut flagging at most margin × answerable of this corpus's answerable rows."""
    answerable = scores[s.group == "answerable"]
    allowed = int(np.floor(targets.margin * targets.answerable * s.n["answerable"] + 1e-9)) - s.fixed["answerable"]
    if allowed < 0:
        return np.full(scores.shape[1], -np.inf)
    if allowed >= len(answerable):
        return np.full(scores.shape[1], np.inf)
    # flagged when score < t: the allowed-th smallest answerable score is the highest t flagging `allowed`
    return np.sort(answerable, axis=0)[allowed]


def _down(x: float) -> float:
    """Four decimals, rounded down: the row the cut was set at stays unflagged."""
    return float(np.floor(x * 1e4) / 1e4) if np.isfinite(x) else x
