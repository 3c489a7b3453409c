"""Secrets Manager values read at run time through Powertools' Parameters utility and kept in the warm process for
`max_age` seconds (ADR 0065): the export's HMAC key and the widget's visitor-token key are never in an environment."""

from __future__ import annotations

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
            # deferred, ADR 0071: Powertools (metrics extra only)
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            _providers[key] = SecretsProvider(boto3_client=client("secretsmanager", settings))
        return _providers[key]
