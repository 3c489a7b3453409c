"""The embedding layer: the message's embedding and words through the trained model, plus the intent history's
previous type for references (see `model.py`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from assist.classify.model import ClassifierModel, ModelError, Prediction
from assist.contracts import QueryType
from assist.embed.base import check_same
from assist.logs import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from assist.contracts import IntentEntry
    from assist.embed.base import Embedder

log = get_logger(__name__)


class EmbeddingLayer:
    def __init__(self, model: ClassifierModel, embedder: Embedder) -> None:
        """Refuses a model of another embedder, or one whose labels are not query types (the cascade routes by them)."""
        check_same(model.embedder_id, model.embedder_dim, embedder, f"classifier model {model.source}")
        unknown = set(model.classes) - {t.value for t in QueryType}
        if unknown:
            raise ModelError(
                f"classifier model {model.source} predicts {sorted(unknown)}: not a routing model; "
                "train it on routing rows (data/routing/README.md)"
            )
        self.model = model
        self._embedder = embedder

    @classmethod
    def load(cls, path: str, embedder: Embedder, s3: Any = None, version: str | None = None) -> EmbeddingLayer:
        """`version`: the artifact must hash to it (see `ClassifierModel.load`)."""
        start = time.perf_counter()
        model = ClassifierModel.load(path, s3=s3, version=version)
        layer = cls(model, embedder)
        log.info(
            "classify.model_loaded",
            path=path,
            version=model.version,
            data_sha256=model.artifact.training.data_sha256[:12],
            trained_at=model.artifact.training.trained_at,
            embedder=model.embedder_id,
            classes=list(model.classes),
            uses_history=model.uses_history,
            ms=round((time.perf_counter() - start) * 1000, 1),
        )
        return layer

    def embed(self, message: str) -> np.ndarray:
        """The message's embedding (the embedder remembers it: `predict` then reads it back)."""
        return self._embedder.embed([message])[0]

    def predict(self, message: str, history: Sequence[IntentEntry]) -> Prediction:
        """The classifier's probabilities for the message, the session's last type weighing in (its history)."""
        vector = self.embed(message)
        return self.model.predict(vector, message, [h.type.value for h in history])
