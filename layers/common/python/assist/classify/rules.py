"""Deterministic rules, only where the platform itself controls the text.

The platform's dashboard widget injects a fixed prefix; recognising it is exact and free.
User-written text is never routed by keywords (docs/routing.md: keyword routes bypass reasoning).
"""

from __future__ import annotations


def platform_prefix(message: str, prefixes: tuple[str, ...]) -> str | None:
    """The configured prefix the message starts with (case- and space-insensitive), if any."""
    head = " ".join(message.split()).lower()
    for p in prefixes:
        if p and head.startswith(p):
            return p
    return None
