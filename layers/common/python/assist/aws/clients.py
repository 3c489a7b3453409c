"""boto3 clients built from the settings. Entry points build them; the library takes them as arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assist.settings import Settings


def client(service: str, settings: Settings, read_timeout: float = 10, attempts: int = 3) -> Any:
    """`read_timeout`: longer for benchmarks (moto answers a query on a 100,000-item index slowly) and for a call
    that waits on a whole execution; `attempts` 1 for a call that must never be repeated (it starts work)."""
    # deferred, ADR 0104: boto3 0.11 s and botocore's config 0.08 s, by the first client a process builds
    import boto3
    from botocore.config import Config

    kwargs: dict[str, Any] = {
        "region_name": settings.aws.region,
        "config": Config(
            retries={"mode": "standard", "max_attempts": attempts},
            connect_timeout=3,
            read_timeout=read_timeout,
            # StartSyncExecution's host is sync-states…: an emulator's endpoint (an address) has no such name
            inject_host_prefix=not settings.aws.endpoint_url,
        ),
    }
    if settings.aws.endpoint_url:
        kwargs["endpoint_url"] = settings.aws.endpoint_url
    # no keys here: boto3's default chain (environment with AWS_SESSION_TOKEN, profile, container or
    # instance role) finds and refreshes them; only an emulator's static keys are passed (ADR 0048)
    return boto3.client(service, **kwargs, **settings.aws.emulator_keys)


def index_s3(settings: Settings) -> Any:
    """An S3 client when the index lives on S3 (its writer lease needs one), else None."""
    return client("s3", settings) if settings.index.is_s3 else None
