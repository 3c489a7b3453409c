"""The Distributed Map's ItemReader under IAM: moto's ASL interpreter reads the items' S3 object with a key of its
own, which the enforced emulator does not know. In AWS, Step Functions reads it as the state machine's role, so
here that role's policy decides (`s3:GetObject` on the object), the decision is recorded like any other, and an
allowed read is served with the operator's client."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from assist_dev.rehearsal import iam

if TYPE_CHECKING:
    from assist_dev.rehearsal.template import RoleSpec

Reply = tuple[int, bytes, dict[str, str]]


class InterpreterReads:
    def __init__(self, denials: iam.Denials, roles: list[RoleSpec], s3: Any) -> None:
        """`roles`: the roles of the state machines whose definitions have an ItemReader; `s3`: the operator's."""
        self._denials, self._roles, self._s3 = denials, roles, s3

    def __call__(self, method: str, path: str, headers: dict[str, str]) -> Reply:
        bucket, key = _object(path, headers.get("Host") or headers.get("host") or "")
        arn = f"arn:aws:s3:::{bucket}/{key}"
        if method != "GET" or not key:
            return _denied(f"Step Functions' ItemReader only reads objects, not {method} {arn}")
        if not self._roles or not all(
            iam.check(self._denials, r.name, r.documents(), "s3:GetObject", arn) for r in self._roles
        ):
            return _denied(f"the state machine's role may not s3:GetObject on {arn}")
        body = self._s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        return 200, body, {"Content-Type": "application/octet-stream"}


def _object(path: str, host: str) -> tuple[str, str]:
    """(bucket, key) of a path-style or virtual-hosted-style request."""
    path = urllib.parse.unquote(path.split("?", 1)[0]).lstrip("/")
    name = host.split(":", 1)[0]
    if name.count(".") and not name.replace(".", "").isdigit() and name != "localhost":
        return name.split(".", 1)[0], path  # bucket.localhost: virtual-hosted
    bucket, _, key = path.partition("/")
    return bucket, key


def _denied(message: str) -> Reply:
    body = f"<Error><Code>AccessDenied</Code><Message>{message}</Message></Error>".encode()
    return 403, body, {"Content-Type": "application/xml"}
