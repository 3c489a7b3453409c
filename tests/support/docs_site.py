"""A small docs website on loopback for the sources tests and benchmarks: pages held in memory (change
or remove them between syncs), ETag and Last-Modified answered with 304, redirects, and a log of every
request with its status."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class DocsSite:
    def __init__(self) -> None:
        self.pages: dict[str, tuple[str, bytes]] = {}  # path → (content type, body)
        self.redirects: dict[str, str] = {}  # path → Location
        self.modified: dict[str, float] = {}
        self.log: list[tuple[str, int]] = []  # (path, status) of every request
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site._serve(self)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def put(self, path: str, body: str | bytes, content_type: str = "text/html; charset=utf-8", at: float = 0) -> None:
        self.pages[path] = (content_type, body.encode() if isinstance(body, str) else body)
        self.modified[path] = at or 1_700_000_000 + len(self.modified)

    def statuses(self, path: str) -> Counter[int]:
        return Counter(status for p, status in self.log if p == path)

    def bodies_sent(self) -> int:
        """Requests answered 200 with a page body (robots.txt and the sitemap not counted)."""
        return sum(1 for p, s in self.log if s == 200 and not p.endswith((".txt", ".xml")))

    def _serve(self, req: BaseHTTPRequestHandler) -> None:
        path = req.path.split("?", 1)[0]
        if path.endswith("/") and path + "index.html" in self.pages:  # a folder serves its index page
            path += "index.html"
        if path in self.redirects:
            self._reply(req, path, 302, b"", {"Location": self.redirects[path]})
            return
        if path not in self.pages:
            self._reply(req, path, 404, b"not found", {"Content-Type": "text/plain"})
            return
        content_type, body = self.pages[path]
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        headers = {
            "Content-Type": content_type,
            "ETag": etag,
            "Last-Modified": formatdate(self.modified[path], usegmt=True),
        }
        if req.headers.get("If-None-Match") == etag:
            self._reply(req, path, 304, b"", headers)
            return
        self._reply(req, path, 200, body, headers)

    def _reply(self, req: BaseHTTPRequestHandler, path: str, status: int, body: bytes, headers: dict[str, str]) -> None:
        with self._lock:
            self.log.append((path, status))
        req.send_response(status)
        for k, v in headers.items():
            req.send_header(k, v)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        if body:
            req.wfile.write(body)

    def __enter__(self) -> DocsSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def chrome_page(title: str, body_html: str, nav: list[tuple[str, str]]) -> str:
    """A page as a docs theme renders it: header, navigation of the whole site, a table of contents,
    the content, a feedback widget and a footer."""
    links = "".join(f'<li><a href="{href}">{name}</a></li>' for href, name in nav)
    return f"""<!doctype html><html><head><title>{title} | Acme Docs</title>
<script>window.analytics = "tracking";</script><style>body {{ color: black; }}</style></head>
<body><a class="skip-link" href="#main">Skip to content</a>
<header class="md-header"><nav aria-label="top"><a href="/">Acme Docs</a> Products Pricing Blog</nav>
<input type="search" placeholder="Search the docs"></header>
<div class="md-sidebar"><nav class="md-nav"><ul>{links}</ul></nav></div>
<main id="main"><article class="md-content">{body_html}
<nav class="toc"><p>On this page</p><ul><li>Overview</li></ul></nav>
<div class="feedback">Was this page helpful? <button>Yes</button><button>No</button></div>
</article></main>
<footer class="md-footer">Copyright 2026 Acme Corp. Privacy. Terms. Status page.</footer></body></html>"""


def sitemap(base: str, paths: list[tuple[str, str]]) -> str:
    urls = "".join(f"<url><loc>{base}{p}</loc>{f'<lastmod>{m}</lastmod>' if m else ''}</url>" for p, m in paths)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
