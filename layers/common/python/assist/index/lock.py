"""One writer at a time per index: a lease object created only if absent.

LanceDB commits to S3 safely from one writer; two concurrent writers can lose a commit unless every
writer goes through LanceDB's DynamoDB commit store. We keep to one writer (ADR 0021): `assist index`
and the local stack take this lease first. On S3 the lease is an object written with
`If-None-Match: *` (S3's conditional create, atomic); in a local directory, a file opened with
O_EXCL. A lease lasts no longer than its holder can live: its TTL, or the holder's own deadline (a Lambda's end)
when that comes first; past it the lease is taken over. A holder on this same machine (the same kernel boot)
whose process is gone is recognised as dead at once: a killed `assist index` blocks nobody.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from assist.aws import s3_uri
from assist.aws.errors import client_error
from assist.errors import AssistError
from assist.logs import get_logger

log = get_logger(__name__)
LOCK_NAME = "_assist_writer.lock"
TTL_S = 30 * 60  # longer than any commit of ours; a stale lease is taken over after it
#: the kernel's boot id: two leases with the same one were taken on the same machine, where a pid can be checked
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class IndexBusy(AssistError, RuntimeError):
    """Another writer holds the index's lease."""


class Lease(msgspec.Struct):
    """The writer lease's file: who holds it, on which machine (its boot id) and process, and until when (epoch
    seconds). A lease read back may come from another version of assist: a field it lacks reads as unknown."""

    holder: str = "?"
    boot: str = ""
    pid: int = 0
    expires_at: float = 0.0


@contextmanager
def writer_lease(uri: str, s3: Any = None, ttl_s: float = TTL_S, until: float | None = None) -> Iterator[Lease]:
    """Hold the index's writer lease for the duration of the block; IndexBusy if someone else holds it.
    `until`: when the holder itself ends (epoch seconds; a Lambda's deadline), if sooner than the TTL."""
    expires = time.time() + ttl_s
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    lease = Lease(holder, _boot_id(), os.getpid(), min(expires, until) if until is not None else expires)
    store = _S3Lease(uri, s3) if uri.startswith("s3://") else _FileLease(uri)
    for attempt in (1, 2):
        if store.create(msgspec.json.encode(lease)):
            break
        held = store.read()
        if attempt == 1 and held is not None and (why := _dead(held)):
            log.warning("index.lease_taken_over", uri=uri, stale_holder=held.holder, why=why)
            store.delete()
            continue
        raise IndexBusy(
            f"another writer ({held.holder if held else '?'}) is updating the index at {uri}; retry when it is done "
            f"(a lease is taken over once its holder has ended, or after {int(ttl_s)} s)"
        )
    try:
        yield lease
    finally:
        store.delete()


def _dead(held: Lease) -> str | None:
    """Why the lease's holder can no longer be writing, or None while it may be."""
    if held.expires_at < time.time():
        return "expired"
    if held.boot and held.boot == _boot_id() and held.pid and not _alive(held.pid):
        return "holder process gone"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        pass
    return True


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:  # not Linux: no pid check, the TTL alone
        return ""


class _S3Lease:
    def __init__(self, uri: str, s3: Any) -> None:
        if s3 is None:
            raise ValueError("an s3:// index needs an S3 client for its writer lease")
        self.s3 = s3
        self.bucket, self.key = s3_uri.beside(uri, LOCK_NAME)

    def create(self, body: bytes) -> bool:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=body, IfNoneMatch="*")
            return True
        except client_error() as exc:
            if exc.response.get("Error", {}).get("Code") in {"PreconditionFailed", "ConditionalRequestConflict"}:
                return False
            raise

    def read(self) -> Lease | None:
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self.key)["Body"].read()
        except client_error():
            return None
        return _decoded(body)

    def delete(self) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=self.key)


class _FileLease:
    def __init__(self, uri: str) -> None:
        self.path = Path(uri) / LOCK_NAME

    def create(self, body: bytes) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        return True

    def read(self) -> Lease | None:
        try:
            return _decoded(self.path.read_bytes())
        except FileNotFoundError:
            return None

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


def _decoded(body: bytes) -> Lease | None:
    """The lease in a lease file; None for one that is not (half written, or not ours): no holder to wait for."""
    try:
        return msgspec.json.decode(body, type=Lease)
    except msgspec.DecodeError:
        return None
