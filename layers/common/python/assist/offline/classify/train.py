"""Training of the embedding classifier (scikit-learn; never imported by the classify path).

1. Features: the message embedding plus word and character TF-IDF (`features.py`).
2. Heads: the labels, plus `@inherit:TYPE` for routing rows tagged `deictic` whose label TYPE is the
   type of the previous non-conversational turn (data/routing/README.md, deictic convention 2), and
   the prior that a self-contained row follows a turn of each type, which weighs those references
   against the message's own classes at inference (`model.resolve`, ADR 0015).
3. Grouped, stratified K-fold cross-validation gives out-of-fold logits; one temperature fitted on
   them calibrates the probabilities (ADR 0011). The final model is fitted on every row. Rows carry a
   weight (exported labels count less than seed rows, see `data.py`) in both fits.
4. The novelty guard (ADR 0041): one centroid of the embeddings per class, and a similarity threshold set from the
   training rows' leave-one-out similarities (and, when given, messages out of scope: `fit_guard`).
5. The artifact is built, re-loaded, and the held-out set (if any) is scored by the artifact
   itself, so the reported figures are those of the file that ships.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from assist.classify.artifact import (
    Artifact,
    Calibration,
    EmbeddingFeature,
    Features,
    Guard,
    History,
    TermFeature,
    Training,
)
from assist.classify.artifact import Embedder as ArtifactEmbedder
from assist.classify.features import Block, terms
from assist.classify.model import (
    CONVERSATIONAL,
    ClassifierModel,
    is_reference_head,
    previous_type,
    reference_head,
    resolve,
    softmax,
)
from assist.logs import get_logger
from assist.offline.classify.data import Example, examples_digest
from assist.offline.classify.gate import Rows, Targets, choose_held
from assist.offline.classify.metrics import confusion, ece, grouped_accuracy, reliability, selective
from assist.offline.classify.sk import sk

if TYPE_CHECKING:
    from assist.embed.base import Embedder

log = get_logger(__name__)
WEIGHTS = {"embedding": 1.0, "words": 1.0, "chars": 1.0}
DEFAULT_C = 10.0
MIN_DF = 2
DIGITS = 6
#: without out-of-scope rows, the guard passes every training row (leave-one-out): it refuses only messages less
#: like any class than the least typical training row is like its own (ADR 0041: a higher quantile cost routing
#: holdout rows the model decided correctly, and caught none it got wrong)
GUARD_QUANTILE = 0.0


def head_label(e: Example) -> str:
    """What the model learns for a row: its label, or `@inherit:TYPE` when it is a reference to the last TYPE turn."""
    prev = previous_type(e.history_types)
    if "deictic" in e.tags and e.label != CONVERSATIONAL and e.label == prev:
        return reference_head(e.label)
    return e.label


def history_prior(examples: list[Example], y: list[str], types: list[str]) -> dict[str, float]:
    """P(the previous non-conversational turn is TYPE | the row is not a reference), weighted, over all such rows
    (with or without a history): how often a self-contained message follows a turn of each type in training."""
    own = [(e, e.weight) for e, h in zip(examples, y, strict=True) if not is_reference_head(h)]
    total = sum(w for _, w in own) or 1.0
    return {t: round(sum(w for e, w in own if previous_type(e.history_types) == t) / total, DIGITS) for t in types}


def fit_guard(
    vectors: np.ndarray,
    labels: list[str],
    weights: np.ndarray,
    classes: list[str],
    guard_vectors: np.ndarray | None = None,
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Unit class centroids (weighted means of the unit embeddings) and the similarity threshold of the guard.

    Each training row is scored against its own class's centroid without itself (leave-one-out), so it is judged
    like a message the model never saw. Without out-of-scope rows the threshold passes all but GUARD_QUANTILE of
    them (all of them by default); with some (`guard_vectors`, never a class) it is the cut that best separates the
    two: the largest share of training rows passed minus share of out-of-scope rows passed (Youden's J), no target
    to tune.
    Returns (centroids, threshold, figures)."""
    centroids, loo, out = guard_similarities(vectors, labels, weights, classes, guard_vectors)
    figures: dict[str, Any] = {"method": "max cosine to a class centroid", "rows": len(loo)}
    if out is None:
        threshold = float(np.quantile(loo, GUARD_QUANTILE))
        figures["rule"] = f"quantile {GUARD_QUANTILE} of the training rows' leave-one-out similarity"
    else:
        cuts = np.unique(np.concatenate([loo, out]))
        passed_in = 1.0 - np.searchsorted(np.sort(loo), cuts, side="left") / len(loo)
        passed_out = 1.0 - np.searchsorted(np.sort(out), cuts, side="left") / len(out)
        threshold = float(cuts[int(np.argmax(passed_in - passed_out))])
        figures["rule"] = "Youden's J between training rows (leave-one-out) and out-of-scope rows"
    threshold = float(np.floor(threshold * 10**DIGITS) / 10**DIGITS)  # rounded down: the cut row still passes
    return centroids, threshold, figures | guard_pass_rates(loo, out, threshold)


