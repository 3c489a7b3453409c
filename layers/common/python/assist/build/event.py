"""What the sync function is asked and what its steps answer (ADR 0120): a scheduled or direct sync, or one state
of the index state machine (`infra/statemachine/index.asl.json`), as structs the entry point decodes and encodes.
"""

from __future__ import annotations

import msgspec


class BuildEvent(msgspec.Struct):
    """EventBridge's scheduled event (its `source`), the HTTP route's, or a state's input. Without a `step` the
    whole sync; `sources_file` overrides SOURCES_FILE. `step`: plan (with the execution's input as `request`),
    embed (`shard`, and the `index` whose vectors it may reuse) or commit (`build`)."""

    source: str = "direct"
    sources_file: str = ""
    step: str = "sync"
    request: BuildEvent | None = None
    shard: str = ""
    index: str = ""
    build: str = ""


class ItemsAt(msgspec.Struct):
    """Where the Distributed Map's ItemReader finds the shards (S3's field names)."""

    Bucket: str
    Key: str


class Planned(msgspec.Struct):
    """The plan step's answer, the Map's input: the build, its shards and chunks, where its items are and how many
    workers run at once."""

    build: str
    shards: int
    chunks: int
    items: ItemsAt
    max_concurrency: int


class Embedded(msgspec.Struct):
    """An embed step's answer: the shard, its chunks and how many of them this run embedded."""

    shard: str
    chunks: int
    embedded: int
