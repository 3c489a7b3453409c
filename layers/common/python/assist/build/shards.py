"""What a shard is and how documents are cut into shards: whole documents in id order, at most `size` chunks a
shard (a document longer than that is a shard of its own). A shard's key is the hash of what it holds and of
the embedder, so the same documents make the same shard in every run: a rerun finds the rows and vectors an
earlier run left under that key."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import msgspec

from assist.build.files import read_json
from assist.index.chunking import DocChunk

if TYPE_CHECKING:
    from assist.build.files import Files


class ShardDoc(msgspec.Struct, frozen=True):
    doc_id: str
    hash: str
    chunks: list[DocChunk]


class Shard(msgspec.Struct, frozen=True):
    key: str
    embedder: str
    docs: list[ShardDoc]

    @property
    def chunks(self) -> int:
        return sum(len(d.chunks) for d in self.docs)


def cut(docs: list[ShardDoc], size: int, embedder: str) -> list[Shard]:
    """Documents (any order) into shards of at most `size` chunks, deterministically."""
    if size < 1:
        raise ValueError(f"a shard holds at least one chunk, not {size}")
    out: list[Shard] = []
    group: list[ShardDoc] = []
    count = 0
    for doc in sorted(docs, key=lambda d: d.doc_id):
        if group and count + len(doc.chunks) > size:
            out.append(_shard(group, embedder))
            group, count = [], 0
        group.append(doc)
        count += len(doc.chunks)
    if group:
        out.append(_shard(group, embedder))
    return out


def _shard(docs: list[ShardDoc], embedder: str) -> Shard:
    digest = hashlib.sha256(embedder.encode())
    digest.update(msgspec.json.encode(docs))
    return Shard(digest.hexdigest()[:32], embedder, docs)


def content_key(content: str) -> str:
    """A chunk's content as the vector cache keys it."""
    return hashlib.sha256(content.encode()).hexdigest()


def shard_path(key: str) -> str:
    return f"shards/{key}.json"


def rows_path(key: str) -> str:
    """Where a shard's worker writes its rows (Parquet, the index's schema, vectors included)."""
    return f"rows/{key}.parquet"


def save(files: Files, shard: Shard) -> None:
    files.put(shard_path(shard.key), msgspec.json.encode(shard))


def load(files: Files, key: str) -> Shard:
    return read_json(files, shard_path(key), Shard, f"no shard {key} (plan the build again)")
