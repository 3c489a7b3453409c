"""The scheduled `sync` function's task: the sources file (a path, or an object in S3) against the index
(on S3), incrementally, under the writer lease. A source that cannot be read fails the run with its
reason and leaves the index as it was; the next schedule tries again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.aws import s3_uri
from assist.aws.clients import client, index_s3
from assist.embed import build_embedder
from assist.sources.spec import SourceError, load_file, load_text
from assist.sources.sync import sync_sources

if TYPE_CHECKING:
    from assist.settings import Settings


def run(settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload.sources_file` overrides SOURCES_FILE (a scheduled event carries none)."""
    where = str(payload.get("sources_file") or settings.sources.file)
    if not where:
        raise SourceError("no sources file: set SOURCES_FILE (a path or s3://bucket/key)")
    if where.startswith("s3://"):
        bucket, key = s3_uri.split(where)
        try:
            body = client("s3", settings).get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as exc:  # any S3 failure names the file it could not read
            raise SourceError(f"sources file {where}: {type(exc).__name__}: {exc}") from exc
        specs = load_text(body.decode("utf-8"), where)
    else:
        specs = load_file(where)
    return sync_sources(specs, settings, build_embedder(settings), progress=False, s3=index_s3(settings))
