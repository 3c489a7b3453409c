"""Training of the embedding classifier (scikit-learn; never imported by the classify path).

1. Features: the message embedding plus word and character TF-IDF (`features.py`).
2. Heads: the labels, plus `@inherit` for routing rows tagged `deictic` whose label is the type
   of the previous non-conversational turn (data/routing/README.md, deictic convention 2).
3. Grouped, stratified K-fold cross-validation gives out-of-fold logits; one temperature fitted on
   them calibrates the probabilities (ADR 0012). The final model is fitted on every row. Rows carry a
   weight (exported labels count less than seed rows, see `data.py`) in both fits.
4. The artifact is built, re-loaded, and the held-out set (if any) is scored by the artifact
   itself, so the reported figures are those of the file that ships.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from assist.classify.data import Example, examples_digest
from assist.classify.features import Block, terms
from assist.classify.metrics import confusion, ece, grouped_accuracy, reliability, selective
from assist.classify.model import CONVERSATIONAL, FORMAT, INHERIT, ClassifierModel, previous_type, resolve, softmax
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.embed.base import Embedder

log = get_logger(__name__)
WEIGHTS = {"embedding": 1.0, "words": 1.0, "chars": 1.0}
DEFAULT_C = 10.0
MIN_DF = 2
DIGITS = 6


def head_label(e: Example) -> str:
    """What the model learns for a row: its label, or `@inherit` when it is a reference to the last turn."""
    prev = previous_type(e.history_types)
    if "deictic" in e.tags and e.label != CONVERSATIONAL and e.label == prev:
        return INHERIT
    return e.label


def _matrix(vectors: np.ndarray, docs: list[dict[str, list[str]]], blocks: dict[str, Block]):
    from scipy import sparse

    parts = [sparse.csr_matrix(vectors * WEIGHTS["embedding"])]
    for name, block in blocks.items():
        rows = [block.transform(d[name]) for d in docs]
        indptr = np.cumsum([0] + [len(c) for c, _ in rows])
        data = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
        idx = np.concatenate([c for c, _ in rows]) if rows else np.zeros(0, dtype=np.int64)
        m = sparse.csr_matrix((data, idx, indptr), shape=(len(docs), len(block)))
        parts.append(m * WEIGHTS[name])
    return sparse.hstack(parts).tocsr()


def _fit(
    vectors: np.ndarray, docs: list[dict[str, list[str]]], y: list[str], w: np.ndarray, heads: list[str], c: float
):
    """Blocks fitted on these rows only, and the weighted logistic regression; returns (blocks, coef, intercept)."""
    from sklearn.linear_model import LogisticRegression

    blocks = {name: Block.fit([d[name] for d in docs], MIN_DF) for name in ("words", "chars")}
    lr = LogisticRegression(C=c, max_iter=5000)
    lr.fit(_matrix(vectors, docs, blocks), y, sample_weight=w)
    coef, intercept = lr.coef_, lr.intercept_
    if len(lr.classes_) == 2:  # one logit z for the second class; softmax([-z/2, z/2]) is its sigmoid
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.concatenate([-intercept / 2, intercept / 2])
    order = [list(lr.classes_).index(h) for h in heads]
    return blocks, coef[order], intercept[order]


def _logits(vectors, docs, blocks, coef, intercept) -> np.ndarray:
    return np.asarray(_matrix(vectors, docs, blocks) @ coef.T) + intercept


def _fit_temperature(logits: np.ndarray, heads: list[str], classes: list[str], examples: list[Example]) -> float:
    """The temperature minimising the weighted log loss of the final class probabilities on out-of-fold logits."""
    from scipy.optimize import minimize_scalar

    prev = [previous_type(e.history_types) for e in examples]
    truth = np.array([classes.index(e.label) for e in examples])
    w = np.array([e.weight for e in examples])

    def nll(log_t: float) -> float:
        probs, _ = resolve(softmax(logits / np.exp(log_t)), heads, classes, prev)
        return float(np.average(-np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, None)), weights=w))

    return float(np.exp(minimize_scalar(nll, bounds=(-3.0, 3.0), method="bounded").x))


def _folds(examples: list[Example], y: list[str], k: int):
    from sklearn.model_selection import StratifiedGroupKFold

    groups = [" ".join(e.text.lower().split()) for e in examples]  # one message never on both sides
    return StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=0).split(np.zeros(len(y)), y, groups)


def scores(examples: list[Example], probs: np.ndarray, classes: list[str], threshold: float) -> dict[str, Any]:
    """Accuracy, selective figures, calibration and confusion of class probabilities against labels."""
    pred = [classes[i] for i in probs.argmax(axis=1)]
    truth = [e.label for e in examples]
    ok = [a == b for a, b in zip(pred, truth, strict=True)]
    top = probs.max(axis=1).tolist()
    out: dict[str, Any] = {
        "n": len(examples),
        "accuracy": round(float(np.mean(ok)), 4),
        **selective(top, ok, threshold),
        "by_label": grouped_accuracy([[t] for t in truth], ok),
        "ece": ece(top, ok),
        "reliability": reliability(top, ok),
        "confusion": confusion(truth, pred, classes),
    }
    if any(e.tags for e in examples):
        out["by_tag"] = grouped_accuracy([e.tags for e in examples], ok)
    return out


def train(
    examples: list[Example],
    embedder: Embedder,
    *,
    c: float = DEFAULT_C,
    threshold: float = 0.85,
    folds: int = 5,
    holdout: list[Example] | None = None,
    sources: list[dict[str, Any]] | None = None,
) -> tuple[ClassifierModel, dict[str, Any]]:
    started = time.perf_counter()
    classes = sorted({e.label for e in examples})
    if len(classes) < 2:
        raise ValueError(f"training needs at least two labels; got {classes}")
    y = [head_label(e) for e in examples]
    w = np.array([e.weight for e in examples])
    heads = classes + ([INHERIT] if INHERIT in y else [])
    docs = [terms(e.text) for e in examples]
    vectors = embedder.embed([e.text for e in examples])
    log.info("classifier.train_embedded", rows=len(examples), seconds=round(time.perf_counter() - started, 1))

    # Out-of-fold logits: what the model says about rows it never saw, for calibration and metrics.
    k = min(folds, min(Counter(y).values()))
    cv: dict[str, Any] = {"folds": k}
    temperature = 1.0
    if k >= 2:
        oof = np.zeros((len(examples), len(heads)))
        for tr, te in _folds(examples, y, k):
            blocks, coef, intercept = _fit(vectors[tr], [docs[i] for i in tr], [y[i] for i in tr], w[tr], heads, c)
            oof[te] = _logits(vectors[te], [docs[i] for i in te], blocks, coef, intercept)
        temperature = _fit_temperature(oof, heads, classes, examples)
        prev = [previous_type(e.history_types) for e in examples]
        raw, _ = resolve(softmax(oof), heads, classes, prev)
        calibrated, _ = resolve(softmax(oof / temperature), heads, classes, prev)
        cv["uncalibrated"] = scores(examples, raw, classes, threshold)
        cv["calibrated"] = scores(examples, calibrated, classes, threshold)

    blocks, coef, intercept = _fit(vectors, docs, y, w, heads, c)
    doc = {
        "format": FORMAT,
        "classes": classes,
        "heads": heads,
        "embedder": {"id": embedder.id, "dim": embedder.dim},
        "threshold": threshold,
        "calibration": {"method": "temperature", "temperature": round(temperature, DIGITS)},
        "features": {
            "embedding": {"weight": WEIGHTS["embedding"], "dim": embedder.dim},
            **{
                name: {
                    "weight": WEIGHTS[name],
                    "vocab": list(b.vocab),
                    "idf": np.round(b.idf, DIGITS).tolist(),
                }
                for name, b in blocks.items()
            },
            "history": "previous non-conversational type via @inherit" if INHERIT in heads else None,
        },
        "coef": np.round(coef, DIGITS).tolist(),
        "intercept": np.round(intercept, DIGITS).tolist(),
        "training": {
            "rows": len(examples),
            "heads": dict(sorted(Counter(y).items())),
            "data_sha256": examples_digest(examples),
            "sources": sources or [],
            "C": c,
            "min_df": MIN_DF,
            "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - started, 1),
        },
        "metrics": {"cv": cv},
    }
    model = ClassifierModel(doc)
    if holdout:
        doc["metrics"]["holdout"] = evaluate(model, holdout, embedder.embed([e.text for e in holdout]))
        model = ClassifierModel(doc)
    return model, doc["metrics"]


def evaluate(model: ClassifierModel, examples: list[Example], vectors: np.ndarray) -> dict[str, Any]:
    """The artifact's own figures on labelled rows whose labels are all among its classes."""
    classes = list(model.classes)
    probs = np.array(
        [
            [model.predict(v, e.text, e.history_types).probs[c] for c in classes]
            for v, e in zip(vectors, examples, strict=True)
        ]
    )
    return scores(examples, probs, classes, model.threshold)