def guard_pass_rates(loo: np.ndarray, out: np.ndarray | None, threshold: float) -> dict[str, Any]:
    """The guard's pass rates at a threshold: training rows passed (leave-one-out), out-of-scope rows refused."""
    figures: dict[str, Any] = {"threshold": threshold}
    figures["training_rows_passed"] = round(float(np.mean(loo >= threshold)), 4)
    if out is not None:
        figures["out_of_scope_rows"] = len(out)
        figures["out_of_scope_abstained"] = round(float(np.mean(out < threshold)), 4)
    return figures


def guard_similarities(
    vectors: np.ndarray,
    labels: list[str],
    weights: np.ndarray,
    classes: list[str],
    guard_vectors: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Unit class centroids; each training row's leave-one-out similarity to the nearest centroid; each
    out-of-scope row's similarity to the nearest centroid (None without such rows)."""
    unit = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    idx = np.array([classes.index(label) for label in labels])
    sums = np.zeros((len(classes), unit.shape[1]))
    np.add.at(sums, idx, unit * weights[:, None])
    centroids = sums / np.clip(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12, None)
    sims = unit @ centroids.T
    own = sums[idx] - unit * weights[:, None]
    own_norm = np.linalg.norm(own, axis=1)
    alone = own_norm < 1e-9  # a class of one row: nothing to compare it with, it counts as unlike its class
    own_sim = np.sum(unit * own, axis=1) / np.clip(own_norm, 1e-12, None)
    sims[np.arange(len(unit)), idx] = np.where(alone, -1.0, own_sim)
    loo = sims.max(axis=1)
    if guard_vectors is None or not len(guard_vectors):
        return centroids, loo, None
    g = guard_vectors / np.clip(np.linalg.norm(guard_vectors, axis=1, keepdims=True), 1e-12, None)
    return centroids, loo, (g @ centroids.T).max(axis=1)


def least_alike(vectors: np.ndarray, share: float, block: int = 2048) -> np.ndarray:
    """A mask of the `share` of rows whose nearest other row is least similar (cosine): the rows a held-out
    estimate should lean on when new rows are further from the training rows than these are from each other."""
    unit = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    nearest = np.empty(len(unit))
    for i in range(0, len(unit), block):
        sims = unit[i : i + block] @ unit.T
        sims[np.arange(len(sims)), np.arange(i, i + len(sims))] = -1.0  # not itself
        nearest[i : i + block] = sims.max(axis=1)
    return nearest <= np.quantile(nearest, share)


def _matrix(vectors: np.ndarray, docs: list[dict[str, list[str]]], blocks: dict[str, Block]):
    parts = [sk().sparse.csr_matrix(vectors * WEIGHTS["embedding"])]
    for name, block in blocks.items():
        rows = [block.transform(d[name]) for d in docs]
        indptr = np.cumsum([0] + [len(c) for c, _ in rows])
        data = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
        idx = np.concatenate([c for c, _ in rows]) if rows else np.zeros(0, dtype=np.int64)
        m = sk().sparse.csr_matrix((data, idx, indptr), shape=(len(docs), len(block)))
        parts.append(m * WEIGHTS[name])
    return sk().sparse.hstack(parts).tocsr()


def _fit(
    vectors: np.ndarray, docs: list[dict[str, list[str]]], y: list[str], w: np.ndarray, heads: list[str], c: float
):
    """Blocks fitted on these rows only, and the weighted logistic regression; returns (blocks, coef, intercept)."""
    blocks = {name: Block.fit([d[name] for d in docs], MIN_DF) for name in ("words", "chars")}
    lr = sk().linear_model.LogisticRegression(C=c, max_iter=5000)
    lr.fit(_matrix(vectors, docs, blocks), y, sample_weight=w)
    coef, intercept = lr.coef_, lr.intercept_
    if len(lr.classes_) == 2:  # one logit z for the second class; softmax([-z/2, z/2]) is its sigmoid
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.concatenate([-intercept / 2, intercept / 2])
    order = [list(lr.classes_).index(h) for h in heads]
    return blocks, coef[order], intercept[order]


def _logits(vectors, docs, blocks, coef, intercept) -> np.ndarray:
    return np.asarray(_matrix(vectors, docs, blocks) @ coef.T) + intercept


def _fit_temperature(
    logits: np.ndarray,
    heads: list[str],
    classes: list[str],
    examples: list[Example],
    prior: dict[str, float] | None = None,
) -> float:
    """The temperature minimising the weighted log loss of the final class probabilities on out-of-fold logits."""
    prev = [previous_type(e.history_types) for e in examples]
    truth = np.array([classes.index(e.label) for e in examples])
    w = np.array([e.weight for e in examples])

    def nll(log_t: float) -> float:
        probs, _ = resolve(softmax(logits / np.exp(log_t)), heads, classes, prev, prior)
        return float(np.average(-np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, None)), weights=w))

    return float(np.exp(sk().optimize.minimize_scalar(nll, bounds=(-3.0, 3.0), method="bounded").x))


