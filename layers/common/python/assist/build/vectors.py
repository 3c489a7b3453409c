"""The vector cache: each batch of vectors a shard's worker makes is written as it is made
(`cache/<shard key>/<batch>.parquet`: the content's SHA-256 and its vector), so a worker killed part-way, or a
function whose time ran out, loses at most the batch it was on. The commit forgets a shard's cache once its rows
are in the index."""

from __future__ import annotations

import hashlib
import io
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from assist.build.files import Files


def _prefix(shard_key: str) -> str:
    return f"cache/{shard_key}/"


def cached(files: Files, shard_key: str) -> dict[str, np.ndarray]:
    """{content key: vector} of every batch kept for this shard."""
    out: dict[str, np.ndarray] = {}
    for key in files.keys(_prefix(shard_key)):
        body = files.get(key)
        if body is None:  # deleted since it was listed: a commit finished this shard meanwhile
            continue
        table = pq.read_table(io.BytesIO(body))
        out.update(zip(table.column("key").to_pylist(), matrix(table.column("vector")), strict=True))
    return out


def matrix(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A fixed-size-list column of float32 vectors as one (rows, dim) array, without a copy per row."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), column.type.list_size)


def keep(files: Files, shard_key: str, keys: list[str], vectors: np.ndarray) -> None:
    dim = vectors.shape[1]
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    table = pa.table({"key": keys, "vector": pa.FixedSizeListArray.from_arrays(flat, dim)})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:24]
    files.put(f"{_prefix(shard_key)}{name}.parquet", buf.getvalue())


def forget(files: Files, shard_key: str) -> None:
    files.delete(files.keys(_prefix(shard_key)))
