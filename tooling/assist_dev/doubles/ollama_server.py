"""An Ollama host as strict as Ollama itself, for tests: the moto-with-IAM of the model host.

It speaks Ollama's HTTP API on 127.0.0.1 (driven through the official ``ollama`` client and httpx, no function
patching) and, by default, holds every request to the rules a real Ollama applies. Each rule is copied from
Ollama's source (github.com/ollama/ollama; the tag or commit named) — the double's default version is 0.12.6:

- **Models and their facts.** A model not pulled answers 404 ``model 'x' not found`` (server/routes.go,
  ChatHandler/GenerateHandler/ShowHandler, v0.12.6). ``/api/show`` returns ``capabilities`` and
  ``model_info["<arch>.context_length"]`` (routes.go GetModelInfo: the GGUF key-values; server/images.go
  Model.Capabilities infers ``thinking`` from the template's thinking tags). The default models are the seed's,
  ``qwen3:1.7b`` and ``qwen3:0.6b``: ``completion`` + ``thinking``, trained context 40960.
- **Thinking is on unless the request says otherwise** (v0.12.4, commit 90d429f "turn on thinking mode for all
  reasoning models": an omitted ``think`` becomes ``true`` on a model with the capability). The thinking streams
  as ``message.thinking`` (``response``/``thinking`` on /api/generate), counts as generated tokens (``eval_count``,
  ``num_predict``) and takes time (``think_s`` and ``token_delay_s``). ``think: true`` or a level to a model
  without the capability is a 400 ``"m" does not support thinking``; ``think: false`` to it is accepted (v0.12.5,
  commit d681cd7). A ``think`` that is not a boolean or ``"high"|"medium"|"low"`` is a 400 (api/types.go
  ThinkValue.UnmarshalJSON).
- **Legacy thinking**, where it reaches ``content``: before v0.12.4 an omitted ``think`` left the model's own
  ``<think>…</think>`` in ``content`` (v0.9.0, commit 5f57b0e: thinking parsed only when asked);
  ``version="0.11.0"`` does that. A model whose template predates thinking support has no ``thinking``
  capability and thinks into ``content`` whatever is sent: ``legacy_template="tags"`` (``<think>…</think>``
  first) or ``"close"`` (a template that opens ``<think>`` in the prompt, so the reply starts inside the thinking
  and shows only ``…</think>``; routes.go primes its parser with the opening tag for the same reason). Only
  qwen3's own soft switch, ``/no_think`` ending the last user message, empties the block (the model card's
  "/think and /no_think"; Ollama's thinking-aware qwen3 template appends it itself when ``think`` is set).
- **The window.** ``options.num_ctx`` absent means 4096 tokens (envconfig ContextLength, 4096 since v0.6.7 commit
  44b466e, 2048 before; since v0.15.5, commit 0334ffa, 4096 on GPUs under 24 GiB); a larger one is cut to the
  model's trained length (llm/server.go NewLlamaServer, v0.12.6). A prompt over the window is cut silently:
  first whole messages, oldest first, keeping system messages and always the last one (server/prompt.go
  chatPrompt), then, if still too long, all but the first ``num_keep`` (4, api.DefaultOptions) tokens and the
  tail (runner/ollamarunner/runner.go NewSequence). ``prompt_eval_count`` is what was evaluated: at most the
  window. Earlier assistant turns of a qwen3 model have ``<think>…</think>`` removed first (routes.go
  filterThinkTags).
- **Output.** ``num_predict`` absent is unbounded (DefaultOptions NumPredict -1); with it, generation (thinking
  included) stops after that many tokens with ``done_reason: "length"`` (runner.go: ``numPredicted >=
  numPredict`` → DoneReasonLength), else ``"stop"``. ``messages: []`` only loads the model (``done_reason:
  "load"``).
- **One request per model at a time.** ``num_parallel`` (OLLAMA_NUM_PARALLEL, default 1 since v0.9.7, commit
  20c3266) requests run at once per model (llm/server.go: a semaphore of numParallel per runner); the rest
  queue in arrival order, and a client that hangs up leaves the queue. A request whose runner options differ from
  the loaded runner's (another ``num_ctx``) waits for the runner to be idle and reloads the model (server/
  sched.go needsReload); ``reloads`` counts them and ``load_s`` is what each costs.

**Tokens, by a documented rule** (stdlib only, no vocabulary): :func:`tokenize` pre-splits text the way Qwen's
BPE does (its pre-tokenizer regex, with letters as ``[^\\W\\d_]``) and gives each piece a cost: a digit, a
whitespace run, a short word or a punctuation character 1; a word of n ASCII letters ``round(n / 5.5)``, of
non-ASCII letters ``round(n / 2.5)``; a punctuation run of m characters ``round(m / 2.5)`` (each at least 1).
On this repository's docs, code, Spanish questions and JSON it is within ±10 % of the Qwen3 tokenizer (ADR 0079
measures it). A chat prompt is rendered as qwen3's template renders it: ``<|im_start|>{role}\\n{content}<|im_end|>\\n``
per message (special markers 1 token each), then ``<|im_start|>assistant\\n``, plus ``<think>\\n\\n</think>\\n\\n``
after it when ``think`` is false.

Replies, latency, failures and disconnects are scripted by the test; every request is recorded, and every
completion's :class:`Evaluation` says what the model was shown. Stdlib only.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

Responder = Callable[[dict[str, Any]], str]

_TOKEN_RE = re.compile(r"\S+\s*|\s+")
_LOAD_DURATION_NS = 1_000_000
_POLL_INTERVAL_S = 0.05
#: Qwen2/3's pre-tokenizer (tokenizer.json), with \p{L} as [^\W\d_] and \p{N} as \d for the stdlib `re`
_PIECES = re.compile(
    r"'(?i:s|t|re|ve|m|ll|d)|(?:[^\r\n\w]|_)?[^\W\d_]+|\d| ?(?:[^\s\w]|_)+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SPECIAL = re.compile(r"(<\|im_start\|>|<\|im_end\|>|<think>|</think>)")
_LETTERS = re.compile(r"[^\W\d_]+")
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
THINK_LEVELS = ("high", "medium", "low")
DEFAULT_NUM_KEEP = 4  # api.DefaultOptions: kept at the head when the runner cuts a prompt
DEFAULT_THINKING = (
    "Okay, the user is asking a question. Let me look at what they sent and which parts of it answer the "
    "question, then write a short reply that cites what it uses."
)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def _piece_cost(piece: str) -> int:
    if _SPECIAL.fullmatch(piece) or piece.isspace() or piece.isdigit():
        return 1
    letters = "".join(_LETTERS.findall(piece))
    if letters:
        return max(1, round(len(letters) / (5.5 if letters.isascii() else 2.5)))
    return max(1, round(len(piece.strip()) / 2.5))


def tokenize(text: str) -> list[str]:
    """The double's tokens of `text` (see the module docstring): pieces split so that their number is the cost."""
    out: list[str] = []
    for part in _SPECIAL.split(text):
        if not part:
            continue
        for piece in [part] if _SPECIAL.fullmatch(part) else _PIECES.findall(part):
            n = _piece_cost(piece)
            step = math.ceil(len(piece) / n)
            out += [piece[i * step : (i + 1) * step] for i in range(n - 1)] + [piece[(n - 1) * step :]]
    return out


