"""What each way in writes on the wire, compared with a recording (tests/snapshots/wire_format.json): the
stream's SSE events (a model's answer, an uncertain answer, a replay under an Idempotency-Key, a widget
visitor's), /v1/ask, the OpenAI routes (plain and streamed) and the MCP `ask` tool, through the real parts
(uvicorn, LanceDB with the made-up corpus of tests/support/adr_corpus.py, which no change to docs/ moves, the ONNX
embedder, moto DynamoDB, the Ollama test server).

The recording is the wire as it was before the answer path was typed: the events in order, each JSON object's
keys, and every value but the ones that change per run or with a retrained model (ids, timings, scores,
confidences, dates, temporary paths), which are replaced by their kind. A JSON object's keys are compared as a
set (a replay's come from its record, in another order). `ASSIST_RECORD_WIRE=1` writes it anew (then review
the diff: a change to it is a change to every client).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from assist.ollama_client import forget_facts
from assist.settings import Settings
from assist_dev.doubles.ollama_server import OllamaTestServer
from tests.integration.conftest import served
from tests.integration.test_widget_api import new_key, stream, visitor

pytestmark = pytest.mark.integration
MAIN, LIGHT = "main-model:1b", "light-model:0.5b"
RECORDING = Path(__file__).parent.parent / "snapshots" / "wire_format.json"
ON_TOPIC = "Why do we use kafka for grid events?"
OFF_TOPIC = "What is a good recipe for lemon cake?"
REPLY = "Routing uses layers, cheapest first [1]."
# values that differ from run to run, by key: replaced by their kind
VOLATILE = {"request_id", "total_ms", "ms", "model_ms", "created", "score", "total_duration", "load_duration"}
VOLATILE |= {"prompt_eval_duration", "eval_duration", "created_at", "visitor", "expires_at", "token", "arn"}


@pytest.fixture(scope="module")
def llm():
    with OllamaTestServer(models=[MAIN, LIGHT]) as srv:
        yield srv


@pytest.fixture(scope="module")
def base(adr_index: Settings, llm):
    s = adr_index.with_(ollama={"host": llm.url, "model_name": MAIN, "model_name_conversational": LIGHT})
    with served(s) as url:
        yield url


def sse(text: str) -> list[list[Any]]:
    """The stream's events as [name, data] pairs, data parsed (an OpenAI stream's lines have no name)."""
    out: list[list[Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line.split(": ", 1) for line in block.splitlines() if ": " in line]
        fields = dict(lines)
        if "data" in fields:
            data = fields["data"]
            out.append([fields.get("event"), data if data == "[DONE]" else json.loads(data)])
    return out


def normalised(value: Any, session: str) -> Any:
    """Per-run values replaced by their kind; the session's name (unique per run) by `<session>`."""
    if isinstance(value, dict):
        return {k: _kind(v) if k in VOLATILE else normalised(v, session) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v, session) for v in value]
    if isinstance(value, float):
        return _kind(value)
    if isinstance(value, str):
        value = re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+/[^/]+/", "<tmp>/", value.replace(session, "<session>"))
        return re.sub(r"chatcmpl-[0-9a-f]{32}", "chatcmpl-<request>", re.sub(r"-\d{13}\b", "-<ms>", value))
    return value


def _kind(value: Any) -> str:
    return f"<{type(value).__name__}>"


def record(base: str, llm: OllamaTestServer) -> dict[str, Any]:
    """Every way in, once each, as the wire carries it."""
    run = uuid.uuid4().hex[:10]
    out: dict[str, Any] = {}

    def keep(name: str, session: str, value: Any) -> None:
        out[name] = normalised(value, session)

    def ask_stream(session: str, headers: dict[str, str] | None = None, **body: Any) -> str:
        body = {"session_id": session, "message": ON_TOPIC, "query_type": "RETRIEVAL", **body}
        r = httpx.post(base + "/v1/ask/stream", json=body, headers=headers or {}, timeout=60)
        assert r.status_code == 200, r.text
        return r.text

    llm.reply(REPLY, model=MAIN)
    keep("stream", s := f"wire-stream-{run}", sse(ask_stream(s)))
    keep("stream_uncertain", s := f"wire-uncertain-{run}", sse(ask_stream(s, message=OFF_TOPIC)))
    key = {"idempotency-key": f"wire-{run}"}
    s = f"wire-replay-{run}"
    keep("stream_keyed", s, sse(ask_stream(s, key)))
    keep("stream_replayed", s, sse(ask_stream(s, key)))

    r = httpx.post(base + "/v1/ask", json={"session_id": (s := f"wire-ask-{run}"), "message": ON_TOPIC}, timeout=60)
    keep("ask", s, r.json())

    chat = {"model": "assist", "messages": [{"role": "user", "content": ON_TOPIC}], "query_type": "RETRIEVAL"}
    chat["user"] = s = f"wire-oai-{run}"
    keep("openai", s, httpx.post(base + "/v1/chat/completions", json=chat, timeout=60).json())
    s = f"wire-oai-stream-{run}"
    chat |= {"user": s, "stream": True, "stream_options": {"include_usage": True}}
    keep("openai_stream", s, sse(httpx.post(base + "/v1/chat/completions", json=chat, timeout=60).text))

    keep("mcp_ask", s := f"wire-mcp-{run}", mcp_ask(base, s))

    forget_facts()
    v = visitor(base, new_key(base))
    seen = stream(base, v, message=ON_TOPIC)
    assert seen.status_code == 200, seen.text
    keep("stream_visitor", v["visitor"], sse(seen.text))
    return out


def mcp_ask(base: str, session: str) -> Any:
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "wire", "version": "1"}}
    httpx.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=h)
    call = {"name": "ask", "arguments": {"message": ON_TOPIC, "session_id": session}}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
    result = httpx.post(base + "/mcp", json=body, headers=h, timeout=60).json()["result"]
    return {"isError": result.get("isError"), "structured": result.get("structuredContent")}


def test_every_way_in_writes_what_the_recording_holds(base, llm):
    seen = record(base, llm)
    if os.environ.get("ASSIST_RECORD_WIRE") == "1":
        RECORDING.write_text(json.dumps(seen, indent=1, ensure_ascii=False) + "\n")
    recorded = json.loads(RECORDING.read_text())
    for name in recorded:
        assert seen[name] == recorded[name], name
    assert seen.keys() == recorded.keys()
