"""`assist classifier baseline`: the plain baseline the gate must beat (ADR 0056) — scikit-learn's logistic
regression on the message embeddings alone, no calibration, no guard — with its probability threshold chosen by
the same cross-validation as the classifier's gate (`gate.choose`, the guard left open), scored on the same
evaluation rows. Rows whose label is not a training class count as to abstain on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from assist.offline.classify.gate import Rows, Targets, choose_held
from assist.offline.classify.sk import sk

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.offline.classify.data import Example

FOLDS = 5


def plain_lr(
    train: list[Example],
    guard: list[Example],
    evaluation: list[Example],
    embedder: Embedder,
    targets: Targets,
    c: float = 1.0,
) -> dict[str, Any]:
    lr_of, folds = sk().linear_model.LogisticRegression, sk().model_selection.StratifiedKFold

    x = embedder.embed([e.text for e in train])
    y = np.array([e.label for e in train])
    xg = embedder.embed([e.text for e in guard])
    classes = sorted(set(y))
    oof = np.zeros((len(y), len(classes)))
    guard_p = np.zeros((len(guard), len(classes)))
    for f, (tr, te) in enumerate(folds(FOLDS, shuffle=True, random_state=0).split(x, y)):
        lr = lr_of(C=c, max_iter=2000).fit(x[tr], y[tr])
        oof[te] = lr.predict_proba(x[te])
        mine = np.arange(f, len(guard), FOLDS)  # each guard row scored by one fold's model, dealt in turn
        if len(mine):  # fewer guard rows than folds: some folds score none
            guard_p[mine] = lr.predict_proba(xg[mine])
    open_guard = np.ones(len(y)), np.ones(len(guard))  # no guard: every row passes it
    known = Rows(oof.max(axis=1), open_guard[0], np.array(classes)[oof.argmax(axis=1)] == y)
    unknown = Rows(guard_p.max(axis=1), open_guard[1])
    threshold, _, chosen = choose_held(known, unknown, targets)
    final = lr_of(C=c, max_iter=2000).fit(x, y)
    p = final.predict_proba(embedder.embed([e.text for e in evaluation]))
    top, pred = p.max(axis=1), np.array(classes)[p.argmax(axis=1)]
    truth = np.array([e.label for e in evaluation])
    is_known = np.isin(truth, classes)
    decided = top >= threshold
    return {
        "model": f"scikit-learn LogisticRegression(C={c}) on the embeddings, max probability ≥ threshold",
        "threshold": threshold,
        "asked": chosen["asked"],
        "held": chosen["held"],
        "on_training_rows": chosen["on_all_rows"],
        "cross_validated": {k: v for k, v in chosen["cross_validated"].items() if k != "thresholds_per_fold"},
        "evaluation": {
            "n_known": int(is_known.sum()),
            "n_unknown": int((~is_known).sum()),
            "accuracy": round(float(np.mean(pred[is_known] == truth[is_known])), 4),
            "coverage": round(float(decided[is_known].mean()), 4),
            "selective_accuracy": round(float(np.mean(pred[is_known & decided] == truth[is_known & decided])), 4),
            "abstain_recall": round(float(1.0 - decided[~is_known].mean()), 4) if (~is_known).any() else None,
        },
    }
