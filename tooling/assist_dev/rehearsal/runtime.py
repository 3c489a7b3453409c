"""A function as Lambda runs it: its image's command in a process of its own, fed by a Lambda Runtime API.

Each function image runs `python -m awslambdaric functions.<module>.app.handler` (infra/entry.sh);
aimed at `LambdaRuntimeAPI` through `AWS_LAMBDA_RUNTIME_API`, the same command runs here as a
plain process. Every invocation carries `Lambda-Runtime-Deadline-Ms` = now + the function's
timeout, so the handler's context counts down as in Lambda. Stdlib only.
"""

from __future__ import annotations

import http.server
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from assist_dev.local.ports import free_port

PREFIX = "/2018-06-01/runtime"


@dataclass
class Reply:
    request_id: str
    kind: str  # "response" | "error"
    body: Any


class LambdaRuntimeAPI:
    """Hands queued events to one runtime interface client and collects its replies."""

    def __init__(self, function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:assist") -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.function_arn = function_arn
        self.events: queue.Queue[tuple[str, Any, int]] = queue.Queue()
        self.replies: queue.Queue[Reply] = queue.Queue()
        self.init_errors: list[Any] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        self._server.daemon_threads = True
        self._server.api = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._lock = threading.Lock()  # one invocation at a time, as one Lambda execution environment

    def __enter__(self) -> LambdaRuntimeAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def invoke(self, event: Any, timeout_s: float = 60) -> Reply:
        """One invocation whose context has `timeout_s` left when the handler starts."""
        with self._lock:
            request_id = uuid.uuid4().hex
            self.events.put((request_id, event, int((time.time() + timeout_s) * 1000)))
            reply = self.replies.get(timeout=timeout_s + 30)  # past its deadline Lambda would have killed it
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
        api: LambdaRuntimeAPI = self.server.api
        request_id, event, deadline_ms = api.events.get()  # long poll, as the real API does
        self._send(
            200,
            event,
            {
                "Lambda-Runtime-Aws-Request-Id": request_id,
                "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                "Lambda-Runtime-Invoked-Function-Arn": api.function_arn,
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


class FunctionProcess:
    """One function's image command (`lambda` or `http`) in its own process, with exactly `env`."""

    def __init__(
        self, module: str, command: str, env: dict[str, str], cwd: Path, timeout_s: int, log: IO[bytes]
    ) -> None:
        self.module, self.mode, self.timeout_s, self.env = module, command, timeout_s, env
        self.api: LambdaRuntimeAPI | None = None
        self.url: str | None = None
        base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
        if command == "http":
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            argv = ["-m", "uvicorn", f"functions.{module}.app:app", "--host", "127.0.0.1", "--port", str(port)]
            argv += ["--no-access-log", "--no-proxy-headers"]
        else:
            self.api = LambdaRuntimeAPI(env.get("FUNCTION_ARN", "arn:aws:lambda:us-east-1:123456789012:function:f"))
            self.api.__enter__()
            env = {**env, "AWS_LAMBDA_RUNTIME_API": self.api.address}
            argv = ["-m", "awslambdaric", f"functions.{module}.app.handler"]
        self.proc = subprocess.Popen(
            [sys.executable, *argv],
            cwd=cwd,
            env={**base, **env, "PYTHONPATH": f"{cwd}:{cwd / 'layers/common/python'}"},
            stdout=log,
            stderr=log,
        )

    def invoke(self, event: Any) -> tuple[Any, str | None]:
        """Lambda's Invoke: (result, None), or (the error body, "Unhandled")."""
        assert self.api is not None, "an http function is called over HTTP"
        reply = self.api.invoke(event, self.timeout_s)
        return reply.body, ("Unhandled" if reply.kind == "error" else None)

    def wait_ready(self, timeout_s: float = 120) -> None:
        """An http function answers /healthz; a lambda one is ready when its client polls (first invoke)."""
        if self.url is None:
            return

        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"functions.{self.module} exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:  # noqa: S310 - loopback
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"functions.{self.module} did not answer /healthz within {timeout_s:.0f} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.api is not None:
            self.api.__exit__()
