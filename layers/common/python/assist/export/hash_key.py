"""The export's HMAC key: from Secrets Manager at run time, cached, never in the environment (ADR 0065).

A deployment names the secret (`EXPORT_HASH_KEY_SECRET`, the template's generated secret); the key is
read through Powertools' Parameters utility, which keeps it for `EXPORT_HASH_KEY_CACHE_S` in the warm
process. Without a secret (the local stack, the embedded store) the configured key is used as before.
"""

from __future__ import annotations

import threading
from typing import Any

from assist.settings import Settings

_providers: dict[tuple[str | None, str], Any] = {}
_lock = threading.Lock()


def hash_key(settings: Settings) -> str:
    if not settings.export.hash_key_secret:
        return settings.export.hash_key
    return str(_provider(settings).get(settings.export.hash_key_secret, max_age=int(settings.export.hash_key_cache_s)))


def _provider(settings: Settings) -> Any:
    """One provider per endpoint and region for the process: its cache is what spares a read per export."""
    key = (settings.aws.endpoint_url, settings.aws.region)
    with _lock:
        if key not in _providers:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            from assist.aws.clients import client

            _providers[key] = SecretsProvider(boto3_client=client("secretsmanager", settings))
        return _providers[key]