def _folds(examples: list[Example], y: list[str], k: int):
    groups = [" ".join(e.text.lower().split()) for e in examples]  # one message never on both sides
    return (
        sk()
        .model_selection.StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=0)
        .split(np.zeros(len(y)), y, groups)
    )


def scores(
    examples: list[Example],
    probs: np.ndarray,
    classes: list[str],
    threshold: float,
    novel: list[bool] | None = None,
) -> dict[str, Any]:
    """Accuracy, selective figures, calibration and confusion of class probabilities against labels (`novel`: rows
    the guard abstains on)."""
    pred = [classes[i] for i in probs.argmax(axis=1)]
    truth = [e.label for e in examples]
    ok = [a == b for a, b in zip(pred, truth, strict=True)]
    top = probs.max(axis=1).tolist()
    out: dict[str, Any] = {
        "n": len(examples),
        "accuracy": round(float(np.mean(ok)), 4),
        **selective(top, ok, threshold, novel),
        "by_label": grouped_accuracy([[t] for t in truth], ok),
        "ece": ece(top, ok),
        "reliability": reliability(top, ok),
        "confusion": confusion(truth, pred, classes),
    }
    if any(e.tags for e in examples):
        out["by_tag"] = grouped_accuracy([e.tags for e in examples], ok)
    return out


def _oof_logits(vectors, docs, y, w, heads, c, splits, extra=None) -> np.ndarray:
    """Out-of-fold logits of the rows; with `extra` (vectors, docs of rows never trained on: out-of-scope
    messages), also theirs, each scored by one fold's model (dealt in turn), returned as a second array."""
    oof = np.zeros((len(y), len(heads)))
    splits = list(splits)
    more = None if extra is None else np.zeros((len(extra[1]), len(heads)))
    for f, (tr, te) in enumerate(splits):
        blocks, coef, intercept = _fit(vectors[tr], [docs[i] for i in tr], [y[i] for i in tr], w[tr], heads, c)
        oof[te] = _logits(vectors[te], [docs[i] for i in te], blocks, coef, intercept)
        mine = np.arange(f, len(more), len(splits)) if more is not None else []
        if more is not None and len(mine):  # fewer extra rows than folds: some folds score none
            more[mine] = _logits(extra[0][mine], [extra[1][i] for i in mine], blocks, coef, intercept)
    return oof if more is None else (oof, more)


def topic_folds(vectors: np.ndarray, folds: int, topics: int, seed: int, cluster_rows: int | None = None):
    """Folds that hold out whole topics: k-means clusters of the message embeddings (fitted on the first
    `cluster_rows` rows, or all), every row in its nearest cluster, the clusters dealt to the folds in a random order.
    A proxy for messages about topics the seed does not have (ADR 0013, ADR 0015)."""
    fit_on = vectors if cluster_rows is None else vectors[:cluster_rows]
    groups = sk().cluster.KMeans(n_clusters=topics, n_init=10, random_state=seed).fit(fit_on).predict(vectors)
    fold_of = np.empty(topics, dtype=np.int64)
    fold_of[np.random.RandomState(seed).permutation(topics)] = np.arange(topics) % folds
    fold = fold_of[groups]
    return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(folds)]


