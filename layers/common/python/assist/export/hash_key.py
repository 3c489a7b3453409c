"""The export's HMAC key: from Secrets Manager at run time, cached, never in the environment (ADR 0065).

A deployment names the secret (`EXPORT_HASH_KEY_SECRET`, the template's generated secret); the key is
read through Powertools' Parameters utility, which keeps it for `EXPORT_HASH_KEY_CACHE_S` in the warm
process. Without a secret (the local stack, the embedded store) the configured key is used as before.
"""

from __future__ import annotations

from assist.aws.secrets import secret_value
from assist.settings import Settings


def hash_key(settings: Settings) -> str:
    if not settings.export.hash_key_secret:
        return settings.export.hash_key
    return secret_value(settings, settings.export.hash_key_secret, settings.export.hash_key_cache_s)
