"""The corpus manifest as the search, the corpus answers and the MCP tools all see it (ADR 0062): entries,
identifier keys, owners and hub shares, loaded once per index version and resolved by one rule.

Before this, the ranking (`catalog.py`) and the corpus answers (`corpus.py`) each built a key → documents
map from their own read of the manifest, and disagreed on a key many documents share: the ranking skipped
it, the corpus answer did not, so "ADR-8" could name one document in the sources and another in the
`<corpus>` section. `owners` is now the one answer to "which documents does this key name".

Cached by where the index is and which version of its manifest table it reads (`load`): a reader that
switches to another index, or to a newer build of the same one, gets that index's manifest, never the
previous one's. This is the seam a warm reader refreshing the live index goes through.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assist.index import manifest
from assist.index.identifiers import mentions
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.index.manifest import Entry

log = get_logger(__name__)
#: a key that many documents share is a topic, not an identifier (`http-2` in every page)
MAX_OWNERS = 3
_CACHE: dict[tuple[str, str, int], Manifest | None] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Manifest:
    entries: list[Entry] = field(default_factory=list)
    by_id: dict[str, Entry] = field(default_factory=dict)
    #: identifier key → every document cited by it, in document-id order
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: document → hub share, for the documents that have one
    hubs: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_entries(cls, entries: Iterable[Entry]) -> Manifest:
        """From manifest entries (anything with `id`, `identifiers` and `hub`)."""
        listed = list(entries)
        keys: dict[str, list[str]] = {}
        for e in listed:
            for key in e.identifiers:
                keys.setdefault(key, []).append(e.id)
        hubs = {e.id: e.hub for e in listed if e.hub}
        return cls(listed, {e.id: e for e in listed}, {k: tuple(v) for k, v in keys.items()}, hubs)

    def shared(self, key: str) -> bool:
        """A key more than MAX_OWNERS documents carry: it names none of them."""
        return len(self.keys.get(key, ())) > MAX_OWNERS

    def owners(self, key: str) -> tuple[str, ...]:
        """The documents an identifier key names: its documents, or none when it is shared (`shared`)."""
        return () if self.shared(key) else self.keys.get(key, ())

    def named(self, keys: Iterable[str]) -> list[str]:
        """The documents these identifier keys name, in the order of the keys (the ranking's first places)."""
        return list(dict.fromkeys(d for key in keys for d in self.owners(key)))

    def document(self, name: str) -> str | None:
        """A document id for what a caller typed: the id itself, or the first document its identifiers name
        (`ADR-44`, `adr 0044`: as the ranking puts them first). None when neither finds one."""
        if name in self.by_id:
            return name
        named = self.named(mentions(name))
        return named[0] if named else None


def load(db: Any, index_uri: str, index_table: str) -> Manifest | None:
    """The index's manifest, read once per (location, table, manifest version) in this process; None when
    the index has none (built before manifests existed)."""
    name = manifest.table_name(index_table)
    if name not in db.table_names():
        log.info("retrieve.no_manifest", table=index_table)
        return None
    table = db.open_table(name)
    key = (index_uri, index_table, table.version)
    with _LOCK:
        if key not in _CACHE:
            entries = manifest.read(db, index_table)
            for old in [k for k in _CACHE if k[:2] == key[:2]]:
                del _CACHE[old]  # an index's earlier versions: a refreshed reader never goes back to them
            _CACHE[key] = None if entries is None else Manifest.from_entries(entries)
            log.info("retrieve.manifest_loaded", table=index_table, version=table.version, entries=len(entries or []))
        return _CACHE[key]
