"""Gated promotion: a candidate classifier replaces the registry's current one only if, on the fixed held-out set,
its accuracy is not lower and no type loses more than 2 points. Both models are scored now, on the same rows, by
the artifacts themselves; the decision is logged (`classify.promotion`) and kept beside the candidate."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from assist.classify.embedding import EmbeddingLayer
from assist.classify.registry import RegistryError
from assist.logs import get_logger
from assist.offline.classify.data import examples_digest
from assist.offline.classify.train import evaluate

if TYPE_CHECKING:
    from assist.classify.model import ClassifierModel
    from assist.classify.registry import Registry
    from assist.embed.base import Embedder
    from assist.offline.classify.data import Example

log = get_logger(__name__)
#: the most accuracy one type may lose against the current model (2 points)
MAX_TYPE_DROP = 0.02


def gate(candidate: dict[str, Any], current: dict[str, Any] | None) -> list[str]:
    """Why the candidate may not replace the current model; none means it may. Arguments: `train.scores` figures."""
    if current is None:
        return []
    reasons = []
    if candidate["accuracy"] < current["accuracy"]:
        reasons.append(f"held-out accuracy {candidate['accuracy']:.4f} < current {current['accuracy']:.4f}")
    for label, before in current["by_label"].items():
        after = candidate["by_label"].get(label, 0.0)
        if round(before - after, 4) > MAX_TYPE_DROP:
            reasons.append(f"{label} loses {(before - after) * 100:.1f} points ({before:.4f} → {after:.4f})")
    return reasons


def promote(
    registry: Registry, candidate: ClassifierModel, holdout: list[Example], embedder: Embedder, holdout_path: str
) -> dict[str, Any]:
    """Judge `candidate` against the current model, store it with the decision, and move `current` if it passed."""
    EmbeddingLayer(candidate, embedder)  # refuses what the classify path could not serve: wrong embedder or labels
    pointer = registry.current()
    if pointer is not None and pointer.version == candidate.version:
        raise RegistryError(f"{candidate.version} is already the current model of {registry.root}")
    vectors = embedder.embed([e.text for e in holdout])
    figures = {"candidate": evaluate(candidate, holdout, vectors), "current": None}
    if pointer is not None:
        current = registry.load(pointer.version)
        EmbeddingLayer(current, embedder)  # figures from another vector space would mean nothing
        figures["current"] = evaluate(current, holdout, vectors)
    reasons = gate(figures["candidate"], figures["current"])
    decision: dict[str, Any] = {
        "promoted": not reasons,
        "candidate": candidate.version,
        "current": pointer.version if pointer else None,
        "reasons": reasons,
        "rule": {"accuracy": "not lower than current", "max_type_drop": MAX_TYPE_DROP},
        "holdout": {"path": holdout_path, "n": len(holdout), "sha256": examples_digest(holdout)},
        "metrics": figures,
        "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "registry": registry.root,
        "artifact": registry.add(candidate),
    }
    decision["decision"] = registry.record(candidate.version, decision)
    if not reasons:
        registry.make_current(candidate.version)  # last: the pointer never names a model stored without its decision
    log.info(
        "classify.promotion",
        promoted=decision["promoted"],
        candidate=candidate.version,
        current=decision["current"],
        reasons=decision["reasons"],
        candidate_accuracy=figures["candidate"]["accuracy"],
        current_accuracy=figures["current"]["accuracy"] if figures["current"] else None,
        candidate_by_label=figures["candidate"]["by_label"],
        current_by_label=figures["current"]["by_label"] if figures["current"] else None,
        holdout_n=len(holdout),
        holdout_sha256=decision["holdout"]["sha256"][:12],
        registry=registry.root,
    )
    return decision
