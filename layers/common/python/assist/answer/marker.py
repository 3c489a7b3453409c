"""The model's own verdict (ADR 0083): the answer prompts ask the model to begin its reply with a fixed marker
when the numbered sources do not answer the question. The marker is stripped here, whole or streamed in
pieces, and never reaches the user; what follows it is the model's short explanation.

Streamed, the marker may arrive split over several token chunks (`[[not`, `_cov`, `ered]]`): `MarkerFilter`
holds back the start of a reply while it can still become the marker, so a reader sees either the reply
as the model wrote it or the reply without the marker, never a piece of it. A reply that does not begin with
the marker is passed on unchanged, as soon as it cannot be the marker (at most len(MARKER) characters late).
"""

from __future__ import annotations

import re

MARKER = "[[not_covered]]"
#: what may stand before the marker: white space, and the emphasis or code quotes a model wraps it in
_LEAD = re.compile(r"[\s*_`>]*")
#: what may stand between the marker and the explanation
_SEPARATORS = " \t\r\n:*_`-—"


def _at(text: str) -> int:
    """Where the marker would begin in `text`: after the leading decoration."""
    m = _LEAD.match(text)
    return m.end() if m else 0


def split(text: str) -> tuple[bool, str]:
    """(whether the reply begins with the marker, the reply without it)."""
    start = _at(text)
    if text[start : start + len(MARKER)].lower() != MARKER:
        return False, text
    rest = text[start + len(MARKER) :]
    return True, rest.lstrip(_SEPARATORS)


class MarkerFilter:
    """A streamed reply, token by token: `feed` returns what may be shown now, `close` the rest."""

    def __init__(self) -> None:
        self._held = ""
        self._decided = False
        self._separating = False  # after the marker, until the explanation's first character
        self.found = False

    def feed(self, token: str) -> str:
        if self._separating:
            token = token.lstrip(_SEPARATORS)
            self._separating = not token
        if self._decided:
            return token
        self._held += token
        start = _at(self._held)
        head = self._held[start:].lower()
        if len(head) < len(MARKER) and MARKER.startswith(head):
            return ""  # may still become the marker: hold it back
        return self._decide()

    def close(self) -> str:
        """The end of the reply: whatever is still held back (a reply shorter than the marker, or its
        explanation's first characters)."""
        return "" if self._decided else self._decide()

    def _decide(self) -> str:
        self._decided = True
        self.found, rest = split(self._held)
        self._held = ""
        self._separating = self.found and not rest
        return rest
