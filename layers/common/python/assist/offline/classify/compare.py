"""`assist classifier compare`: a change to the routing seed or model, before and after, on the two figures
that must not drop (ADR 0057): the cascade's accuracy on the routing holdout with no LLM layer (report-only:
it is printed, never used to choose anything) and the seed's topic-clustered cross-validation.

The cross-validation of both seeds clusters and folds the rows they share at the start (the seed grows by
appending), so both are judged on the same folds of the same rows; its figures are deterministic (fixed seeds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.classify.build import build_cascade
from assist.offline.classify.evaluate import eval_routing
from assist.offline.classify.train import cross_validate

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.offline.classify.data import Example
    from assist.settings import Settings

#: (section, figure): what must not drop from before to after
GUARDED = (("holdout", "accuracy"), ("cv", "topic_clustered_accuracy"))


def shared_rows(before: list[Example], after: list[Example]) -> int:
    """How many leading rows the two seeds have in common (same text, label and history)."""
    n = 0
    for a, b in zip(before, after, strict=False):
        if (a.text, a.label, a.history) != (b.text, b.label, b.history):
            break
        n += 1
    return n


def side(
    seed: list[Example], model_path: str, holdout: list[Example], settings: Settings, embedder: Embedder, rows: int
) -> dict[str, Any]:
    s = settings.with_(classifier={"model_path": model_path}, ollama={"host_explicit": False})  # no LLM layer
    routed = eval_routing(build_cascade(s, embedder=lambda: embedder), holdout)
    cv = cross_validate(seed, embedder, threshold=s.classifier.confidence_threshold, cluster_rows=rows or None)
    topic = cv["topic_clustered_first_rows"] if rows else cv["topic_clustered"]
    return {
        "model": model_path,
        "seed_rows": len(seed),
        "holdout": {
            "accuracy": routed["accuracy"],
            "by_layer": routed["by_layer"],
            "by_tag": routed["by_tag"],
        },
        "cv": {
            "topic_clustered_accuracy": topic["accuracy"],
            "topic_clustered_per_run": topic["accuracy_per_run"],
            "message_grouped_accuracy": cv["message_grouped"]["accuracy"],
            "rows": topic["n"],
        },
    }


def drops(before: dict[str, Any], after: dict[str, Any], tolerance: float = 0.0) -> list[str]:
    """The guarded figures that fell by more than `tolerance`, said in words."""
    out = []
    for section, name in GUARDED:
        b, a = before[section][name], after[section][name]
        if a < b - tolerance:
            out.append(f"{section} {name} fell from {b} to {a}")
    return out


def compare(
    before: tuple[list[Example], str],
    after: tuple[list[Example], str],
    holdout: list[Example],
    settings: Settings,
    embedder: Embedder,
    tolerance: float = 0.0,
) -> dict[str, Any]:
    rows = shared_rows(before[0], after[0])
    b = side(*before, holdout, settings, embedder, rows)
    a = side(*after, holdout, settings, embedder, rows)
    return {"shared_rows": rows, "before": b, "after": a, "tolerance": tolerance, "drops": drops(b, a, tolerance)}
