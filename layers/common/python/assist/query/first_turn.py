"""A first turn the router would answer without the documentation, with nothing to answer from (ADR 0127).

CONVERSATIONAL with nothing in the session has no conversation to act on, and PLATFORM without `extra_context`
has no account data: either way the model would answer from its own general knowledge ("who won the Super
Bowl?", routed CONVERSATIONAL for want of a better type). Such a turn is searched and judged like RETRIEVAL, so
the documentation's verdict (ADR 0055, calibrated per index, ADR 0096) decides: not in the docs, or answered
from its passages. Kept CONVERSATIONAL: a message that acts on the conversation ("what did I ask?", `recall.py`),
told there is nothing yet. Kept as routed: a type the caller declared or a platform prefix set, and a message in
another language that was not translated (no verdict can read it, ADR 0055; no model answers it either).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from assist.contracts import IntentEntry, Layer, QueryType, Route, Slot
from assist.language import foreign

if TYPE_CHECKING:
    from assist.settings import Settings

REASON = "nothing in the session to answer from: searched and judged as RETRIEVAL"


def unanchored(route: Route, history: Sequence[IntentEntry], extra_context: str | None) -> bool:
    """A first turn the router (not the caller, not a platform prefix) sent to CONVERSATIONAL, or to PLATFORM
    without account data."""
    if history or route.layer in (Layer.DECLARED, Layer.RULES):
        return False
    return route.type is QueryType.CONVERSATIONAL or (route.type is QueryType.PLATFORM and not extra_context)


def readable(route: Route, message: str, settings: Settings) -> str | None:
    """The message as the verdict would read it: its translation, or itself in the index's language; None for
    another language untranslated."""
    if route.lexical_query:
        return route.lexical_query
    return None if foreign(message, settings.index.language) else message


def first_turn_route(route: Route, text: str | None, refers: Callable[[str], bool], settings: Settings) -> Route:
    """RETRIEVAL in place of an unanchored first turn's route (`unanchored`), unless `text` (`readable`) is None or,
    for CONVERSATIONAL, acts on the conversation (`refers`)."""
    if text is None or (route.type is QueryType.CONVERSATIONAL and refers(text)):
        return route
    return msgspec.structs.replace(
        route,
        type=QueryType.RETRIEVAL,
        model_slot=Slot.MAIN,
        model=settings.ollama.model_name,
        reason=f"{route.reason}; {REASON}",
    )
