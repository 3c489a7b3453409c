"""A Lambda Runtime API on loopback: hands queued events to a runtime interface client, records its replies.

The function images run `python -m awslambdaric functions.<name>.app.handler` in Lambda; with
`AWS_LAMBDA_RUNTIME_API` aimed here the same command runs as a plain process (what the Lambda
runtime interface emulator does for an image). Stdlib only.
"""

from __future__ import annotations

import http.server
import json
import queue
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from assist.local.stack import free_port

PREFIX = "/2018-06-01/runtime"


@dataclass
class Reply:
    request_id: str
    kind: str  # "response" | "error"
    body: Any


class LambdaRuntimeAPI:
    def __init__(self) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.replies: queue.Queue[Reply] = queue.Queue()
        self.init_errors: list[Any] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        self._server.daemon_threads = True
        self._server.api = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LambdaRuntimeAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def invoke(self, event: Any, timeout: float = 60) -> Reply:
        request_id = uuid.uuid4().hex
        self.events.put((request_id, event))
        reply = self.replies.get(timeout=timeout)
        assert reply.request_id == request_id
        return reply


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != f"{PREFIX}/invocation/next":
            return self._send(404, {"message": self.path})
        request_id, event = self.server.api.events.get()  # long poll, as the real API does
        self._send(
            200,
            event,
            {
                "Lambda-Runtime-Aws-Request-Id": request_id,
                "Lambda-Runtime-Deadline-Ms": "9999999999999",
                "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:assist",
                "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000",
            },
        )

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        data = json.loads(body) if body else None
        parts = self.path[len(PREFIX) :].strip("/").split("/")
        if parts[:2] == ["init", "error"]:
            self.server.api.init_errors.append(data)
        elif parts[0] == "invocation" and len(parts) == 3:
            self.server.api.replies.put(Reply(parts[1], parts[2], data))
        self._send(202, {"status": "OK"})

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