def _mean_scores(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The numeric figures of several `scores` runs averaged (selective accuracy over the runs that have one)."""
    keys = ("accuracy", "coverage", "selective_accuracy", "ece")
    out: dict[str, Any] = {"n": runs[0]["n"], "runs": len(runs)}
    for key in keys:
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = round(float(np.mean(values)), 4) if values else None
    for group in ("by_label", "by_tag"):
        if group in runs[0]:
            out[group] = {t: round(float(np.mean([r[group][t] for r in runs])), 4) for t in runs[0][group]}
    out["accuracy_per_run"] = [r["accuracy"] for r in runs]
    return out


@dataclass(frozen=True)
class TrainingSet:
    """What both training and cross-validation start from, one row per example."""

    classes: list[str]  # the labels, sorted
    y: list[str]  # each row's head: its label, or `@inherit:TYPE` for a reference to the previous turn
    w: np.ndarray  # row weights
    heads: list[str]  # the classes, then the reference heads
    prior: dict[str, float] | None  # the history prior of the reference heads (None without any)
    docs: list[dict[str, list[str]]]  # word and character terms
    vectors: np.ndarray  # the embeddings

    @classmethod
    def of(cls, examples: list[Example], embedder: Embedder) -> TrainingSet:
        classes = sorted({e.label for e in examples})
        y = [head_label(e) for e in examples]
        references = sorted({h for h in y if is_reference_head(h)})
        return cls(
            classes=classes,
            y=y,
            w=np.array([e.weight for e in examples]),
            heads=classes + references,
            prior=history_prior(examples, y, [h.partition(":")[2] for h in references]) if references else None,
            docs=[terms(e.text) for e in examples],
            vectors=embedder.embed([e.text for e in examples]),
        )


def cross_validate(
    examples: list[Example],
    embedder: Embedder,
    *,
    c: float = DEFAULT_C,
    threshold: float = 0.85,
    folds: int = 5,
    topics: int = 30,
    seeds: int = 3,
    cluster_rows: int | None = None,
) -> dict[str, Any]:
    """How training generalises, without a held-out set: the message-grouped CV that calibrates `train` (the same
    message never on both sides) and a topic-clustered CV (`topic_folds`, `seeds` clusterings, figures averaged),
    both with the temperature of the message-grouped CV, as `train` ships it. With `cluster_rows`, the clusters are
    fitted on the first rows only and the figures are also given for those rows: two versions of a seed that share
    their first rows are then compared on the same folds of those rows."""
    t = TrainingSet.of(examples, embedder)
    prev = [previous_type(e.history_types) for e in examples]
    k = min(folds, min(Counter(t.y).values()))
    oof = _oof_logits(t.vectors, t.docs, t.y, t.w, t.heads, c, _folds(examples, t.y, k))
    temperature = _fit_temperature(oof, t.heads, t.classes, examples, t.prior)

    def probs(logits: np.ndarray) -> np.ndarray:
        return resolve(softmax(logits / temperature), t.heads, t.classes, prev, t.prior)[0]

    out: dict[str, Any] = {
        "rows": len(examples),
        "temperature": round(temperature, 4),
        "history_prior": t.prior,
        "message_grouped": scores(examples, probs(oof), t.classes, threshold),
    }
    runs, first = [], []
    for seed in range(seeds):
        p = probs(
            _oof_logits(
                t.vectors, t.docs, t.y, t.w, t.heads, c, topic_folds(t.vectors, folds, topics, seed, cluster_rows)
            )
        )
        runs.append(scores(examples, p, t.classes, threshold))
        if cluster_rows:
            first.append(scores(examples[:cluster_rows], p[:cluster_rows], t.classes, threshold))
    out["topic_clustered"] = {"topics": topics, "folds": folds, **_mean_scores(runs)}
    if cluster_rows:
        out["topic_clustered_first_rows"] = {"cluster_rows": cluster_rows, **_mean_scores(first)}
    return out


@dataclass(frozen=True)
class Calibrated:
    """What the out-of-fold logits give: the temperature, the CV figures, and for the gate the calibrated
    probabilities of the training rows and the out-of-fold logits of the guard rows."""

    cv: dict[str, Any]
    temperature: float = 1.0
    probs: np.ndarray | None = None
    guard_logits: np.ndarray | None = None


def calibrate(
    examples: list[Example], t: TrainingSet, c: float, k: int, threshold: float, guard_rows: tuple | None
) -> Calibrated:
    """Out-of-fold logits (what the model says about rows it never saw) calibrate the probabilities and give the CV
    figures; with `guard_rows` (vectors, terms) each out-of-scope row is scored by one fold's model too."""
    if k < 2:
        return Calibrated({"folds": k})
    oof = _oof_logits(t.vectors, t.docs, t.y, t.w, t.heads, c, _folds(examples, t.y, k), guard_rows)
    oof, guard_oof = oof if guard_rows is not None else (oof, None)
    temperature = _fit_temperature(oof, t.heads, t.classes, examples, t.prior)
    prev = [previous_type(e.history_types) for e in examples]
    raw, _ = resolve(softmax(oof), t.heads, t.classes, prev, t.prior)
    calibrated, _ = resolve(softmax(oof / temperature), t.heads, t.classes, prev, t.prior)
    cv = {
        "folds": k,
        "uncalibrated": scores(examples, raw, t.classes, threshold),
        "calibrated": scores(examples, calibrated, t.classes, threshold),
    }
    return Calibrated(cv, temperature, calibrated, guard_oof)


def gate_thresholds(
    examples: list[Example],
    t: TrainingSet,
    guard: list[Example],
    guard_vectors: np.ndarray,
    cal: Calibrated,
    targets: Targets,
    guard_figures: dict[str, Any],
    far_share: float | None = None,
) -> tuple[float, float, dict[str, Any], dict[str, Any]]:
    """Both thresholds chosen together by cross-validation over training and guard rows (ADR 0056), the margin
    set on the `far_share` of training rows least like the others when given (ADR 0085).
    Returns (probability threshold, guard threshold, the guard's figures, the gate's figures)."""
    assert cal.probs is not None
    assert cal.guard_logits is not None
    _, loo, out = guard_similarities(t.vectors, [e.label for e in examples], t.w, t.classes, guard_vectors)
    assert out is not None
    truth = np.array([t.classes.index(e.label) for e in examples])
    prev = [previous_type(e.history_types) for e in guard]
    guard_probs, _ = resolve(softmax(cal.guard_logits / cal.temperature), t.heads, t.classes, prev, t.prior)
    known = Rows(cal.probs.max(axis=1), loo, cal.probs.argmax(axis=1) == truth)
    far = least_alike(t.vectors, far_share) if far_share else None
    threshold, guard_threshold, figures = choose_held(known, Rows(guard_probs.max(axis=1), out), targets, far=far)
    guard_figures = {
        **guard_figures,
        **guard_pass_rates(loo, out, guard_threshold),
        "rule": "chosen with the probability threshold by cross-validation over training and guard rows",
    }
    gate = {
        "targets": {"selective_accuracy": targets.selective_accuracy, "abstention": targets.abstention},
        "threshold": threshold,
        "guard_threshold": guard_threshold,
        **figures,
    }
    return threshold, guard_threshold, guard_figures, gate


def features(t: TrainingSet, blocks: dict[str, Block], dim: int) -> Features:
    """The artifact's feature blocks: the embedding, the fitted TF-IDF vocabularies, the history prior."""
    terms_ = {
        name: TermFeature(weight=WEIGHTS[name], vocab=list(b.vocab), idf=np.round(b.idf, DIGITS).tolist())
        for name, b in blocks.items()
    }
    method = "typed @inherit heads weighed by Bayes' rule against the own classes"
    return Features(
        embedding=EmbeddingFeature(weight=WEIGHTS["embedding"], dim=dim),
        words=terms_["words"],
        chars=terms_["chars"],
        history=History(method=method, prior=t.prior) if t.prior is not None else None,
    )


def training_record(
    examples: list[Example], t: TrainingSet, guard: list[Example] | None, sources: list | None, c: float, started: float
) -> Training:
    return Training(
        rows=len(examples),
        heads=dict(sorted(Counter(t.y).items())),
        data_sha256=examples_digest(examples),
        sources=sources or [],
        guard_rows=len(guard or []),
        guard_sha256=examples_digest(guard) if guard else None,
        c=c,
        min_df=MIN_DF,
        trained_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 1),
    )


