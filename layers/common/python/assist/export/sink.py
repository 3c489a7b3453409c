"""Where label parts (and the classifier registry's models) go: a local directory or an s3:// prefix.
Each write is all-or-nothing: a reader never sees half an object (local: temp file + rename; S3: one
PutObject). Reading a missing name raises FileNotFoundError, whichever the store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from assist.aws import s3_uri


class Sink(Protocol):
    uri: str

    def write(self, name: str, data: bytes) -> str: ...

    def read(self, name: str) -> bytes: ...

    def names(self, suffix: str = ".jsonl") -> list[str]: ...


class LocalSink:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.uri = str(self.root)

    def write(self, name: str, data: bytes) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return str(path)

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def names(self, suffix: str = ".jsonl") -> list[str]:
        if not self.root.exists():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob(f"*{suffix}") if p.is_file())


class S3Sink:
    def __init__(self, uri: str, s3: Any) -> None:
        bucket, prefix = s3_uri.split(uri)
        self.uri, self._bucket, self._prefix, self._s3 = uri, bucket, prefix.strip("/"), s3

    def _key(self, name: str) -> str:
        return f"{self._prefix}/{name}" if self._prefix else name

    def write(self, name: str, data: bytes) -> str:
        kind = "application/x-ndjson" if name.endswith(".jsonl") else "application/json"
        self._s3.put_object(Bucket=self._bucket, Key=self._key(name), Body=data, ContentType=kind)
        return f"s3://{self._bucket}/{self._key(name)}"

    def read(self, name: str) -> bytes:
        try:
            return self._s3.get_object(Bucket=self._bucket, Key=self._key(name))["Body"].read()
        except self._s3.exceptions.NoSuchKey as exc:
            raise FileNotFoundError(f"s3://{self._bucket}/{self._key(name)}") from exc

    def names(self, suffix: str = ".jsonl") -> list[str]:
        prefix = f"{self._prefix}/" if self._prefix else ""  # "labels/", so "labels-old/" is not listed with it
        out: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=prefix):
            out += [o["Key"][len(prefix) :] for o in page.get("Contents", [])]
        return sorted(n for n in out if n.endswith(suffix))


def open_sink(uri: str, s3: Any = None) -> Sink:
    return S3Sink(uri, s3) if uri.startswith("s3://") else LocalSink(uri)
