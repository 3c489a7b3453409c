"""An HTTP proxy in front of the moto server that injects faults at the real boundary.

boto3 and LanceDB are pointed at the proxy instead of moto; a rule can delay or fail the
requests it matches (by DynamoDB operation via `X-Amz-Target`, or by S3 path), a given
number of times or until cleared. Everything else is forwarded untouched.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

Match = Callable[[str, str, dict[str, str]], bool]  # method, path, headers → applies?


@dataclass
class Rule:
    match: Match
    delay_s: float = 0.0
    status: int | None = None
    body: bytes = b""
    headers: dict[str, str] | None = None
    times: int | None = None  # None: until cleared
    hits: int = 0


def dynamodb_op(*ops: str) -> Match:
    return lambda m, p, h: h.get("x-amz-target", "").split(".")[-1] in ops


def s3_path(prefix: str) -> Match:
    return lambda m, p, h: "x-amz-target" not in h and p.startswith(prefix)


def throttled() -> dict:
    """What DynamoDB answers when a table's throughput is exceeded."""
    body = (
        b'{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",'
        b'"message":"The level of configured provisioned throughput for the table was exceeded."}'
    )
    return {"status": 400, "body": body, "headers": {"Content-Type": "application/x-amz-json-1.0"}}


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        u = urlsplit(upstream)
        self._upstream = (u.hostname or "127.0.0.1", u.port or 80)
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.handle_error = lambda *args: None  # a client gone mid-request is not a test failure
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, match: Match, **kwargs: object) -> Rule:
        rule = Rule(match=match, **kwargs)  # type: ignore[arg-type]
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def _rule_for(self, method: str, path: str, headers: dict[str, str]) -> Rule | None:
        with self._lock:
            for rule in self._rules:
                if (rule.times is None or rule.hits < rule.times) and rule.match(method, path, headers):
                    rule.hits += 1
                    return rule
        return None

    def _handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        h.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        rule = self._rule_for(h.command, h.path, headers)
        if rule and rule.delay_s:
            time.sleep(rule.delay_s)
        if rule and rule.status:
            h.send_response(rule.status)
            for k, v in (rule.headers or {}).items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(rule.body)))
            h.end_headers()
            h.wfile.write(rule.body)
            return
        conn = http.client.HTTPConnection(*self._upstream, timeout=60)
        try:
            conn.request(h.command, h.path, body=body, headers={k: v for k, v in h.headers.items()})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)
