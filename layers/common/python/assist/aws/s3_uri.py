"""`s3://bucket/key` locations, split one way everywhere (no boto3 here: callers pass their clients)."""

from __future__ import annotations


def split(uri: str) -> tuple[str, str]:
    """(bucket, key or prefix) of an `s3://bucket/key` URI."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def beside(uri: str, name: str) -> tuple[str, str]:
    """(bucket, key) of the object `name` directly under the prefix `uri` (an index's lease, its pointer)."""
    bucket, prefix = split(uri)
    return bucket, f"{prefix.rstrip('/')}/{name}".lstrip("/")
