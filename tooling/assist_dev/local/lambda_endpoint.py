"""The Lambda Invoke API on loopback, so moto's ASL interpreter runs our real handlers without Docker.

moto's interpreter invokes a Lambda task through boto3 aimed at `http://localhost:$MOTO_PORT`,
reading `MOTO_PORT` on every task. This server listens on that port:
`POST /2015-03-31/functions/{name}/invocations` runs the function's Lambda entry point
in-process and answers as Lambda does (an unhandled error is `X-Amz-Function-Error:
Unhandled` with `{"errorMessage", "errorType"}`), and every other request is forwarded to
the moto server unchanged. Retry and Catch then behave as in AWS.

Nagle's algorithm is switched off on accepted sockets: http.server writes the headers and
the body separately, and the second small write would wait for the client's delayed ACK
(~40 ms per invocation).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import os
import socket
import threading
import traceback
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from assist.logs import get_logger
from assist_dev.local.ports import free_port

log = get_logger(__name__)
INVOKE_PREFIX = "/2015-03-31/functions/"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}


class Invocable(Protocol):
    """What the endpoint invokes: a LambdaFunction, or anything with its entry point's signature."""

    def handler(self, event: Any, context: Any = None) -> Any: ...


#: an AWS API call served here instead of by moto, by its X-Amz-Target: (headers, body) → (status, body, headers)
Target = Callable[[dict[str, str], bytes], tuple[int, bytes, dict[str, str]]]
#: an S3 request moto's interpreter signs with its own key (a Distributed Map's ItemReader): (method, path,
#: headers) → (status, body, headers)
InterpreterS3 = Callable[[str, str, dict[str, str]], tuple[int, bytes, dict[str, str]]]
#: the access key moto's ASL interpreter signs its own AWS calls with
INTERPRETER_KEY = "ak"


@dataclass
class LocalContext:
    """The parts of Lambda's context object that handlers and mangum read."""

    function_name: str
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@runtime_checkable
class Remote(Protocol):
    """A function running elsewhere (its own process) that answers an invocation as Lambda's Invoke does."""

    def invoke(self, event: Any) -> tuple[Any, str | None]: ...


def function_name(path: str) -> str:
    """`/2015-03-31/functions/{name or ARN, URL-encoded}/invocations` → the bare function name."""
    raw = urllib.parse.unquote(path[len(INVOKE_PREFIX) :].split("/", 1)[0])
    return raw.split(":")[6] if raw.startswith("arn:") else raw.split(":")[0]


