"""A published index version copied to the function's ephemeral storage, so a question reads local files
(ADR 0095).

LanceDB on S3 makes many small ranged reads per query, each a round trip; a published version never changes
once written (ADR 0067), so a reader can fetch it once and read it from disk. S3 stays the source of truth:
the copy is fetched per version, checked against the configured ephemeral storage first (one that does not fit
is read from S3, and said so), downloaded into a directory named for the version with a private suffix and
renamed into place whole. A directory named for a version is therefore always a complete copy: readers switch
by version and never see half of one. While a new version is fetched, the old one keeps being served.

The unpublished index (the location itself, updated in place by the sync function) is not copied: it changes
under its name, so it is read from S3 as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, UnsetType

from assist.aws import s3_uri
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
MB = 1024 * 1024
#: the share of the ephemeral storage a copy may take, with the copy being replaced beside it: /tmp also holds
#: what the rest of the function writes
EPHEMERAL_SHARE = 0.9
FETCH_THREADS = 8
PARTIAL = ".partial-"


@dataclass(frozen=True)
class Listing:
    """The objects of one version: (key under the version, size) each."""

    objects: tuple[tuple[str, int], ...]

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.objects)


def list_version(s3: Any, uri: str) -> Listing:
    bucket, prefix = s3_uri.split(uri)
    prefix = prefix.rstrip("/") + "/"
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found += [(o["Key"][len(prefix) :], o["Size"]) for o in page.get("Contents", [])]
    return Listing(tuple(found))


def fetch(s3: Any, uri: str, listing: Listing, into: Path, threads: int = FETCH_THREADS) -> None:
    """Every object of `listing` under `uri` into the directory `into`, each checked against its listed size."""
    bucket, prefix = s3_uri.split(uri)
    prefix = prefix.rstrip("/") + "/"

    def one(item: tuple[str, int]) -> None:
        name, size = item
        path = into / name
        path.parent.mkdir(parents=True, exist_ok=True)
        body = s3.get_object(Bucket=bucket, Key=prefix + name)["Body"]
        with path.open("wb") as f:
            shutil.copyfileobj(body, f, MB)
        if path.stat().st_size != size:
            raise OSError(f"{prefix + name}: {path.stat().st_size} bytes fetched of {size}")

    into.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, listing.objects))


class Reading(msgspec.Struct):
    """How the functions read a live version on S3 (ADR 0095): a local copy or S3 itself, the version's size
    against the copy's limit, and why S3 (unset: not looked at)."""

    read: str  # copy, s3
    mb: float | UnsetType = UNSET
    limit_mb: int | UnsetType = UNSET
    copy_dir: str | UnsetType = UNSET
    why: str | UnsetType = UNSET


