"""The classification cascade, cheapest layer first; every decision says who made it and why.

declared → rules → embedding → llm → fallback. The embedding and LLM layers are injected as
zero-argument providers, built on first use (the model, the embedder and the Ollama client are
not loaded by an engine that never classifies free text), so `Cascade(settings)` alone runs the
declared and rules layers and falls back to RETRIEVAL.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from assist.classify.llm import LLMClassifierFailed
from assist.classify.rules import platform_prefix
from assist.contracts import IntentEntry, Layer, QueryType, Route, Slot
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.classify.embedding import EmbeddingLayer
    from assist.classify.llm import LLMClassifier
    from assist.classify.model import Prediction
    from assist.settings import Settings

log = get_logger(__name__)
#: the confidence of a fallback with nothing to go on: the uniform prior over four types
NO_CLASSIFIER_CONFIDENCE = 0.25


def route_for(qtype: QueryType, layer: Layer, confidence: float, reason: str, settings: Settings) -> Route:
    """The route of a decided type: the layer that decided it and why, and the model slot and model it goes to."""
    slot = qtype.model_slot
    model = settings.ollama.model_name if slot is Slot.MAIN else settings.ollama.light_model
    return Route(type=qtype, layer=layer, confidence=confidence, reason=reason, model_slot=slot, model=model)


class Cascade:
    def __init__(
        self,
        settings: Settings,
        embedding: Callable[[], EmbeddingLayer] | None = None,
        llm: Callable[[], LLMClassifier] | None = None,
    ) -> None:
        self._settings = settings
        self._embedding = embedding
        self._llm = llm

    def warm(self) -> None:
        """Load the classifier model and the embedder now rather than on the first message."""
        if self._embedding is not None:
            self._embedding()

    def ahead(self, message: str, declared: QueryType | None = None) -> Callable[[], object] | None:
        """The part of `classify` that does not need the history, to run while the history is read: the
        message's embedding, unless a declared type or the rules will decide without it."""
        if (
            declared is not None
            or self._embedding is None
            or platform_prefix(message, self._settings.classifier.platform_prefixes)
        ):
            return None
        layer = self._embedding
        return lambda: layer().embed(message)

    def classify(
        self,
        message: str,
        history: list[IntentEntry],
        declared: QueryType | None = None,
        llm: Callable[[], bool] | None = None,
    ) -> Route:
        """`llm()`: asked just before the LLM layer would be, whether a model may be called (it counts the call on a
        widget key's budget); False skips the layer as if unset."""
        s = self._settings
        start = time.perf_counter()
        pred: Prediction | None = None
        if declared is not None:
            route = route_for(declared, Layer.DECLARED, 1.0, "caller-declared query_type", s)
        elif prefix := platform_prefix(message, s.classifier.platform_prefixes):
            route = route_for(QueryType.PLATFORM, Layer.RULES, 1.0, f"platform-injected prefix {prefix!r}", s)
        else:
            pred = self._embedding().predict(message, history) if self._embedding is not None else None
            route = self._by_content(message, history, pred, llm)
        log.info(
            "classify.decided",
            type=route.type.value,
            layer=route.layer,
            confidence=round(route.confidence, 4),
            history_len=len(history),
            reason=route.reason,
            # which model judged the message: a registry's model changes while the container runs
            model_version=pred.model_version if pred is not None else None,
            ms=round((time.perf_counter() - start) * 1000, 2),
        )
        return route

    def _by_content(
        self, message: str, history: list[IntentEntry], pred: Prediction | None, llm: Callable[[], bool] | None
    ) -> Route:
        s = self._settings
        threshold = s.classifier.confidence_threshold
        if pred is not None and pred.decides(threshold):
            return route_for(QueryType(pred.label), Layer.EMBEDDING, pred.p, _embedding_reason(pred, threshold), s)
        if pred is not None:
            log.info(
                "classify.embedding_abstained",
                p=round(pred.p, 4),
                threshold=threshold,
                best=pred.label,
                novel=pred.novel,
                similarity=None if pred.similarity is None else round(pred.similarity, 4),
            )

        if self._llm is None:
            why = "llm off (OLLAMA_HOST unset)"
        elif llm is not None and not llm():
            why = "llm off (the site key's model budget is spent)"
        else:
            try:
                decision = self._llm().classify(message, history)
            except LLMClassifierFailed as exc:
                log.warning("classify.llm_failed", reason=str(exc))
                why = str(exc)
            else:
                reason = f"llm: {decision.type.value} (history {len(history)} entries"
                reason += ", after a retry)" if decision.attempts > 1 else ")"
                if pred is not None:
                    reason += f"; embedding best {pred.label} {_abstention(pred, threshold)}"
                return route_for(decision.type, Layer.LLM, 1.0, reason, s)

        if pred is not None:
            reason = f"fallback: {why}; embedding best p={pred.p:.2f}"
            if pred.novel:
                reason += f", unlike its training (similarity {pred.similarity:.2f})"
            return route_for(QueryType(pred.label), Layer.FALLBACK, pred.p, reason, s)
        reason = f"fallback: {why}; no embedding model; documentation by default"
        return route_for(QueryType.RETRIEVAL, Layer.FALLBACK, NO_CLASSIFIER_CONFIDENCE, reason, s)


def _embedding_reason(pred: Prediction, threshold: float) -> str:
    reason = f"embedding p={pred.p:.2f} ≥ {threshold:.2f}"
    if pred.inherited >= pred.p / 2:
        reason += f"; a reference to the previous {pred.label} turn"
    return reason


def _abstention(pred: Prediction, threshold: float) -> str:
    """Why the embedding layer did not decide: too unsure, or a message unlike its training rows (ADR 0041)."""
    if pred.novel and pred.p >= threshold:
        return f"p={pred.p:.2f} but unlike its training (similarity {pred.similarity:.2f})"
    return f"p={pred.p:.2f} < {threshold:.2f}"
