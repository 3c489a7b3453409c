"""How much of the corpus each document points at: its *hub share*.

A registry or index page mentions every decision record's id or links every page; for almost any
question it holds the words, so it crowds the specific document out. Its hub share — the part of
the corpus's other documents it references, by identifier or by Markdown link — is recorded in the
manifest at index time, and the search damps documents with a large one (ADR 0040 measures it).
Pure work on the chunks: no model, no I/O.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import msgspec

from assist.index.identifiers import mentions

if TYPE_CHECKING:
    from assist.index.chunking import DocChunk
    from assist.index.manifest import Entry

#: below this many referenced documents a page is an ordinary one that cites a few others
HUB_MIN_REFS = 5
_LINK = re.compile(r"\]\(([^)\s#?]+)")


def hub_shares(texts: dict[str, str], keys: dict[str, list[str]]) -> dict[str, float]:
    """{doc_id: referenced other documents / other documents}, 0 under HUB_MIN_REFS references."""
    owners: dict[str, set[str]] = {}
    for d, ks in keys.items():
        for k in ks:
            owners.setdefault(k, set()).add(d)
    stems: dict[str, set[str]] = {}
    for d in texts:
        stems.setdefault(PurePosixPath(d).name.lower(), set()).add(d)
    others = max(1, len(texts) - 1)
    out = {}
    for d, text in texts.items():
        refs: set[str] = set()
        for k in mentions(text):
            refs |= owners.get(k, set())
        for target in _LINK.findall(text):
            refs |= stems.get(PurePosixPath(target).stem.lower(), set())
        refs.discard(d)
        out[d] = round(len(refs) / others, 4) if len(refs) >= HUB_MIN_REFS else 0.0
    return out


def with_hubs(entries: dict[str, Entry], chunks: dict[str, list[DocChunk]]) -> dict[str, Entry]:
    """The manifest entries with their documents' hub shares."""
    texts = {d: "\n".join(c.text for c in chunks.get(d, [])) for d in entries}
    hubs = hub_shares(texts, {d: e.identifiers for d, e in entries.items()})
    return {d: msgspec.structs.replace(e, hub=hubs[d]) for d, e in entries.items()}