class LocalCopies:
    """The local copies of one index location's published versions, and which one to read for a live URI.

    `serve(live)` answers at once: the version's copy when it is complete; while a new version is being fetched
    (in a thread of its own), the copy served until now; on first use, nothing to fall back on, so the fetch is
    waited for; the S3 location itself when the version does not fit, its fetch failed, or it is the
    unpublished index.
    """

    def __init__(self, settings: Settings, s3: Any, fetch_: Any = fetch) -> None:
        self._root = settings.index.uri.rstrip("/")
        self._limit = int(settings.index.ephemeral_mb * MB * EPHEMERAL_SHARE)
        key = hashlib.sha256(self._root.encode()).hexdigest()[:12]
        self.dir = settings.index.copies / key
        self._s3, self._fetch = s3, fetch_
        self._retry_s = settings.index.refresh_s
        self._serving: str | None = None  # what was last returned
        self._served: list[str] = []  # local copies this process served, oldest first
        self._remote: dict[str, tuple[str, float]] = {}  # live URI → (why it is read from S3, when to retry)
        self._pending: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self.last: dict[str, Any] = {}  # the last fetch's figures (doctor, bench)

    def serve(self, live: str) -> str:
        version = self._version(live)
        if version is None:
            return self._serve(live, "unpublished")
        local = self.dir / version
        if local.is_dir():
            return self._serve(str(local))
        with self._lock:
            why, retry_at = self._remote.get(live, ("", 0.0))
            if why and time.monotonic() < retry_at:
                return self._serve(live, why)
            if live not in self._pending:
                thread = threading.Thread(target=self._copy, args=(live, version), daemon=True)
                self._pending[live] = thread
                thread.start()
            thread = self._pending[live]
        if self._serving is None:  # first use: nothing older to answer from
            thread.join()
            return self.serve(live)
        return self._serving

    def misfit(self, listing: Listing) -> str | None:
        """Why a version cannot be copied here (it would not fit beside the copy served now), or None."""
        self.dir.mkdir(parents=True, exist_ok=True)
        kept = _size(Path(self._serving)) if self._serving and not self._serving.startswith("s3://") else 0
        free = shutil.disk_usage(self.dir).free
        if listing.bytes + kept <= self._limit and listing.bytes <= free:
            return None
        return (
            f"the version's {listing.bytes / MB:.1f} MB with {kept / MB:.1f} MB kept exceed the "
            f"{self._limit / MB:.0f} MB allowed of INDEX_EPHEMERAL_MB (free {free / MB:.0f} MB): read from S3"
        )

    def plan(self, live: str) -> Reading:
        """How a reader would read `live`, without fetching it (`assist doctor`)."""
        if self._version(live) is None:
            return Reading("s3", why="unpublished: the index built in place changes under its name")
        listing = list_version(self._s3, live)
        why = self.misfit(listing)
        mb, limit_mb = round(listing.bytes / MB, 1), round(self._limit / MB)
        return Reading("s3" if why else "copy", mb, limit_mb, str(self.dir), why or UNSET)

    def state(self) -> dict[str, Any]:
        """What is served and why (`assist doctor`)."""
        served = self._serving or ""
        return {
            "read": "copy" if served and not served.startswith("s3://") else "s3",
            "serving": served or None,
            "copy_dir": str(self.dir),
            "limit_mb": round(self._limit / MB),
            **({"why_s3": self._remote[served][0]} if served in self._remote else {}),
            **({"last_fetch": self.last} if self.last else {}),
        }

    def _serve(self, where: str, why_remote: str | None = None) -> str:
        if where != self._serving:
            why = {"why": why_remote} if why_remote else {}
            log.info("index.copy_serving", index=self._root, serving=where, **why)
            self._serving = where
            if not why_remote:
                self._served.append(where)
                self._prune()
        return where

    def _version(self, live: str) -> str | None:
        if live.rstrip("/") == self._root:
            return None
        return live.rstrip("/").rsplit("/", 1)[-1]

    def _copy(self, live: str, version: str) -> None:
        try:
            listing = list_version(self._s3, live)
            if not listing.objects:
                raise OSError(f"no objects under {live}")
            if why := self.misfit(listing):
                log.warning("index.copy_skipped", index=self._root, version=version, why=why)
                self._remote[live] = (why, float("inf"))  # a version never grows: no retry
                return
            partial = self.dir / f"{PARTIAL}{version}-{os.getpid()}-{threading.get_ident()}"
            shutil.rmtree(partial, ignore_errors=True)
            start = time.perf_counter()
            try:
                self._fetch(self._s3, live, listing, partial)
                try:
                    os.rename(partial, self.dir / version)  # whole, or not at all
                except OSError:  # another process (or thread) put the same version in place first
                    if not (self.dir / version).is_dir():
                        raise
            finally:
                shutil.rmtree(partial, ignore_errors=True)
            seconds = time.perf_counter() - start
            self.last = {
                "version": version,
                "mb": round(listing.bytes / MB, 2),
                "files": len(listing.objects),
                "s": round(seconds, 3),
                "s_per_mb": round(seconds / max(listing.bytes / MB, 1e-6), 4),
            }
            log.info("index.copied", index=self._root, **self.last)
        except Exception as exc:  # a failed copy is served from S3, the source of truth, and said so; tried again
            why = f"copy failed: {type(exc).__name__}: {exc}"  # after the pointer's interval
            log.warning("index.copy_failed", index=self._root, version=version, error=why)
            self._remote[live] = (why, time.monotonic() + self._retry_s)
        finally:
            with self._lock:
                self._pending.pop(live, None)

    def _prune(self) -> None:
        """Drop the copies this process served before the previous one (a question may still be reading that);
        another process's copies in a shared directory (a laptop, the rehearsal) are left to it."""
        for path in set(self._served[:-2]) - set(self._served[-2:]):
            shutil.rmtree(path, ignore_errors=True)
        del self._served[:-2]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0
