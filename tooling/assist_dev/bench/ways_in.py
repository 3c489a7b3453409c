"""`assist bench mcp`: p50/p95 of the MCP tools `search_docs` and `ask`, called with the `mcp` SDK's
client over streamable HTTP (/mcp), beside `POST /v1/ask` and an in-process search on the same
app, in one run.

The model is the Ollama test double (no delay per token by default), so every figure is our own
cost: the wire, the engine, the index, the sessions on the moto server. Each round asks a text new
to the process, so the message's embedding is computed, never remembered.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from assist.settings import Settings
from assist.stats import percentile
from assist_dev.bench.answer import served_api

QUESTIONS = [
    "How does the engine decide that a message is about billing?",
    "Where is the index stored?",
    "What does the degraded reason embedder_timeout mean?",
    "How are answers streamed?",
]
BUDGET_MS = 10_000.0  # an MCP tool call's whole budget (docs/ways-in.md)


def run(settings: Settings, rounds: int = 20, token_delay_ms: float = 0.0) -> dict[str, Any]:
    with served_api(settings, token_delay_ms) as (base, engine):
        samples = anyio.run(_measure, base, engine, rounds)
    figures = {
        name: {"n": len(v), "p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)} for name, v in samples.items()
    }
    return {
        "rounds": rounds,
        "token_delay_ms": token_delay_ms,
        "transport": "streamable HTTP (stateless, JSON), mcp SDK client; /v1/ask over HTTP; same app",
        **figures,
        "ratios": {
            "mcp_ask/http_ask_p50": _ratio(figures["mcp_ask"]["p50_ms"], figures["http_ask"]["p50_ms"]),
            "mcp_search_docs/search_in_process_p50": _ratio(
                figures["mcp_search_docs"]["p50_ms"], figures["search_in_process"]["p50_ms"]
            ),
            "mcp_ask_p95/budget": _ratio(figures["mcp_ask"]["p95_ms"], BUDGET_MS),
        },
    }


async def _measure(base: str, engine: Any, rounds: int) -> dict[str, list[float]]:
    # deferred, ADR 0071: httpx 0.11 s, mcp 1.1 s
    import httpx
    from mcp import Client

    samples: dict[str, list[float]] = {k: [] for k in ("http_ask", "mcp_ask", "mcp_search_docs", "search_in_process")}
    async with Client(base + "/mcp") as mcp, httpx.AsyncClient(base_url=base, timeout=60) as http:
        for r in range(rounds + 1):  # round 0 warms every path and is not counted
            for i, question in enumerate(QUESTIONS):
                text, session = f"{question} ({r})", f"bench-{r}-{i}"
                timed = {
                    "http_ask": lambda t=text, sid=session: _http_ask(http, "http-" + sid, t),
                    "mcp_ask": lambda t=text, sid=session: mcp.call_tool(
                        "ask", {"message": t, "session_id": "mcp-" + sid}
                    ),
                    "mcp_search_docs": lambda t=text: mcp.call_tool("search_docs", {"query": t + " search"}),
                    "search_in_process": lambda t=text: anyio.to_thread.run_sync(
                        lambda: engine.retriever().search(t + " local", k=5)
                    ),
                }
                for name, call in timed.items():
                    t0 = time.perf_counter()
                    result = await call()
                    ms = (time.perf_counter() - t0) * 1000
                    if getattr(result, "is_error", False):
                        raise RuntimeError(f"{name} failed: {result.content}")
                    if r:
                        samples[name].append(ms)
    return samples


async def _http_ask(http: Any, session: str, message: str) -> Any:
    resp = await http.post("/v1/ask", json={"session_id": session, "message": message})
    resp.raise_for_status()
    return resp


def _ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b else 0.0
