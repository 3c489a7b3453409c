"""HTTP for sources: one host, a size limit, redirects that stay on the host, conditional requests,
robots.txt (protego), bounded concurrency with a polite delay. Every refusal is a SourceError that
says what and where."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urljoin, urlsplit

import httpx
from protego import Protego

from assist.sources.spec import SourceError

if TYPE_CHECKING:
    from assist.settings import Settings

T = TypeVar("T")
R = TypeVar("R")
MAX_REDIRECTS = 5


@dataclass
class Response:
    url: str  # after redirects
    status: int  # 200, or 304 (not modified: no body)
    body: bytes
    headers: dict[str, str]

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def host(url: str) -> str:
    """The host a URL names: `http://docs.x.org` and `https://docs.x.org:443` are one site."""
    return (urlsplit(url).hostname or "").lower()


class Fetcher:
    """GETs on one site (the host of `base`, over http or https), at most `crawl.concurrency` at a time, each request
    but the first waiting `crawl.delay_s` (or robots.txt's Crawl-delay, if longer) before it goes."""

    def __init__(self, base: str, settings: Settings) -> None:
        self.origin = origin(base)
        self.settings = settings
        self.delay = settings.crawl.delay_s
        self.requests = 0
        self._lock = threading.Lock()
        self._client = httpx.Client(
            timeout=settings.crawl.timeout_s,
            follow_redirects=False,
            headers={"user-agent": settings.crawl.user_agent},
        )
        self._robots: Any = None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def robots(self) -> None:
        """Read robots.txt: a missing one allows everything; an unreachable site is an error here, first."""
        resp = self.get(urljoin(self.origin, "/robots.txt"), missing_ok=True)
        text = resp.body.decode("utf-8", "replace") if resp.status == 200 else ""
        self._robots = Protego.parse(text)
        if (delay := self._robots.crawl_delay(self.settings.crawl.user_agent)) is not None:
            self.delay = max(self.delay, float(delay))

    def allowed(self, url: str) -> bool:
        return self._robots is None or self._robots.can_fetch(url, self.settings.crawl.user_agent)

    def on_host(self, url: str) -> bool:
        return urlsplit(url).scheme in ("http", "https") and host(url) == host(self.origin)

    def get(self, url: str, validators: dict[str, str] | None = None, missing_ok: bool = False) -> Response:
        """The body of `url` (status 200), or status 304 when `validators` (etag, last-modified) still hold.
        `missing_ok`: a 404/410 comes back as that status instead of an error."""
        headers = {}
        if validators:
            if etag := validators.get("etag"):
                headers["if-none-match"] = etag
            if modified := validators.get("last-modified"):
                headers["if-modified-since"] = modified
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            if not self.on_host(current):
                raise SourceError(f"{url}: redirected off the host {self.origin} to {current}")
            with self._lock:
                self.requests += 1
            try:
                if self.delay and self.requests > 1:  # the polite pause of this request slot
                    time.sleep(self.delay)
                with self._client.stream("GET", current, headers=headers) as resp:
                    if resp.has_redirect_location:
                        current = urljoin(current, resp.headers.get("location", ""))
                        continue
                    if resp.status_code == 304:
                        return Response(current, 304, b"", dict(resp.headers))
                    if resp.status_code in (404, 410) and missing_ok:
                        return Response(current, resp.status_code, b"", dict(resp.headers))
                    if resp.status_code >= 400:
                        raise SourceError(f"{current}: HTTP {resp.status_code}")
                    return Response(current, resp.status_code, self._body(current, resp), dict(resp.headers))
            except httpx.HTTPError as exc:
                raise SourceError(f"{current}: unreachable ({type(exc).__name__}: {exc})") from exc
        raise SourceError(f"{url}: more than {MAX_REDIRECTS} redirects")

    def _body(self, url: str, resp: Any) -> bytes:
        limit = self.settings.crawl.max_page_bytes
        declared = resp.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise SourceError(f"{url}: {int(declared)} bytes, over the limit of {limit} (CRAWL_MAX_PAGE_BYTES)")
        body = bytearray()
        for part in resp.iter_bytes():
            body += part
            if len(body) > limit:
                raise SourceError(f"{url}: over the limit of {limit} bytes (CRAWL_MAX_PAGE_BYTES)")
        return bytes(body)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """fn over items on `crawl.concurrency` threads (each request waits `delay` first), in order."""
        with ThreadPoolExecutor(max_workers=max(1, self.settings.crawl.concurrency)) as pool:
            return list(pool.map(fn, items))


def check_text(where: str, body: bytes) -> str:
    """The body as text; a binary one (NUL bytes in its first 8 KB) is refused."""
    if b"\x00" in body[:8192]:
        raise SourceError(f"{where}: binary content, not text")
    return body.decode("utf-8", "replace")