def count_tokens(text: str) -> int:
    return len(tokenize(text))


@dataclass(frozen=True)
class ModelSpec:
    """A pulled model: what `/api/show` says about it."""

    name: str
    capabilities: tuple[str, ...] = ("completion", "thinking")
    context_length: int = 40960
    family: str = "qwen3"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it, so tests can assert on what the product actually sent."""

    path: str
    method: str
    body: dict[str, Any] | None
    model: str | None
    time: float  # time.monotonic() at arrival
    authorization: str | None = None  # the Authorization header as sent (a bearer token for a proxy)


@dataclass
class Evaluation:
    """What one chat/generate call made the model see and do (filled as the call runs)."""

    model: str
    think: bool | str | None  # as sent (None: omitted)
    thinking: bool  # whether the model thought
    num_ctx: int  # the window in force (after the default and the trained length)
    num_predict: int | None
    prompt: str = ""  # the rendered prompt as evaluated (after any cut)
    prompt_tokens: int = 0  # the rendered prompt before any cut
    evaluated_tokens: int = 0  # prompt_eval_count
    dropped_messages: int = 0  # whole messages dropped (server/prompt.go)
    cut_tokens: int = 0  # tokens cut from the middle (the runner's num_keep + tail)
    queued_s: float = 0.0  # waiting for a free slot of the model
    reloaded: bool = False  # the model was (re)loaded for this call's runner options
    eval_count: int = 0
    done_reason: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)  # as the template rendered them

    @property
    def system_kept(self) -> bool:
        """Every system message of the call is in what the model evaluated."""
        return all(m.get("content", "") in self.prompt for m in self.messages if m.get("role") == "system")

    @property
    def cut(self) -> bool:
        return bool(self.dropped_messages or self.cut_tokens)


class _StreamAborted(Exception):
    """The response could not be completed: the client hung up, or the server is stopping."""


def _canonical(name: str) -> str:
    """Ollama resolves an untagged name to ``name:latest``; mirror it so lookups behave like the real server."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _spec(model: str | ModelSpec) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return ModelSpec(_canonical(model.name), model.capabilities, model.context_length, model.family)
    return ModelSpec(_canonical(model))


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _think_error(think: Any) -> str | None:
    if think is None or isinstance(think, bool) or think in THINK_LEVELS:
        return None
    return 'think must be a boolean or string ("high", "medium", "low", true, or false)'