class LambdaEndpoint:
    """Serves `functions` (bare name → a LambdaFunction in this process, or a `Remote` one) and forwards
    everything else to `upstream`."""

    def __init__(
        self,
        functions: dict[str, Invocable | Remote],
        upstream: str,
        nodelay: bool = True,
        targets: dict[str, Target] | None = None,
        may_invoke: Callable[[str], bool] | None = None,
        interpreter_s3: InterpreterS3 | None = None,
    ) -> None:
        """`targets`: API calls moto lacks, served here (the rehearsal's StartSyncExecution); `may_invoke(name)`:
        whether the caller (the state machine's role) may invoke that function (False: Lambda's 403);
        `interpreter_s3`: serves the S3 calls the interpreter makes with its own key (else forwarded)."""
        self.functions = functions
        self.targets = targets or {}
        self.may_invoke = may_invoke
        self.interpreter_s3 = interpreter_s3
        self.upstream = urllib.parse.urlsplit(upstream)
        self.nodelay = nodelay
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.invocations: Counter[str] = Counter()
        self._failures: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        self._server.daemon_threads = True
        self._server.endpoint = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="lambda-endpoint", daemon=True)

    def start(self) -> LambdaEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def fail_next(self, name: str, n: int, error_type: str = "TransientError") -> None:
        """Fault injection at the invoke boundary: the next `n` invocations of `name` fail with `error_type`."""
        with self._lock:
            self._failures[name] = (n, error_type)

    def invoke(self, name: str, payload: Any) -> tuple[Any, str | None]:
        """Run one invocation: (result, None) or (Lambda's error body, "Unhandled")."""
        with self._lock:
            self.invocations[name] += 1
            left, error_type = self._failures.get(name, (0, ""))
            if left:
                self._failures[name] = (left - 1, error_type)
        request_id = uuid.uuid4().hex
        if left:
            log.info("lambda.injected_failure", function=name, error=error_type)
            return {"errorMessage": f"injected {error_type}", "errorType": error_type, "requestId": request_id}, (
                "Unhandled"
            )
        runner = self.functions[name]
        if isinstance(runner, Remote):  # a function in its own process answers as Lambda does
            return runner.invoke(payload)
        context = LocalContext(function_name=name, aws_request_id=request_id)
        try:
            return runner.handler(payload, context), None
        except Exception as exc:  # what the Lambda runtime reports for an unhandled error
            return {
                "errorMessage": str(exc),
                "errorType": type(exc).__name__,
                "requestId": request_id,
                "stackTrace": traceback.format_exception(exc)[-5:],
            }, "Unhandled"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Lambda's endpoint
    server: Any

    def setup(self) -> None:
        super().setup()
        if self.server.endpoint.nodelay:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # one line per task drowns our events
        pass

    def do_POST(self) -> None:
        if self.path.startswith(INVOKE_PREFIX) and self.path.split("?")[0].endswith("/invocations"):
            self._invoke()
        else:
            self._forward()

    def do_GET(self) -> None:
        self._forward()

    do_PUT = do_DELETE = do_HEAD = do_PATCH = do_GET

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _invoke(self) -> None:
        endpoint: LambdaEndpoint = self.server.endpoint
        name = function_name(self.path)
        body = self._body()
        if name not in endpoint.functions:
            error = {"Type": "User", "message": f"Function not found: {name}"}
            return self._reply(404, json.dumps(error).encode(), {"x-amzn-ErrorType": "ResourceNotFoundException"})
        if endpoint.may_invoke is not None and not endpoint.may_invoke(name):
            error = {"Type": "User", "message": f"not authorized to perform lambda:InvokeFunction on {name}"}
            return self._reply(403, json.dumps(error).encode(), {"x-amzn-ErrorType": "AccessDeniedException"})
        if self.headers.get("x-amz-invocation-type", "RequestResponse") != "RequestResponse":
            error = {"Type": "User", "message": "the local endpoint serves synchronous (RequestResponse) invokes only"}
            return self._reply(400, json.dumps(error).encode(), {"x-amzn-ErrorType": "InvalidParameterValueException"})
        payload = json.loads(body or b"{}")
        result, function_error = endpoint.invoke(name, payload)
        headers = {"X-Amz-Executed-Version": "$LATEST"}
        if function_error:
            headers["X-Amz-Function-Error"] = function_error
        self._reply(200, json.dumps(result).encode(), headers)

    def _forward(self) -> None:
        up = self.server.endpoint.upstream
        body = self._body()
        endpoint: LambdaEndpoint = self.server.endpoint
        if (target := endpoint.targets.get(self.headers.get("X-Amz-Target", ""))) is not None:
            return self._reply(*target(dict(self.headers.items()), body))
        signed_by = (self.headers.get("Authorization") or "").split("Credential=", 1)[-1].split("/", 1)[0]
        if endpoint.interpreter_s3 is not None and signed_by == INTERPRETER_KEY:
            return self._reply(*endpoint.interpreter_s3(self.command, self.path, dict(self.headers.items())))
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            conn.request(self.command, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            kept = {k: v for k, v in resp.getheaders() if k.lower() not in _HOP_BY_HOP}
            self._reply(resp.status, data, kept)
        finally:
            conn.close()

    def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        if not any(k.lower() == "content-type" for k in headers):
            headers = {**headers, "Content-Type": "application/json"}
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


@contextlib.contextmanager
def interpreter_calls(endpoint: LambdaEndpoint) -> Any:
    """Aim moto's ASL interpreter (which reads MOTO_PORT on every task) at `endpoint` while inside."""
    before = os.environ.get("MOTO_PORT")
    # moto's own setting, not the engine's configuration: written here, never read by assist
    os.environ["MOTO_PORT"] = str(endpoint.port)
    try:
        yield endpoint
    finally:
        if before is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = before