def artifact_of(
    t: TrainingSet,
    embedder: Embedder,
    fitted: tuple[dict[str, Block], np.ndarray, np.ndarray],
    threshold: float,
    temperature: float,
    guard: Guard,
    training: Training,
    metrics: dict[str, Any],
) -> Artifact:
    """The final model (`_fit` on every row: blocks, coefficients, intercepts) as its artifact."""
    blocks, coef, intercept = fitted
    return Artifact(
        classes=t.classes,
        heads=t.heads,
        embedder=ArtifactEmbedder(id=embedder.id, dim=embedder.dim),
        threshold=threshold,
        calibration=Calibration(temperature=round(temperature, DIGITS)),
        features=features(t, blocks, embedder.dim),
        guard=guard,
        coef=np.round(coef, DIGITS).tolist(),
        intercept=np.round(intercept, DIGITS).tolist(),
        training=training,
        metrics=metrics,
    )


def train(
    examples: list[Example],
    embedder: Embedder,
    *,
    c: float = DEFAULT_C,
    threshold: float = 0.85,
    folds: int = 5,
    holdout: list[Example] | None = None,
    sources: list[dict[str, Any]] | None = None,
    guard: list[Example] | None = None,
    targets: Targets | None = None,
    far_share: float | None = None,
) -> tuple[ClassifierModel, dict[str, Any]]:
    """`guard`: out-of-scope messages (their labels are ignored); they only set the novelty guard's threshold.
    `targets` (with `guard`): both thresholds are chosen by cross-validation over the training and guard rows to
    meet them at the highest coverage (ADR 0056), instead of `threshold` and Youden's cut; `far_share`: the margin
    is set on that share of the training rows least like the others (ADR 0085)."""
    started = time.perf_counter()
    if len(classes := sorted({e.label for e in examples})) < 2:
        raise ValueError(f"training needs at least two labels; got {classes}")
    t = TrainingSet.of(examples, embedder)
    log.info("classifier.train_embedded", rows=len(examples), seconds=round(time.perf_counter() - started, 1))
    k = min(folds, min(Counter(t.y).values()))
    guard_vectors = embedder.embed([e.text for e in guard]) if guard else None
    gated = targets is not None and bool(guard) and guard_vectors is not None and k >= 2
    cal = calibrate(examples, t, c, k, threshold, (guard_vectors, [terms(e.text) for e in guard]) if gated else None)

    fitted = _fit(t.vectors, t.docs, t.y, t.w, t.heads, c)
    centroids, guard_threshold, guard_figures = fit_guard(
        t.vectors, [e.label for e in examples], t.w, t.classes, guard_vectors
    )
    metrics: dict[str, Any] = {"cv": cal.cv, "guard": guard_figures}
    if gated:
        threshold, guard_threshold, metrics["guard"], metrics["gate"] = gate_thresholds(
            examples, t, guard, guard_vectors, cal, targets, guard_figures, far_share
        )
    guard_part = Guard(threshold=guard_threshold, centroids=np.round(centroids, DIGITS).tolist())
    record = training_record(examples, t, guard, sources, c, started)
    artifact = artifact_of(t, embedder, fitted, threshold, cal.temperature, guard_part, record, metrics)
    if holdout:  # scored by the artifact itself: the figures are those of the file that ships
        figures = evaluate(ClassifierModel(artifact), holdout, embedder.embed([e.text for e in holdout]))
        artifact = msgspec.structs.replace(artifact, metrics={**metrics, "holdout": figures})
    return ClassifierModel(artifact), artifact.metrics


def evaluate(model: ClassifierModel, examples: list[Example], vectors: np.ndarray) -> dict[str, Any]:
    """The artifact's own figures on labelled rows whose labels are all among its classes."""
    classes = list(model.classes)
    preds = [model.predict(v, e.text, e.history_types) for v, e in zip(vectors, examples, strict=True)]
    probs = np.array([[p.probs[c] for c in classes] for p in preds])
    return scores(examples, probs, classes, model.threshold, [p.novel for p in preds])
