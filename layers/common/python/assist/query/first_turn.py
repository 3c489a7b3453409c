"""A turn the router would answer without the documentation, with nothing to answer from (ADR 0127).

CONVERSATIONAL on a session's first turn has no conversation to act on, and PLATFORM without `extra_context` has
no account data: either way the model would answer from its own general knowledge ("who won the Super Bowl?",
routed CONVERSATIONAL for want of a better type). Such a turn is searched and judged like RETRIEVAL, so the
documentation's verdict (ADR 0055, calibrated per index, ADR 0096) decides: not in the docs, or answered from its
passages. PLATFORM without account data, on any turn: its answer says first that no account data came with it
(`without_account_data`). Kept CONVERSATIONAL: a message that acts on the conversation ("what did I ask?",
`recall.py`), told there is nothing yet. Kept as routed: a CONVERSATIONAL type the caller declared, a platform
prefix (the platform's own text, docs/routing.md), and a CONVERSATIONAL message in another language that was not
translated (no verdict can read it, ADR 0055; no model answers it either).
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
NO_ACCOUNT_DATA = "no account data: searched and judged as RETRIEVAL"


def unanchored(route: Route, history: Sequence[IntentEntry], extra_context: str | None) -> bool:
    """PLATFORM without account data (unless a platform prefix set it), or a first turn the router (not the
    caller) sent to CONVERSATIONAL."""
    if route.type is QueryType.PLATFORM:
        return not extra_context and route.layer is not Layer.RULES
    return route.type is QueryType.CONVERSATIONAL and not history and route.layer is not Layer.DECLARED


def readable(route: Route, message: str, settings: Settings) -> str | None:
    """The message as the verdict would read it: its translation, or itself in the index's language; None for
    another language untranslated."""
    if route.lexical_query:
        return route.lexical_query
    return None if foreign(message, settings.index.language) else message


def first_turn_route(route: Route, text: str | None, refers: Callable[[str], bool], settings: Settings) -> Route:
    """RETRIEVAL in place of an unanchored turn's route (`unanchored`): always for PLATFORM; for CONVERSATIONAL
    unless `text` (`readable`) is None or acts on the conversation (`refers`)."""
    platform = route.type is QueryType.PLATFORM
    if not platform and (text is None or refers(text)):
        return route
    return msgspec.structs.replace(
        route,
        type=QueryType.RETRIEVAL,
        model_slot=Slot.MAIN,
        model=settings.ollama.model_name,
        reason=f"{route.reason}; {NO_ACCOUNT_DATA if platform else REASON}",
    )


def without_account_data(route: Route) -> bool:
    """A PLATFORM turn without account data, judged as RETRIEVAL: its answer says so first."""
    return route.reason.endswith(NO_ACCOUNT_DATA)
