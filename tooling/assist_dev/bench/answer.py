"""`assist bench answer`: our own overhead per type, time to the `route` event and to the first token.

Every request goes through the real HTTP API (/v1/ask/stream, uvicorn), the moto server,
LanceDB and the ONNX embedder; only the model is the Ollama test double with a fixed
per-token delay, so "model time" is known and subtracted: overhead = wall time to `done`
minus the time spent waiting on the model.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from assist.stats import percentile
from assist_dev.bench.harness import local_parts, ollama_double
from assist_dev.local.ports import free_port

if TYPE_CHECKING:
    from assist.ask.engine import Engine

# Messages written to be routed to each type as deployed (no declared type): the bench
# measures the cascade too, and reports which type each one actually took.
MESSAGES = {
    "RETRIEVAL": [
        "How does the engine decide that a message is about billing?",
        "Where is the index stored?",
        "What does the degraded reason embedder_timeout mean?",
        "¿Cómo se configura el modelo ligero?",
    ],
    "CODE_GENERATION": [
        "Write a Python function that calls POST /v1/ask and prints the sources",
        "Escribe un script en bash que consulte /healthz cada 5 segundos",
    ],
    "CONVERSATIONAL": ["en menos palabras", "What was my first question?", "summarise that in one sentence"],
    "PLATFORM": [
        "You are a direct and concise assistant. Usage is 80% of quota. Advise.",
        "You are a direct and concise assistant. Invoice total 120 EUR this month. Explain.",
    ],
}
BUDGETS = {"overhead_p50_ms": {"CONVERSATIONAL": 20.0, "PLATFORM": 20.0}, "route_event_p50_ms": {"RETRIEVAL": 60.0}}
REPLY = " ".join(["token"] * 20)


def run(settings: Settings, rounds: int = 10, token_delay_ms: float = 10.0) -> dict[str, Any]:
    # deferred, ADR 0071: httpx 0.11 s
    import httpx

    samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    layers: dict[str, Counter] = defaultdict(Counter)
    matched = Counter()
    with served_api(settings, token_delay_ms) as (base, _engine), httpx.Client(base_url=base, timeout=60) as http:
        for r in range(rounds + 1):  # round 0 warms every path and is not counted
            for intended, messages in MESSAGES.items():
                for i, message in enumerate(messages):
                    session = f"bench-{r}-{intended}-{i}"
                    if intended == "CONVERSATIONAL":  # something to remember first
                        _ask(http, session, "How are answers streamed?")
                    # a text new to the process each round: its embedding is computed, not remembered
                    m = _ask(http, session, f"{message} ({r})" if r else message)
                    if r == 0:
                        continue
                    t = m["type"]
                    matched[intended == t] += 1
                    layers[t][m["layer"]] += 1
                    for k in ("overhead_ms", "route_event_ms", "first_token_ms"):
                        samples[t][k].append(m[k])
    by_type = {
        t: {
            "n": len(v["overhead_ms"]),
            **{f"{k[:-3]}_p50_ms": percentile(v[k], 50) for k in v},
            **{f"{k[:-3]}_p95_ms": percentile(v[k], 95) for k in v},
            "layers": dict(layers[t]),
        }
        for t, v in samples.items()
    }
    ratios = {
        f"{metric}/{t}": round(by_type[t][metric] / budget, 3)
        for metric, per in BUDGETS.items()
        for t, budget in per.items()
        if t in by_type
    }
    return {
        "token_delay_ms": token_delay_ms,
        "reply_tokens": len(REPLY.split()),
        "requests": sum(matched.values()),
        "routed_as_intended": round(matched[True] / max(1, sum(matched.values())), 3),
        "by_type": by_type,
        "budgets": BUDGETS,
        "ratio_to_budget": ratios,
    }


def _ask(http: Any, session: str, message: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    route_at = first_at = None
    done: dict[str, Any] = {}
    with http.stream("POST", "/v1/ask/stream", json={"session_id": session, "message": message}) as resp:
        resp.raise_for_status()
        name = None
        for line in resp.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
                now = time.perf_counter()
                if name == "route" and route_at is None:
                    route_at = now
                elif name == "token" and first_at is None:
                    first_at = now
            elif line.startswith("data:") and name == "done":
                done = json.loads(line[5:])
    end = time.perf_counter()
    gen = next(st for st in done["trace"]["stages"] if st["name"] == "generate")
    return {
        "type": done["route"]["type"],
        "layer": done["route"]["layer"],
        "overhead_ms": (end - t0) * 1000 - (gen.get("model_ms") or 0.0),
        "route_event_ms": ((route_at or end) - t0) * 1000,
        "first_token_ms": ((first_at or end) - t0) * 1000,
    }


@contextmanager
def served_api(settings: Settings, token_delay_ms: float, reply: str = REPLY) -> Iterator[tuple[str, Engine]]:
    """The API (uvicorn in a thread) over the local parts, its model the Ollama double answering `reply`
    with `token_delay_ms` per token; yields its base URL and its engine (warm)."""
    # deferred, ADR 0071: anyio (not in every image), litestar 0.16 s
    from assist.api.app import create_app

    with (
        local_parts(settings, Path(".assist/bench/docs-index")) as s,
        ollama_double(models=["bench-main", "bench-light"]) as llm,
    ):
        llm.reply(reply)
        llm.token_delay_s = token_delay_ms / 1000
        s = s.with_(ollama={"host": llm.url, "model_name": "bench-main", "model_name_conversational": "bench-light"})
        engine = build_engine(s, client("dynamodb", s))
        engine.warm()
        base, stop = serve_in_thread(create_app(engine))
        try:
            yield base, engine
        finally:
            stop()


def serve_in_thread(app: Any) -> tuple[str, Any]:
    # deferred, ADR 0071: uvicorn 0.05 s
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", proxy_headers=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)

    return f"http://127.0.0.1:{port}", stop
