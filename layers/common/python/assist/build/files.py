"""The build's files beside the index (`<index>/_build/…`, a directory or an S3 prefix): plans, shards, the
rows each shard made, and the vector cache. One small interface over both, so every step reads and writes the
same way wherever the index is."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec

from assist.aws import s3_uri
from assist.aws.errors import client_error
from assist.sources.spec import SourceError

BUILD_DIR = "_build"
T = TypeVar("T")


class Files(Protocol):
    where: str

    def put(self, key: str, body: bytes) -> None:
        """Write whole (a reader sees the old object or the new one)."""
        ...

    def get(self, key: str) -> bytes | None: ...

    def keys(self, prefix: str) -> list[str]:
        """Every key under `prefix`, sorted."""
        ...

    def delete(self, keys: list[str]) -> None: ...


def read_json(files: Files, key: str, kind: type[T], missing: str) -> T:
    """The JSON object under `key` as a `kind`; SourceError saying `missing` (and where) when there is none."""
    body = files.get(key)
    if body is None:
        raise SourceError(f"{missing} under {files.where}")
    return msgspec.json.decode(body, type=kind)


def build_files(index_root: str, s3: Any = None) -> Files:
    """The build files of the index at `index_root` (the location, not a published version: every version's
    builds share one cache)."""
    where = f"{index_root.rstrip('/')}/{BUILD_DIR}"
    return S3Files(where, s3) if where.startswith("s3://") else DirFiles(where)


class DirFiles:
    def __init__(self, where: str) -> None:
        self.where = where
        self.root = Path(where)

    def put(self, key: str, body: bytes) -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(tmp, path)  # renamed into place: a killed writer leaves no half file under the key

    def get(self, key: str) -> bytes | None:
        path = self.root / key
        return path.read_bytes() if path.is_file() else None

    def keys(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(
            str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file() and not p.name.startswith(".part-")
        )

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            (self.root / key).unlink(missing_ok=True)


class S3Files:
    def __init__(self, where: str, s3: Any) -> None:
        if s3 is None:
            raise ValueError("an s3:// index needs an S3 client for its build files")
        self.where = where
        self.s3 = s3
        self.bucket, self.prefix = s3_uri.split(where)

    def _key(self, key: str) -> str:
        return f"{self.prefix.rstrip('/')}/{key}"

    def put(self, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=self._key(key), Body=body)

    def get(self, key: str) -> bytes | None:
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except client_error() as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise

    def keys(self, prefix: str) -> list[str]:
        out = []
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._key(prefix))
        for page in pages:
            out += [o["Key"].removeprefix(self.prefix.rstrip("/") + "/") for o in page.get("Contents", [])]
        return sorted(out)

    def delete(self, keys: list[str]) -> None:
        for i in range(0, len(keys), 1000):  # DeleteObjects takes 1,000 keys a call
            objects = [{"Key": self._key(k)} for k in keys[i : i + 1000]]
            self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True})
