"""The sync function's tasks. Without a `step` it is the whole build in one invocation (the sources file against
the index on S3), stopping before the function's end: a run that cannot finish keeps its vectors and commits
nothing, and the next run goes on from there. With a `step` it is one state of the index state machine
(`infra/statemachine/index.asl.json`): `plan`, `embed` (one shard, a Distributed Map's item) or `commit`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assist.aws import s3_uri
from assist.aws.clients import client, index_s3
from assist.build import plan as plans
from assist.build.commit import commit
from assist.build.event import BuildEvent, Embedded, ItemsAt, Planned
from assist.build.files import BUILD_DIR, build_files
from assist.build.run import reuse_from, sync_sources
from assist.build.worker import embed_shard
from assist.contracts import InvalidRequest
from assist.embed import build_embedder
from assist.sources.resolve import load_file, load_text
from assist.sources.spec import SourceError, SourceSpec

if TYPE_CHECKING:
    from assist.settings import Settings


class ShardIncomplete(RuntimeError):
    """The worker's time ran out before its shard was done; what it embedded is kept. The Map's Retry runs the
    shard again, and the next attempt starts where this one stopped."""


def run(settings: Settings, event: BuildEvent, end: float | None = None) -> Planned | Embedded | dict[str, Any]:
    """The step's answer; the whole sync's and the commit's is the build's report (`build.run.sync_sources`)."""
    step = event.step or "sync"
    if step not in STEPS:
        raise InvalidRequest(f"unknown step {step!r}; expected one of {', '.join(STEPS)}")
    return STEPS[step](settings, event, end)


def sync(settings: Settings, event: BuildEvent, end: float | None) -> dict[str, Any]:
    """`sources_file` overrides SOURCES_FILE (a scheduled event carries none)."""
    specs = sources(settings, event.sources_file)
    return sync_sources(specs, settings, build_embedder(settings), progress=False, s3=index_s3(settings), end=end)


def plan(settings: Settings, event: BuildEvent, end: float | None) -> Planned:
    """The Map's input: the build's id, where its items are (`items`: bucket and key, for the ItemReader: beside
    the index on S3, or in the data bucket for an index in a directory) and how many workers at once."""
    specs = sources(settings, event.request.sources_file if event.request else "")
    s3 = index_s3(settings)
    files = build_files(settings.index.uri, s3)
    made = plans.plan_docs(plans.of_specs(specs, settings), settings, files, build_embedder(settings).id, s3)
    if settings.index.is_s3:
        bucket, key = s3_uri.split(f"{files.where}/{made.items_key}")
    else:
        bucket, key = settings.aws.bucket, f"{BUILD_DIR}/{made.items_key}"
        client("s3", settings).put_object(Bucket=bucket, Key=key, Body=files.get(made.items_key) or b"[]")
    return Planned(made.build, len(made.shards), made.chunks, ItemsAt(bucket, key), settings.index.build_concurrency)


def embed(settings: Settings, event: BuildEvent, end: float | None) -> Embedded:
    key = event.shard
    if not key:
        raise InvalidRequest('an embed step names its shard: {"step": "embed", "shard": KEY}')
    files = build_files(settings.index.uri, index_s3(settings))
    index = event.index or settings.index.uri
    done = embed_shard(files, key, build_embedder(settings), reuse_from(settings, index), end)
    if not done.complete:
        raise ShardIncomplete(f"shard {key}: {done.embedded} chunks embedded before the deadline, the rest next time")
    return Embedded(key, done.chunks, done.embedded)


def commit_step(settings: Settings, event: BuildEvent, end: float | None) -> dict[str, Any]:
    build = event.build
    if not build:
        raise InvalidRequest('a commit step names its build: {"step": "commit", "build": ID}')
    s3 = index_s3(settings)
    files = build_files(settings.index.uri, s3)
    return commit(plans.read(files, build), files, settings, build_embedder(settings), s3, until=end)


STEPS = {"sync": sync, "plan": plan, "embed": embed, "commit": commit_step}


def sources(settings: Settings, sources_file: str) -> list[SourceSpec]:
    """The sources of `sources_file` (a path or s3://bucket/key), else of SOURCES_FILE."""
    where = sources_file or settings.sources.file
    if not where:
        raise SourceError("no sources file: set SOURCES_FILE (a path or s3://bucket/key)")
    if where.startswith("s3://"):
        bucket, key = s3_uri.split(where)
        try:
            body = client("s3", settings).get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as exc:  # any S3 failure names the file it could not read
            raise SourceError(f"sources file {where}: {type(exc).__name__}: {exc}") from exc
        return load_text(body.decode("utf-8"), where)
    return load_file(where)
