"""Secrets Manager values read at run time through Powertools' Parameters utility and kept in the warm process for
`max_age` seconds (ADR 0065): the export's HMAC key and the widget's visitor-token key are never in an environment."""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from assist.aws.clients import client

if TYPE_CHECKING:
    from assist.settings import Settings

_providers: dict[tuple[str | None, str], Any] = {}
_lock = threading.Lock()


def secret_value(settings: Settings, secret_id: str, max_age_s: float) -> str:
    return str(_provider(settings).get(secret_id, max_age=int(max_age_s)))


def _provider(settings: Settings) -> Any:
    """One provider per endpoint and region for the process: its cache is what spares a read per use."""
    key = (settings.aws.endpoint_url, settings.aws.region)
    with _lock:
        if key not in _providers:
            # deferred, ADR 0104: Powertools' parameters, 0.15 s, and not in the classify and retrieve images
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            _providers[key] = SecretsProvider(boto3_client=client("secretsmanager", settings))
        return _providers[key]


def secret_stages(settings: Settings, secret_id: str) -> tuple[str, float, str | None]:
    """A rotated secret as Secrets Manager keeps it: the current value, when that version was made (epoch s),
    and the previous value (None before the first rotation). Read afresh: the caller keeps it its own time."""
    sm = client("secretsmanager", settings)
    current = sm.get_secret_value(SecretId=secret_id, VersionStage="AWSCURRENT")
    try:
        previous: str | None = sm.get_secret_value(SecretId=secret_id, VersionStage="AWSPREVIOUS")["SecretString"]
    except sm.exceptions.ResourceNotFoundException:
        previous = None
    return current["SecretString"], current["CreatedDate"].timestamp(), previous


def generated_secret(settings: Settings, secret_id: str, make: str, description: str) -> str:
    """The secret `secret_id`, created with `make` by the first process that asks (all processes agree)."""
    sm = client("secretsmanager", settings)
    with contextlib.suppress(sm.exceptions.ResourceExistsException):  # another process made it first: use theirs
        sm.create_secret(Name=secret_id, SecretString=make, Description=description)
    return str(sm.get_secret_value(SecretId=secret_id)["SecretString"])