def render(messages: list[dict[str, Any]], think: Any) -> list[str]:
    """qwen3's chat template, one string per message, then the assistant's opening (see the module docstring)."""
    parts = [f"<|im_start|>{m.get('role', 'user')}\n{m.get('content') or ''}<|im_end|>\n" for m in messages]
    opening = "<|im_start|>assistant\n" + ("<think>\n\n</think>\n\n" if think is False else "")
    return [*parts, opening]


class OllamaTestServer:
    """Ollama on a free 127.0.0.1 port, in a background thread (see the module docstring for what it enforces).

    Reply precedence for /api/chat and /api/generate: the model's reply queue, the global reply queue,
    ``responder``, the model's default reply, the global default reply, ``DEFAULT_REPLY``.
    """

    DEFAULT_MODELS = ("qwen3:1.7b", "qwen3:0.6b")
    DEFAULT_REPLY = "This is a scripted answer [1]."

    def __init__(
        self,
        models: Iterable[str | ModelSpec] = DEFAULT_MODELS,
        *,
        embedding_dim: int = 384,
        version: str = "0.12.6",
        num_parallel: int = 1,
        legacy_template: str | None = None,
    ) -> None:
        if legacy_template not in (None, "tags", "close"):
            raise ValueError("legacy_template is None, 'tags' or 'close'")
        self.embedding_dim = embedding_dim
        self.version = version
        self.num_parallel = num_parallel  # OLLAMA_NUM_PARALLEL
        self.legacy_template = legacy_template
        self.default_num_ctx = 4096 if _version_tuple(version) >= (0, 6, 7) else 2048  # OLLAMA_CONTEXT_LENGTH
        self.token_delay_s = 0.0  # between generated tokens (thinking ones included)
        self.first_token_delay_s = 0.0
        self.prompt_token_s = 0.0  # prompt evaluation time per token, before the first generated token
        self.think_s = 0.0  # time spent thinking, on top of the thinking tokens' own delays
        self.load_s = 0.0  # loading a model (first use, or a reload for other runner options)
        self.thinking_text = DEFAULT_THINKING
        self.embed_delay_s = 0.0  # a cold or busy embedding model
        self.responder: Responder | None = None
        self.disconnected = threading.Event()
        self._lock = threading.Lock()
        self._slots = threading.Condition(self._lock)
        self._models = [_spec(m) for m in models]
        self._replies: dict[str | None, str] = {}
        self._queues: dict[str | None, deque[str]] = {}
        self._failures: deque[tuple[int, str]] = deque()
        self._down: set[str] = set()
        self._all_down = False
        self._drop_next = False
        self._requests: list[RecordedRequest] = []
        self._evaluations: list[Evaluation] = []
        self._active: dict[str, int] = {}
        self._loaded: dict[str, int] = {}  # model -> num_ctx of its loaded runner
        self._reloads = 0
        self._max_active: dict[str, int] = {}
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
        with self._slots:
            self._slots.notify_all()
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
            return [m.name for m in self._models]

    def spec(self, model: str) -> ModelSpec | None:
        key = _canonical(model)
        with self._lock:
            return next((m for m in self._models if m.name == key), None)

    def set_models(self, models: Iterable[str | ModelSpec]) -> None:
        """Replace the served models, e.g. to simulate a model that was never pulled."""
        with self._lock:
            self._models = [_spec(m) for m in models]

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

    @property
    def evaluations(self) -> list[Evaluation]:
        """Every chat/generate call that reached a model since start or ``clear()``, in arrival order."""
        with self._lock:
            return list(self._evaluations)

    @property
    def reloads(self) -> int:
        """Model loads for a runner option change (another ``num_ctx`` on a loaded model)."""
        with self._lock:
            return self._reloads

    def max_active(self, model: str) -> int:
        """The most requests one model ever served at once (never above ``num_parallel``)."""
        with self._lock:
            return self._max_active.get(_canonical(model), 0)

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
        """Forget recorded requests, evaluations and disconnects (scripted behaviour is kept)."""
        with self._lock:
            self._requests.clear()
            self._evaluations.clear()
            self._max_active.clear()
            self._reloads = 0
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
            if all(m.name != key for m in self._models):
                return 404, f"model '{model}' not found"
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

    def window(self, spec: ModelSpec, body: dict[str, Any]) -> int:
        """The call's num_ctx: asked for or the default, at least 4 (server/sched.go), at most the trained length."""
        options = body.get("options") if isinstance(body.get("options"), dict) else {}
        return max(4, min(int(options.get("num_ctx") or self.default_num_ctx), spec.context_length))

    def _evaluation(self, spec: ModelSpec, body: dict[str, Any]) -> Evaluation:
        options = body.get("options") if isinstance(body.get("options"), dict) else {}
        num_ctx = self.window(spec, body)
        num_predict = options.get("num_predict")
        think = body.get("think")
        thinking = self._thinks(spec, think)
        evaluation = Evaluation(spec.name, think, thinking, num_ctx, int(num_predict) if num_predict else None)
        with self._lock:
            self._evaluations.append(evaluation)
        return evaluation

    def capabilities(self, spec: ModelSpec) -> list[str]:
        """What /api/show says: a legacy template has no thinking tags, so no `thinking` capability."""
        return [c for c in spec.capabilities if not (self.legacy_template and c == "thinking")]

    def _thinks(self, spec: ModelSpec, think: Any) -> bool:
        """Whether the model thinks (parsed into `thinking`, or raw into `content` in the legacy modes)."""
        if self.legacy_template or "thinking" not in spec.capabilities:
            return self.legacy_template is not None
        if think is None:  # omitted: on since v0.12.4; before, the model thinks into content (legacy)
            return True
        return think is not False

    def _legacy(self, spec: ModelSpec, think: Any) -> str | None:
        """How thinking reaches `content` for this call, if it does: 'tags', 'close' or None (parsed apart)."""
        if self.legacy_template:
            return self.legacy_template
        if think is None and "thinking" in spec.capabilities and _version_tuple(self.version) < (0, 12, 4):
            return "tags"
        return None

    def _acquire(self, model: str, num_ctx: int, aborted: Callable[[], bool]) -> bool:
        """Wait for a free slot of `model` (and an idle runner when its options change); True when a (re)load
        is due. Raises `_StreamAborted` when the client leaves the queue or the server stops."""
        with self._slots:
            while True:
                active = self._active.get(model, 0)
                loaded = self._loaded.get(model)
                if active < max(1, self.num_parallel) and (loaded in (None, num_ctx) or active == 0):
                    self._active[model] = active + 1
                    self._max_active[model] = max(self._max_active.get(model, 0), active + 1)
                    reload = loaded != num_ctx
                    if loaded is not None and reload:
                        self._reloads += 1
                    self._loaded[model] = num_ctx
                    return reload
                self._slots.wait(_POLL_INTERVAL_S)
                if self._stopping.is_set() or aborted():  # a client that hangs up leaves the queue
                    raise _StreamAborted

    def _release(self, model: str) -> None:
        with self._slots:
            self._active[model] -= 1
            self._slots.notify_all()

    def _note_disconnect(self) -> None:
        with self._lock:
            self._disconnects += 1
        self.disconnected.set()

    def _fit(self, evaluation: Evaluation, messages: list[dict[str, Any]], think: Any, num_keep: int) -> None:
        """Cut the rendered prompt to the window as Ollama does, and note what was cut (module docstring)."""
        messages = evaluation.messages = _filter_think_tags(messages, evaluation.model, self.spec(evaluation.model))
        window = evaluation.num_ctx
        parts = render(messages, think)
        costs = [count_tokens(p) for p in parts]
        evaluation.prompt_tokens = sum(costs)
        start, last = 0, len(messages) - 1
        if sum(costs) > window:  # server/prompt.go: drop whole messages from the front, keep system ones
            for start in range(max(last, 0) + 1):
                kept = [i for i in range(start) if messages[i].get("role") == "system"] + list(range(start, last + 1))
                if sum(costs[i] for i in kept) + costs[-1] <= window or start == last:
                    break
        kept = [i for i in range(start) if messages[i].get("role") == "system"] + list(range(start, len(parts)))
        evaluation.dropped_messages = len(parts) - len(kept)
        tokens = tokenize("".join(parts[i] for i in kept))
        if len(tokens) > window:  # runner.go: keep num_keep tokens and the tail
            keep = min(num_keep, window - 1)
            evaluation.cut_tokens = len(tokens) - window
            tokens = tokens[:keep] + tokens[keep + evaluation.cut_tokens :]
        evaluation.prompt = "".join(tokens)
        evaluation.evaluated_tokens = len(tokens)


