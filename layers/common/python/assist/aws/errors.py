"""botocore's `ClientError`, for modules on an S3 path that also serve a local index without the aws extra (the
index's writer lease and live pointer): botocore is installed whenever an S3 client was handed to them."""

from __future__ import annotations

from functools import cache


@cache
def client_error() -> type[Exception]:
    # deferred, ADR 0104: botocore.exceptions 0.009 s, and not installed without the aws extra
    from botocore.exceptions import ClientError

    return ClientError
