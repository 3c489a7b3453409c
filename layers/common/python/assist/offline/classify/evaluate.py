"""`eval routing` (the cascade as deployed) and `classifier eval` (one model, with abstention) on labelled rows."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from assist.contracts import IntentEntry, QueryType
from assist.offline.classify.metrics import confusion, grouped_accuracy, reliability, selective
from assist.stats import percentile

if TYPE_CHECKING:
    from assist.classify.cascade import Cascade
    from assist.classify.model import ClassifierModel
    from assist.embed.base import Embedder
    from assist.offline.classify.data import Example

WORST = 20


def history_of(e: Example) -> list[IntentEntry]:
    return [IntentEntry(type=QueryType(t), topic=topic) for t, topic in e.history]


def eval_routing(cascade: Cascade, examples: list[Example]) -> dict[str, Any]:
    cascade.warm()
    cascade.classify("warm-up", [])  # the first ONNX run allocates; it is not a routing latency
    rows = []
    for e in examples:
        start = time.perf_counter()
        route = cascade.classify(e.text, history_of(e))
        ms = (time.perf_counter() - start) * 1000
        rows.append((e, route, ms))
    ok = [r.type.value == e.label for e, r, _ in rows]
    layers: dict[str, list[bool]] = defaultdict(list)
    for (_, r, _), hit in zip(rows, ok, strict=True):
        layers[r.layer].append(hit)
    times = [ms for _, _, ms in rows]
    misses = sorted((x for x, hit in zip(rows, ok, strict=True) if not hit), key=lambda x: -x[1].confidence)
    labels = [t.value for t in QueryType]
    return {
        "accuracy": round(sum(ok) / len(ok), 4) if ok else 0.0,
        "n": len(rows),
        "by_expected": grouped_accuracy([[e.label] for e in examples], ok),
        "by_tag": grouped_accuracy([e.tags for e in examples], ok),
        "by_layer": {k: {"n": len(v), "accuracy": round(sum(v) / len(v), 4)} for k, v in sorted(layers.items())},
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "confusion": confusion([e.label for e in examples], [r.type.value for _, r, _ in rows], labels),
        "misclassified": [
            {
                "id": e.id,
                "message": e.text[:100],
                "history": [t for t, _ in e.history],
                "expected": e.label,
                "got": r.type.value,
                "layer": r.layer,
                "confidence": round(r.confidence, 3),
                "reason": r.reason,
            }
            for e, r, _ in misses[:WORST]
        ],
    }


def eval_classifier(
    model: ClassifierModel, embedder: Embedder, examples: list[Example], threshold: float | None = None
) -> dict[str, Any]:
    """Rows whose label is not among the model's classes should be abstained on (p < threshold, or novel to the
    guard); the guard's own abstentions are counted apart."""
    th = model.threshold if threshold is None else threshold
    embedder.embed(["warm-up"])
    known: list[tuple[Example, Any]] = []
    unknown: list[Any] = []
    times = []
    for e in examples:
        start = time.perf_counter()
        pred = model.predict(embedder.embed([e.text])[0], e.text, e.history_types)
        times.append((time.perf_counter() - start) * 1000)
        if e.label in model.classes:
            known.append((e, pred))
        else:
            unknown.append(pred)
    ok = [p.label == e.label for e, p in known]
    top = [p.p for _, p in known]
    novel = [p.novel for _, p in known]
    out: dict[str, Any] = {
        "accuracy": round(sum(ok) / len(ok), 4) if ok else None,
        "threshold": th,
        **selective(top, ok, th, novel),
        "abstain_recall": round(sum(not p.decides(th) for p in unknown) / len(unknown), 4) if unknown else None,
        "guard": {
            "threshold": model.guard_threshold,
            # abstentions the guard made that the probability alone would not have
            "known_abstained": sum(p.novel and p.p >= th for _, p in known),
            "unknown_abstained": sum(p.novel and p.p >= th for p in unknown),
        }
        if model.guard_threshold is not None
        else None,
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "n": len(examples),
        "n_known": len(known),
        "n_unknown": len(unknown),
        "reliability": reliability(top, ok),
        "confusion": confusion([e.label for e, _ in known], [p.label for _, p in known], list(model.classes)),
        "model": {"path": model.source, "version": model.version, "embedder": model.embedder_id},
    }
    if any(e.tags for e, _ in known):
        out["by_tag"] = grouped_accuracy([e.tags for e, _ in known], ok)
    return out
