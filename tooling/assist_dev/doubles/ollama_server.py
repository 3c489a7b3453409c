"""Wire-compatible Ollama HTTP test server.

A test double for the externally hosted Ollama service (in the spirit of moto for AWS): it speaks the real Ollama
HTTP API on 127.0.0.1 so the product is exercised through the official ``ollama`` client and httpx, with no
function patching. Replies, latency, failures and disconnects are scripted by the test. Stdlib only.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import math
import re
import select
import socket
import socketserver
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

Responder = Callable[[dict[str, Any]], str]

_TOKEN_RE = re.compile(r"\S+\s*|\s+")
_LOAD_DURATION_NS = 1_000_000
_POLL_INTERVAL_S = 0.05


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it, so tests can assert on what the product actually sent."""

    path: str
    method: str
    body: dict[str, Any] | None
    model: str | None
    time: float  # time.monotonic() at arrival
    authorization: str | None = None  # the Authorization header as sent (a bearer token for a proxy)


class _StreamAborted(Exception):
    """The response could not be completed: the client hung up, or the server is stopping."""


def _canonical(name: str) -> str:
    """Ollama resolves an untagged name to ``name:latest``; mirror it so lookups behave like the real server."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _word_count(texts: Iterable[Any]) -> int:
    """Rough prompt token count; exact tokenisation is irrelevant for a test double."""
    return sum(len(text.split()) for text in texts if isinstance(text, str))


class OllamaTestServer:
    """Scriptable Ollama server running in a background thread on a free 127.0.0.1 port.

    Reply precedence for /api/chat and /api/generate: the model's reply queue, the global reply queue,
    ``responder``, the model's default reply, the global default reply, ``DEFAULT_REPLY``.
    """

    DEFAULT_MODELS = ("qwen3:1.7b", "qwen3:0.6b")
    DEFAULT_REPLY = "This is a scripted answer [1]."

    def __init__(
        self,
        models: Iterable[str] = DEFAULT_MODELS,
        *,
        embedding_dim: int = 384,
        version: str = "0.12.6",
    ) -> None:
        self.embedding_dim = embedding_dim
        self.version = version
        self.token_delay_s = 0.0
        self.first_token_delay_s = 0.0
        self.embed_delay_s = 0.0  # a cold or busy embedding model
        self.responder: Responder | None = None
        self.disconnected = threading.Event()
        self._lock = threading.Lock()
        self._models = [_canonical(m) for m in models]
        self._replies: dict[str | None, str] = {}
        self._queues: dict[str | None, deque[str]] = {}
        self._failures: deque[tuple[int, str]] = deque()
        self._down: set[str] = set()
        self._all_down = False
        self._drop_next = False
        self._requests: list[RecordedRequest] = []
        self._disconnects = 0
        self._modified_at = _now_iso()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Bind a free port and serve in a daemon thread; use the context manager rather than calling this."""
        if self._httpd is not None:
            raise RuntimeError("OllamaTestServer already started")
        self._stopping.clear()
        self._httpd = _HTTPServer(self, ("127.0.0.1", 0))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL_S},
            name="OllamaTestServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, abort in-flight streams, close keep-alive connections and join every thread."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._httpd = self._thread = None
        self._stopping.set()
        httpd.shutdown()
        thread.join()
        try:
            httpd.close_connections_and_join()
        finally:
            httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL to hand to ``ollama.Client(host=...)`` or to the product's configuration."""
        if self._httpd is None:
            raise RuntimeError("OllamaTestServer is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # ----------------------------------------------------------------------------------------------- scripting

    @property
    def models(self) -> list[str]:
        """Served model names, normalised the way Ollama does (``name`` -> ``name:latest``)."""
        with self._lock:
            return list(self._models)

    def set_models(self, models: Iterable[str]) -> None:
        """Replace the served models, e.g. to simulate a model that was never pulled."""
        with self._lock:
            self._models = [_canonical(m) for m in models]

    def reply(self, text: str, model: str | None = None) -> None:
        """Set the default reply for one model, or for all models when ``model`` is None."""
        with self._lock:
            self._replies[_canonical(model) if model else None] = text

    def queue_replies(self, texts: Iterable[str], model: str | None = None) -> None:
        """Append replies consumed one per chat/generate call before any default reply applies."""
        with self._lock:
            self._queues.setdefault(_canonical(model) if model else None, deque()).extend(texts)

    def fail_next(self, n: int = 1, status: int = 500, message: str = "internal server error") -> None:
        """Make the next ``n`` chat/generate/embed calls fail with ``status`` and ``{"error": message}``."""
        with self._lock:
            self._failures.extend([(status, message)] * n)

    def set_down(self, model: str | None = None) -> None:
        """Make one model (or all) answer 500 "model is unavailable" until ``set_up``."""
        with self._lock:
            if model is None:
                self._all_down = True
            else:
                self._down.add(_canonical(model))

    def set_up(self, model: str | None = None) -> None:
        """Undo ``set_down(model)``; with no argument, bring every model back up."""
        with self._lock:
            if model is None:
                self._all_down = False
                self._down.clear()
            else:
                self._down.discard(_canonical(model))

    def drop_connection_next(self) -> None:
        """Make the next chat/generate call lose its connection: after the first streamed token, or before a
        non-streamed reply is sent."""
        with self._lock:
            self._drop_next = True

    # ----------------------------------------------------------------------------------------------- recording

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of every request received since start or ``clear()``, in arrival order."""
        with self._lock:
            return list(self._requests)

    def calls(self, path: str = "/api/chat", model: str | None = None) -> list[RecordedRequest]:
        """Recorded requests to ``path``, optionally only those naming ``model``."""
        wanted = _canonical(model) if model else None
        return [
            r
            for r in self.requests
            if r.path == path and (wanted is None or (r.model is not None and _canonical(r.model) == wanted))
        ]

    @property
    def disconnects(self) -> int:
        """Responses abandoned because the client closed the connection before they ended."""
        with self._lock:
            return self._disconnects

    def clear(self) -> None:
        """Forget recorded requests and disconnects (scripted behaviour is kept)."""
        with self._lock:
            self._requests.clear()
            self._disconnects = 0
            self.disconnected.clear()

    # ----------------------------------------------------------------------------------------------- helpers

    @staticmethod
    def split_tokens(text: str) -> list[str]:
        """Split a reply into streamed tokens at whitespace, keeping it, so the deltas concatenate back exactly."""
        return _TOKEN_RE.findall(text)

    @staticmethod
    def embedding_for(text: str, dim: int = 384) -> list[float]:
        """Deterministic L2-normalised vector derived from a hash of ``text``: what /api/embed returns for it."""
        raw = hashlib.shake_256(text.encode()).digest(4 * dim)
        values = [v / 2**31 - 1.0 for v in struct.unpack(f"<{dim}I", raw)]
        norm = math.sqrt(sum(v * v for v in values)) or 1.0
        return [v / norm for v in values]

    # ----------------------------------------------------------------------------------------------- internals

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _admit(self, model: str) -> tuple[int, str] | None:
        """Return the scripted or natural error for a model call, or None when it may proceed."""
        with self._lock:
            if self._failures:
                return self._failures.popleft()
            key = _canonical(model)
            if key not in self._models:
                return 404, f'model "{model}" not found, try pulling it first'
            if self._all_down or key in self._down:
                return 500, "model is unavailable"
            return None

    def _next_reply(self, model: str, body: dict[str, Any]) -> tuple[str, bool]:
        """Pick the reply text (see class docstring) and whether this call must drop its connection."""
        key = _canonical(model)
        with self._lock:
            drop, self._drop_next = self._drop_next, False
            for queue_key in (key, None):
                queue = self._queues.get(queue_key)
                if queue:
                    return queue.popleft(), drop
            responder = self.responder
            default = self._replies.get(key, self._replies.get(None, self.DEFAULT_REPLY))
        return (responder(body) if responder is not None else default), drop

    def _note_disconnect(self) -> None:
        with self._lock:
            self._disconnects += 1
        self.disconnected.set()


class _HTTPServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks its connections and handler threads so ``stop()`` can end them all."""

    daemon_threads = True
    _JOIN_TIMEOUT_S = 5.0

    def __init__(self, owner: OllamaTestServer, address: tuple[str, int]) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._handler_threads: list[threading.Thread] = []
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Skip HTTPServer's reverse DNS lookup (socket.getfqdn), which can stall start-up for seconds."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        """Start the handler thread here because socketserver never joins daemon threads, and stop() must."""
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="OllamaTestServer-handler",
            daemon=self.daemon_threads,
        )
        with self._connections_lock:
            self._connections.add(request)
            self._handler_threads = [t for t in self._handler_threads if t.is_alive()] + [thread]
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections_and_join(self) -> None:
        """Wake handler threads blocked reading the next keep-alive request or pausing mid-stream, and join them."""
        with self._connections_lock:
            connections, threads = list(self._connections), list(self._handler_threads)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(self._JOIN_TIMEOUT_S)
        if stuck := [t for t in threads if t.is_alive()]:
            raise RuntimeError(f"{len(stuck)} OllamaTestServer handler thread(s) did not stop (stuck responder?)")

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up is routine for a streaming server; only report genuine handler errors."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    """Routes one connection's requests; HTTP/1.1 keep-alive like the httpx pool behind the ollama client."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY: otherwise each small streamed chunk can wait ~40 ms
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests inspect ``OllamaTestServer.requests`` instead."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    @property
    def _owner(self) -> OllamaTestServer:
        return self.server.owner

    def _dispatch(self, method: str) -> None:
        try:
            self._route(method)
        except _StreamAborted:
            self.close_connection = True
            if not self._owner._stopping.is_set():
                self._owner._note_disconnect()

    def _route(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization")
        try:
            body = json.loads(raw) if raw else None
        except ValueError as exc:
            self._owner._record(RecordedRequest(path, method, None, None, time.monotonic(), auth))
            self._send_json(400, {"error": f"invalid JSON body: {exc}"})
            return
        if not isinstance(body, dict):
            body = None
        model = body.get("model") if body else None
        self._owner._record(RecordedRequest(path, method, body, model, time.monotonic(), auth))
        routes: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
            ("GET", "/"): self._root,
            ("HEAD", "/"): self._root,
            ("GET", "/api/version"): self._version,
            ("GET", "/api/tags"): self._tags,
            ("POST", "/api/chat"): self._chat,
            ("POST", "/api/generate"): self._generate,
            ("POST", "/api/embed"): self._embed,
        }
        route = routes.get((method, path))
        if route is None:
            self._send(404, "text/plain; charset=utf-8", b"404 page not found")
            return
        route(body or {})

    # ----------------------------------------------------------------------------------------------- endpoints

    def _root(self, _body: dict[str, Any]) -> None:
        self._send(200, "text/plain; charset=utf-8", b"Ollama is running")

    def _version(self, _body: dict[str, Any]) -> None:
        self._send_json(200, {"version": self._owner.version})

    def _tags(self, _body: dict[str, Any]) -> None:
        models = []
        for name in self._owner.models:
            digest = hashlib.sha256(name.encode()).hexdigest()
            base, tag = name.rsplit(":", 1)
            family = base.rsplit("/", 1)[-1]
            models.append(
                {
                    "name": name,
                    "model": name,
                    "modified_at": self._owner._modified_at,
                    "size": 500_000_000 + int(digest[:8], 16) % 1_000_000_000,
                    "digest": digest,
                    "details": {
                        "parent_model": "",
                        "format": "gguf",
                        "family": family,
                        "families": [family],
                        "parameter_size": tag.upper() if re.fullmatch(r"\d+(\.\d+)?[bm]", tag) else "",
                        "quantization_level": "Q4_K_M",
                    },
                }
            )
        self._send_json(200, {"models": models})

    def _chat(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        prompt_tokens = _word_count(m.get("content") for m in messages if isinstance(m, dict))
        self._complete(body, prompt_tokens, lambda text: {"message": {"role": "assistant", "content": text}})

    def _generate(self, body: dict[str, Any]) -> None:
        prompt_tokens = _word_count([body.get("system"), body.get("prompt")])
        self._complete(body, prompt_tokens, lambda text: {"response": text})

    def _embed(self, body: dict[str, Any]) -> None:
        started = time.monotonic_ns()
        model = self._admitted_model(body)
        if model is None:
            return
        inputs = body.get("input", "")
        if isinstance(inputs, str):
            inputs = [inputs] if inputs else []
        if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
            self._send_json(400, {"error": "invalid input type"})
            return
        dim = body.get("dimensions") or self._owner.embedding_dim
        self._pause(self._owner.embed_delay_s)
        self._send_json(
            200,
            {
                "model": model,
                "embeddings": [OllamaTestServer.embedding_for(text, dim) for text in inputs],
                "total_duration": time.monotonic_ns() - started + _LOAD_DURATION_NS,
                "load_duration": _LOAD_DURATION_NS,
                "prompt_eval_count": _word_count(inputs),
            },
        )

    # ----------------------------------------------------------------------------------------------- completion

    def _admitted_model(self, body: dict[str, Any]) -> str | None:
        """Answer the error response and return None when the call must fail, else return the model name."""
        model = body.get("model")
        if not isinstance(model, str) or not model:
            self._send_json(400, {"error": "model is required"})
            return None
        error = self._owner._admit(model)
        if error is not None:
            self._send_json(error[0], {"error": error[1]})
            return None
        return model

    def _complete(self, body: dict[str, Any], prompt_tokens: int, payload: Callable[[str], dict[str, Any]]) -> None:
        """Shared chat/generate flow; ``payload`` shapes a text delta as ``message`` or ``response``."""
        started = time.monotonic_ns()
        model = self._admitted_model(body)
        if model is None:
            return
        text, drop = self._owner._next_reply(model, body)
        tokens = OllamaTestServer.split_tokens(text)
        # Like real Ollama, nothing (not even headers) is sent until the model produces its first token.
        self._pause(self._owner.first_token_delay_s)
        first_token = time.monotonic_ns()

        def final() -> dict[str, Any]:
            end = time.monotonic_ns()
            return {
                "model": model,
                "created_at": _now_iso(),
                **payload(""),
                "done": True,
                "done_reason": "stop",
                "total_duration": end - started + _LOAD_DURATION_NS,
                "load_duration": _LOAD_DURATION_NS,
                "prompt_eval_count": prompt_tokens,
                "prompt_eval_duration": first_token - started,
                "eval_count": len(tokens),
                "eval_duration": end - first_token,
            }

        if not body.get("stream", True):
            if drop:
                self._hang_up()
                return
            self._send_json(200, {**final(), **payload(text)})
            return

        self._send_head(200, "application/x-ndjson", {"Transfer-Encoding": "chunked"})
        for index, token in enumerate(tokens):
            if index:
                self._pause(self._owner.token_delay_s)
            if self._owner._stopping.is_set():
                raise _StreamAborted
            self._write_chunk(self._ndjson({"model": model, "created_at": _now_iso(), **payload(token), "done": False}))
            if drop:
                break
        if drop:
            self._hang_up()
            return
        self._write_chunk(self._ndjson(final()))
        self._write(b"0\r\n\r\n")

    # ----------------------------------------------------------------------------------------------- transport

    def _pause(self, seconds: float) -> None:
        """Sleep like a slow model, but notice at once when the client hangs up or the server stops."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], remaining)
            if readable:
                if self._peer_closed():
                    raise _StreamAborted
                self._owner._stopping.wait(max(0.0, deadline - time.monotonic()))  # pipelined bytes: just wait
                break
        if self._owner._stopping.is_set():
            raise _StreamAborted

    def _peer_closed(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _hang_up(self) -> None:
        """Simulate a crashed server process: close the socket without finishing the response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _ndjson(obj: dict[str, Any]) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except ConnectionError as exc:  # BrokenPipe / ConnectionReset / ConnectionAborted: client went away
            raise _StreamAborted from exc

    def _write_chunk(self, data: bytes) -> None:
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def _send_head(self, status: int, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        try:
            self.end_headers()
        except ConnectionError as exc:
            raise _StreamAborted from exc

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self._send_head(status, content_type, {"Content-Length": str(len(data))})
        if self.command != "HEAD":
            self._write(data)

    def _send_json(self, status: int, obj: dict[str, Any]) -> None:
        self._send(status, "application/json; charset=utf-8", json.dumps(obj, separators=(",", ":")).encode())
