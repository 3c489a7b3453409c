"""How the two session tables are keyed, whichever backend keeps them (ADR 0044, ADR 0061): both are
keyed (session_id, turn); turn 0 of a session is its header; the intent history is found by day
through its export key, which sorts by time within a day."""

from __future__ import annotations

HEADER_TURN = 0
EXPORT_INDEX = "by-export-day"
EXPORT_DAY = "export_day"
EXPORT_KEY = "export_key"
#: above every export key: a history read "to the end of the day"
LAST_KEY = "\uffff"
#: the export's watermark item in the intent history ('#' never starts a user session id)
WATERMARK = ("#export", 0)


def export_key(created_at: str, session_id: str, turn: int) -> str:
    """Sorts by time within a day; unique per turn."""
    return f"{created_at}#{session_id}#{turn:08d}"
