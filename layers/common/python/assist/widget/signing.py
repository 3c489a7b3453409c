"""The keys visitor tokens are signed and verified with, read again every `WIDGET_TOKEN_KEY_CACHE_S` (ADR 0093).

Where the key comes from, first found:
- `WIDGET_TOKEN_KEY` (and `WIDGET_TOKEN_KEY_PREVIOUS` while a rotation settles): set when the process starts,
  which is when its rotation took effect;
- the Secrets Manager secret `WIDGET_TOKEN_KEY_SECRET` names (the template's): its AWSCURRENT version signs,
  AWSPREVIOUS still verifies, and the current version's creation is the rotation's time;
- neither (a checkout, a container, the local stack): a key made once by the first process, where secrets are
  kept, never in the widget table: a file readable by its owner only beside the embedded store's file, or a
  Secrets Manager secret named after the widget table.
Every key must be at least 32 bytes (`settings.MIN_KEY_BYTES`): a shorter one stops start-up (Settings) or, read
from a secret, every token signed or verified, with an error naming where it came from.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path

from assist.aws.secrets import generated_secret, secret_stages
from assist.logs import get_logger
from assist.settings import Settings, check_strength
from assist.widget.tokens import KeyRing

log = get_logger(__name__)
KEY_FILE_SUFFIX = ".token-key"


class SigningKeys:
    """The ring as this process last read it; read again once `token_key_cache_s` has passed (a failed read
    keeps the last ring, so a throttled Secrets Manager does not stop visitors), and at most once a second when a
    token names a key the ring does not hold: the rotated key another process read first (ADR 0119)."""

    MISS_REREAD_S = 1.0

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._clock = clock
        self._started = clock()  # an environment's keys took effect when the process started
        self._ring: KeyRing | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def ring(self, kid: str | None = None) -> KeyRing:
        """`kid`: the key a token to verify names; a ring without it is read again (no more than once a second)."""
        with self._lock:
            now = self._clock()
            age = now - self._read_at
            unknown = kid is not None and self._ring is not None and not self._ring.holds(kid)
            if (
                self._ring is None
                or age >= self.settings.widget.token_key_cache_s
                or (unknown and age >= self.MISS_REREAD_S)
            ):
                try:
                    self._ring = self._read()
                except Exception as exc:
                    if self._ring is None:
                        raise
                    log.warning("widget.token_key_unread", error=str(exc)[:200], kept_since=self._read_at)
                self._read_at = now
            return self._ring

    def _read(self) -> KeyRing:
        w = self.settings.widget
        if w.token_key:  # Settings checked both at start-up
            return KeyRing(w.token_key, w.token_key_previous, self._started)
        if w.token_key_secret:
            current, made, previous = secret_stages(self.settings, w.token_key_secret)
            source = f"the secret WIDGET_TOKEN_KEY_SECRET={w.token_key_secret}"
            return KeyRing(
                check_strength(current, source),
                check_strength(previous, source + " (AWSPREVIOUS)") if previous is not None else None,
                made,
            )
        return KeyRing(self._made_once(), None, 0.0)

    def _made_once(self) -> str:
        made = secrets.token_urlsafe(48)
        if self.settings.session_backend == "file":
            return key_file(Path(f"{self.settings.sessions.store_file}{KEY_FILE_SUFFIX}"), made)

        name = f"{self.settings.widget.table}/visitor-token-key"
        return check_strength(
            generated_secret(self.settings, name, made, "visitor-token key made by assist (docs/widget.md)"),
            f"the secret {name}",
        )


def key_file(path: Path, made: str) -> str:
    """The key in `path`, written with `made` by the first process (mode 0600, linked into place whole, so no
    process reads a half-written key and two first processes agree on one)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(made)
            with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
                os.link(fresh, path)
        finally:
            fresh.unlink()
    return check_strength(path.read_text().strip(), f"the key file {path}")
