"""What each document is cited by (its identifier keys) and how much of the corpus it points at.

A registry or index page mentions every decision record's id or links every page; for almost any
question it holds the words, so it crowds the specific document out. Its *hub share* — the part
of the corpus's other documents it references, by identifier or by Markdown link — is recorded at
index time, and the search damps documents with a large one (ADR 0040 measures it). Pure work on
the parsed documents: no model, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from assist.index.chunking import Document
from assist.index.identifiers import document_identifiers, mentions

#: below this many referenced documents a page is an ordinary one that cites a few others
HUB_MIN_REFS = 5
_LINK = re.compile(r"\]\(([^)\s#?]+)")


@dataclass(frozen=True)
class DocLinks:
    keys: tuple[str, ...]
    #: other documents referenced / other documents in the corpus (0 under HUB_MIN_REFS references)
    hub: float = 0.0


def keys_of(doc: Document) -> tuple[str, ...]:
    first = doc.headings[0] if doc.headings else doc.title
    return tuple(document_identifiers(doc.doc_id, doc.source, doc.meta, first))


def corpus_links(docs: dict[str, Document]) -> dict[str, DocLinks]:
    keys = {d: keys_of(doc) for d, doc in docs.items()}
    owners: dict[str, set[str]] = {}
    for d, ks in keys.items():
        for k in ks:
            owners.setdefault(k, set()).add(d)
    stems = {}
    for d in docs:
        stems.setdefault(PurePosixPath(d).name.lower(), set()).add(d)
    others = max(1, len(docs) - 1)
    out = {}
    for d, doc in docs.items():
        text = "\n".join(c.text for c in doc.chunks)
        refs: set[str] = set()
        for k in mentions(text):
            refs |= owners.get(k, set())
        for target in _LINK.findall(text):
            refs |= stems.get(PurePosixPath(target).stem.lower(), set())
        refs.discard(d)
        out[d] = DocLinks(keys[d], round(len(refs) / others, 4) if len(refs) >= HUB_MIN_REFS else 0.0)
    return out
