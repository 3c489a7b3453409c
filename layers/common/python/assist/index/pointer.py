"""Where the live index version is: a small JSON object beside the versions (ADR 0067).

An index location (`INDEX_URI`, a directory or `s3://bucket/prefix`) holds published versions under
`versions/<version>/` and the pointer `LIVE.json`: `{"version", "previous": [older live versions, newest
first], "published_at"}`. Without a pointer the location itself is the index, as before publishing existed;
a version `null` names that unpublished index (the first publish keeps it to roll back to).
Readers read it (`retrieve/handle.py`), `assist index --publish` and `--rollback` rewrite it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from assist.aws import s3_uri
from assist.aws.errors import client_error

POINTER = "LIVE.json"
VERSIONS = "versions"


def version_uri(root: str, version: str) -> str:
    return f"{root.rstrip('/')}/{VERSIONS}/{version}"


def live_uri(root: str, s3: Any = None) -> str:
    """The index readers should open: the pointer's version, or the location itself when nothing is published."""
    pointer = read(root, s3)
    return version_uri(root, pointer["version"]) if pointer and pointer.get("version") else root


def read(root: str, s3: Any = None) -> dict[str, Any] | None:
    if root.startswith("s3://"):
        bucket, key = s3_uri.beside(root, POINTER)
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except client_error() as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise  # refused or failing: the reader keeps what it has and says so
        return json.loads(body)
    path = Path(root) / POINTER
    return json.loads(path.read_text()) if path.is_file() else None


def write(root: str, pointer: dict[str, Any], s3: Any = None) -> None:
    """Replace the pointer whole (an S3 PUT is atomic; a file is renamed into place), so a reader sees the old
    version or the new one, never half of either."""
    body = json.dumps(pointer, sort_keys=True).encode()
    if root.startswith("s3://"):
        bucket, key = s3_uri.beside(root, POINTER)
        s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
        return
    Path(root).mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".live-")
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    os.replace(tmp, Path(root) / POINTER)
