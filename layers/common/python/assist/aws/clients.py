"""boto3 clients built from the settings. Entry points build them; the library takes them as arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assist.settings import Settings


def client(service: str, settings: Settings, read_timeout: float = 10) -> Any:
    """`read_timeout`: longer only for benchmarks, whose moto server answers a query on a 100,000-item index slowly."""
    import boto3
    from botocore.config import Config

    kwargs: dict[str, Any] = {
        "region_name": settings.aws_region,
        "config": Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=read_timeout),
    }
    if settings.aws_endpoint_url:
        kwargs["endpoint_url"] = settings.aws_endpoint_url
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        kwargs.update(
            aws_access_key_id=settings.aws_access_key_id, aws_secret_access_key=settings.aws_secret_access_key
        )
    return boto3.client(service, **kwargs)


def index_s3(settings: Settings) -> Any:
    """An S3 client when the index lives on S3 (its writer lease needs one), else None."""
    return client("s3", settings) if settings.index_is_s3 else None