def _filter_think_tags(messages: list[dict[str, Any]], model: str, spec: ModelSpec | None) -> list[dict[str, Any]]:
    """routes.go filterThinkTags: a qwen3 model's earlier assistant turns lose their `<think>…</think>`."""
    if spec is None or spec.family != "qwen3":
        return messages
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return [
        {**m, "content": _THINK_BLOCK.sub("", m.get("content") or "")}
        if m.get("role") == "assistant" and i < last_user
        else m
        for i, m in enumerate(messages)
    ]


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
            ("POST", "/api/show"): self._show,
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

    @staticmethod
    def _details(spec: ModelSpec) -> dict[str, Any]:
        tag = spec.name.rsplit(":", 1)[1]
        return {
            "parent_model": "",
            "format": "gguf",
            "family": spec.family,
            "families": [spec.family],
            "parameter_size": tag.upper() if re.fullmatch(r"\d+(\.\d+)?[bm]", tag) else "",
            "quantization_level": "Q4_K_M",
        }

    def _tags(self, _body: dict[str, Any]) -> None:
        models = []
        for name in self._owner.models:
            spec = self._owner.spec(name)
            assert spec is not None
            digest = hashlib.sha256(name.encode()).hexdigest()
            models.append(
                {
                    "name": name,
                    "model": name,
                    "modified_at": self._owner._modified_at,
                    "size": 500_000_000 + int(digest[:8], 16) % 1_000_000_000,
                    "digest": digest,
                    "details": self._details(spec),
                }
            )
        self._send_json(200, {"models": models})

    def _show(self, body: dict[str, Any]) -> None:
        """routes.go ShowHandler/GetModelInfo: the model's capabilities and its GGUF key-values."""
        model = body.get("model") or body.get("name")
        if not isinstance(model, str) or not model:
            self._send_json(400, {"error": "model is required"})
            return
        spec = self._owner.spec(model)
        if spec is None:
            self._send_json(404, {"error": f"model '{model}' not found"})
            return
        capabilities = self._owner.capabilities(spec)
        thinks = "thinking" in capabilities
        template = "{{ .Prompt }}" if not thinks else "{{ if .Think }}<think>{{ end }}{{ .Prompt }}"
        self._send_json(
            200,
            {
                "license": "",
                "modelfile": f'# Modelfile generated by "ollama show"\nFROM {spec.name}\n',
                "parameters": "",
                "template": template,
                "details": self._details(spec),
                "model_info": {
                    "general.architecture": spec.family,
                    f"{spec.family}.context_length": spec.context_length,
                    f"{spec.family}.embedding_length": 2048,
                },
                "capabilities": capabilities,
                "modified_at": self._owner._modified_at,
            },
        )

    def _chat(self, body: dict[str, Any]) -> None:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        self._complete(body, messages, "message")

    def _generate(self, body: dict[str, Any]) -> None:
        system, prompt = body.get("system"), body.get("prompt")
        messages = [{"role": "system", "content": system}] if isinstance(system, str) and system else []
        messages += [{"role": "user", "content": prompt}] if isinstance(prompt, str) and prompt else []
        self._complete(body, messages, "response")

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
                "prompt_eval_count": sum(count_tokens(text) for text in inputs),
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

    def _complete(self, body: dict[str, Any], messages: list[dict[str, Any]], shape: str) -> None:
        """Shared chat/generate flow, in Ollama's order: model, think, queue, prompt, thinking, answer. ``shape``
        is ``message`` (chat: ``message.content``/``message.thinking``) or ``response`` (generate)."""
        owner = self._owner
        started = time.monotonic_ns()
        model = self._admitted_model(body)
        if model is None:
            return
        spec = owner.spec(model)
        assert spec is not None
        think = body.get("think")
        if error := _think_error(think):
            self._send_json(400, {"error": error})
            return
        if think not in (None, False) and "thinking" not in owner.capabilities(spec):
            self._send_json(400, {"error": f'"{model}" does not support thinking'})
            return

        def delta(content: str = "", thinking: str = "") -> dict[str, Any]:
            if shape == "response":
                return {"response": content, **({"thinking": thinking} if thinking else {})}
            return {
                "message": {"role": "assistant", "content": content, **({"thinking": thinking} if thinking else {})}
            }

        if not messages:  # routes.go: no messages only loads the model (with the runner options asked for)
            if owner._acquire(spec.name, owner.window(spec, body), self._client_gone):
                self._pause(owner.load_s)
            owner._release(spec.name)
            self._send_json(
                200, {"model": model, "created_at": _now_iso(), **delta(), "done": True, "done_reason": "load"}
            )
            return
        evaluation = owner._evaluation(spec, body)
        options = body.get("options") if isinstance(body.get("options"), dict) else {}
        owner._fit(evaluation, messages, think, int(options.get("num_keep") or DEFAULT_NUM_KEEP))
        text, drop = owner._next_reply(model, body)
        queued = time.monotonic()
        if owner._acquire(spec.name, evaluation.num_ctx, self._client_gone):
            evaluation.reloaded = True
            self._pause(owner.load_s)
        evaluation.queued_s = time.monotonic() - queued
        try:
            self._generation(body, evaluation, spec, text, drop, delta, started)
        finally:
            owner._release(spec.name)

    def _generation(
        self,
        body: dict[str, Any],
        evaluation: Evaluation,
        spec: ModelSpec,
        text: str,
        drop: bool,
        delta: Callable[..., dict[str, Any]],
        started: int,
    ) -> None:
        owner = self._owner
        model = body["model"]
        legacy = owner._legacy(spec, body.get("think"))
        thinking = OllamaTestServer.split_tokens(owner.thinking_text) if evaluation.thinking or legacy else []
        users = [m for m in evaluation.messages if m.get("role") == "user"]
        if legacy and users and str(users[-1].get("content") or "").rstrip().endswith("/no_think"):
            thinking = ["\n"]  # qwen3's soft switch: an empty thinking block, still in content
        # (kind, token): "thinking" apart, "legacy" thinking inside content with its tags, or "content"
        stream: list[tuple[str, str]] = []
        if thinking and legacy:
            opening = ["<think>", "\n"] if legacy == "tags" else []
            stream = [("legacy", t) for t in [*opening, *thinking, "\n", "</think>", "\n\n"]]
        elif thinking:
            stream = [("thinking", t) for t in thinking]
        stream += [("content", t) for t in OllamaTestServer.split_tokens(text)]
        limit = evaluation.num_predict
        evaluation.done_reason = "length" if limit and limit > 0 and len(stream) > limit else "stop"
        if evaluation.done_reason == "length":
            stream = stream[:limit]
        evaluation.eval_count = len(stream)
        # nothing (not even headers) is sent until the model produces its first token
        self._pause(owner.first_token_delay_s + owner.prompt_token_s * evaluation.evaluated_tokens)
        first_token = time.monotonic_ns()
        thought = [kind for kind, _ in stream if kind != "content"]
        think_pause = owner.think_s / len(thought) if thought else 0.0

        def final() -> dict[str, Any]:
            end = time.monotonic_ns()
            return {
                "model": model,
                "created_at": _now_iso(),
                **delta(),
                "done": True,
                "done_reason": evaluation.done_reason,
                "total_duration": end - started + _LOAD_DURATION_NS,
                "load_duration": _LOAD_DURATION_NS,
                "prompt_eval_count": evaluation.evaluated_tokens,
                "prompt_eval_duration": first_token - started,
                "eval_count": evaluation.eval_count,
                "eval_duration": end - first_token,
            }

        if not body.get("stream", True):
            self._pause(owner.think_s * bool(thought) + owner.token_delay_s * max(0, len(stream) - 1))
            if drop:
                self._hang_up()
                return
            content = "".join(tok for kind, tok in stream if kind != "thinking")
            thinking_text = "".join(tok for kind, tok in stream if kind == "thinking")
            self._send_json(200, {**final(), **delta(content, thinking_text)})
            return

        self._send_head(200, "application/x-ndjson", {"Transfer-Encoding": "chunked"})
        for index, (kind, token) in enumerate(stream):
            if index:
                self._pause(owner.token_delay_s + (think_pause if kind != "content" else 0.0))
            if owner._stopping.is_set():
                raise _StreamAborted
            chunk = delta(thinking=token) if kind == "thinking" else delta(token)
            self._write_chunk(self._ndjson({"model": model, "created_at": _now_iso(), **chunk, "done": False}))
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

    def _client_gone(self) -> bool:
        """Without waiting: has the client hung up (a queued request it no longer waits for)?"""
        readable, _, _ = select.select([self.connection], [], [], 0)
        return bool(readable) and self._peer_closed()

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
