"""What the search knows of each document besides its chunks: the identifier keys it is cited by and
its hub share (how much of the corpus it references). Read once from the corpus manifest; an index
without one has an empty catalog, and the search works as before without naming or damping."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assist.logs import get_logger

log = get_logger(__name__)
#: a key that many documents share is a topic, not an identifier (`http-2` in every page)
MAX_OWNERS = 3


@dataclass(frozen=True)
class Catalog:
    #: identifier key → the documents cited by it
    owners: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: document → hub share, for the documents that have one
    hubs: dict[str, float] = field(default_factory=dict)

    def named(self, keys: Iterable[str]) -> list[str]:
        """The documents these identifier keys name, in the order of the keys."""
        out: list[str] = []
        for key in keys:
            docs = self.owners.get(key, ())
            if len(docs) <= MAX_OWNERS:
                out += [d for d in docs if d not in out]
        return out

    @classmethod
    def from_entries(cls, entries: Iterable[Any]) -> Catalog:
        """From manifest entries (anything with `id`, `identifiers` and `hub`)."""
        owners: dict[str, list[str]] = {}
        hubs: dict[str, float] = {}
        for e in entries:
            for key in e.identifiers:
                owners.setdefault(key, []).append(e.id)
            if e.hub:
                hubs[e.id] = e.hub
        return cls({k: tuple(v) for k, v in owners.items()}, hubs)


def from_manifest(db: Any, index_table: str) -> Callable[[], Catalog]:
    """A loader for the Retriever: the manifest beside the index, read on first need."""

    def load() -> Catalog:
        from assist.index import manifest

        entries = manifest.read(db, index_table)
        if entries is None:
            log.info("retrieve.no_manifest", table=index_table)
            return Catalog()
        return Catalog.from_entries(entries)

    return load
