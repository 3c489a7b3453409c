"""The classification cascade, cheapest layer first; every decision says who made it and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assist.classify.rules import platform_prefix
from assist.contracts import IntentEntry, QueryType, Route
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)


def route_for(qtype: QueryType, layer: str, confidence: float, reason: str, settings: Settings) -> Route:
    slot = qtype.model_slot
    model = settings.ollama_model_name if slot == "main" else settings.light_model
    return Route(type=qtype, layer=layer, confidence=confidence, reason=reason, model_slot=slot, model=model)


class Cascade:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def classify(self, message: str, history: list[IntentEntry], declared: QueryType | None = None) -> Route:
        s = self._settings
        if declared is not None:
            route = route_for(declared, "declared", 1.0, "caller-declared query_type", s)
        elif prefix := platform_prefix(message, s.platform_prefixes):
            route = route_for(QueryType.PLATFORM, "rules", 1.0, f"platform-injected prefix {prefix!r}", s)
        else:
            route = route_for(QueryType.RETRIEVAL, "default", 0.5, "no layer decided; documentation by default", s)
        log.info(
            "classify.decided",
            type=route.type.value,
            layer=route.layer,
            confidence=route.confidence,
            history_len=len(history),
        )
        return route
