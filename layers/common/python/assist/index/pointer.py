"""Where the live index version is: a small JSON object beside the versions (ADR 0067).

An index location (`INDEX_URI`, a directory or `s3://bucket/prefix`) holds published versions under
`versions/<version>/` and the pointer `LIVE.json`: `{"version", "previous": [older live versions, newest
first], "published_at"}`. Without a pointer the location itself is the index, as before publishing existed;
a version `null` names that unpublished index (the first publish keeps it to roll back to).
Readers read it (`retrieve/handle.py`), `assist index --publish` and `--rollback` rewrite it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from assist.aws import s3_uri
from assist.aws.errors import client_error

POINTER = "LIVE.json"
VERSIONS = "versions"


class Pointer(msgspec.Struct):
    """`LIVE.json`: the live version (None: the index built in place), the earlier live ones, newest first (what
    a rollback returns to), and when it was published."""

    version: str | None = None
    previous: list[str | None] = msgspec.field(default_factory=list)
    published_at: str = ""


def version_uri(root: str, version: str) -> str:
    return f"{root.rstrip('/')}/{VERSIONS}/{version}"


def live_uri(root: str, s3: Any = None) -> str:
    """The index readers should open: the pointer's version, or the location itself when nothing is published."""
    pointer = read(root, s3)
    return version_uri(root, pointer.version) if pointer and pointer.version else root


def read(root: str, s3: Any = None) -> Pointer | None:
    if root.startswith("s3://"):
        bucket, key = s3_uri.beside(root, POINTER)
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except client_error() as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise  # refused or failing: the reader keeps what it has and says so
        return msgspec.json.decode(body, type=Pointer)
    path = Path(root) / POINTER
    return msgspec.json.decode(path.read_bytes(), type=Pointer) if path.is_file() else None


def write(root: str, pointer: Pointer, s3: Any = None) -> None:
    """Replace the pointer whole (an S3 PUT is atomic; a file is renamed into place), so a reader sees the old
    version or the new one, never half of either."""
    body = msgspec.json.encode(pointer)
    if root.startswith("s3://"):
        bucket, key = s3_uri.beside(root, POINTER)
        s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
        return
    Path(root).mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".live-")
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    os.replace(tmp, Path(root) / POINTER)
