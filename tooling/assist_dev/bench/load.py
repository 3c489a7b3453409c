"""`assist bench load`: concurrent sessions against the HTTP API, then an audit that every turn
that was answered is in the sessions and intent-history tables exactly once.

The audit reads each session back through `GET /v1/sessions/{id}` (as its owner), so it
works against any stack the bench can reach, local or deployed. Traffic goes only to the
given URL; without one, the bench starts its own stack on 127.0.0.1: the emulated store (moto)
and the clients in this process, the answer container as deployed (`uvicorn functions.answer.app:app`,
no model: answers are extractive) in a process of its own, whose CPU seconds per request are reported
beside the rate (ADR 0097).
"""

from __future__ import annotations

import resource
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assist.settings import Settings
from assist.stats import percentile
from assist_dev.bench.containers import Container, answer_containers, container_env
from assist_dev.bench.harness import local_parts

MESSAGES = [
    "How does the engine decide that a message is about billing?",
    "en menos palabras",
    "You are a direct and concise assistant. Usage is 64% of quota. Advise.",
    "Where is the index stored and how do I rebuild it?",
    "Write a curl command that streams an answer from /v1/ask/stream",
    "What was my first question?",
    "¿Qué significa degraded: llm_unavailable?",
    "and how do I change that for the light slot?",
]


def run(url: str | None, sessions: int, turns: int, settings: Settings, workers: int = 16) -> dict[str, Any]:
    # deferred, ADR 0071: httpx 0.11 s
    import httpx

    with _target(url, settings) as (base, container):
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        answered: dict[str, list[str]] = {}
        lock = threading.Lock()
        run_id = f"load{int(time.time())}"

        def one_session(i: int) -> None:
            sid, user = f"{run_id}-{i}", f"load-user-{i}"
            ok: list[str] = []
            with httpx.Client(base_url=base, timeout=120, headers={"X-Assist-User": user}) as http:
                for t in range(turns):
                    message = f"{MESSAGES[(i + t) % len(MESSAGES)]} [{sid}#{t}]"
                    t0 = time.perf_counter()
                    try:
                        r = http.post("/v1/ask", json={"session_id": sid, "message": message})
                        code = str(r.status_code)
                    except httpx.HTTPError as exc:
                        code = type(exc).__name__
                    with lock:
                        latencies.append((time.perf_counter() - t0) * 1000)
                        if code == "200":
                            ok.append(message)
                        else:
                            errors[code] += 1
            with lock:
                answered[sid] = ok

        started, cpu_before, own_before = time.perf_counter(), container.cpu_s() if container else None, _own_cpu_s()
        with ThreadPoolExecutor(max_workers=min(workers, sessions)) as pool:
            list(pool.map(one_session, range(sessions)))
        elapsed = time.perf_counter() - started
        cpu = container.cpu_s() - cpu_before if container and cpu_before is not None else None
        own = _own_cpu_s() - own_before
        lost, duplicated = _audit(base, answered)
    requests = sessions * turns
    return {
        "requests": requests,
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "lost": lost,
        "duplicated": duplicated,
        "rps": round(requests / elapsed, 2),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "seconds": round(elapsed, 2),
        # the answer container's own CPU (user + system) per request: steadier than the rate on a shared machine
        "container_cpu_ms_per_request": round(cpu * 1000 / requests, 2) if cpu is not None else None,
        # this process's: the clients, and the emulated store when the bench started it
        "bench_cpu_ms_per_request": round(own * 1000 / requests, 2),
        "sessions": sessions,
        "turns": turns,
    }


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _audit(base: str, answered: dict[str, list[str]]) -> tuple[int, int]:
    """lost: answered turns missing from a table; duplicated: extra copies of a turn in either table."""
    # deferred, ADR 0071: httpx 0.11 s
    import httpx

    lost = duplicated = 0
    for sid, messages in answered.items():
        user = f"load-user-{sid.rsplit('-', 1)[1]}"
        r = httpx.get(f"{base}/v1/sessions/{sid}", headers={"X-Assist-User": user}, timeout=60)
        if r.status_code == 404 and not messages:
            continue
        r.raise_for_status()
        body = r.json()
        stored = Counter(t["message"] for t in body["turns"])
        turns_in_history = Counter(i["turn"] for i in body["intents"])
        turn_numbers = {t["turn"] for t in body["turns"]}
        lost += sum(1 for m in messages if stored[m] == 0)
        lost += len(turn_numbers - set(turns_in_history))
        duplicated += sum(n - 1 for n in stored.values() if n > 1)
        duplicated += sum(n - 1 for n in turns_in_history.values() if n > 1)
    return lost, duplicated


@contextmanager
def _target(url: str | None, settings: Settings) -> Iterator[tuple[str, Container | None]]:
    """The stack's base URL, and the answer container's process when the bench started it."""
    if url:
        yield url.rstrip("/"), None
        return
    with (
        local_parts(settings, Path(".assist/bench/docs-index")) as s,
        answer_containers(container_env(**s.env_lines()), 1) as [container],
    ):
        _warm(container.base)
        yield container.base, container


def _warm(base: str) -> None:
    """One question first: the container builds its engine (embedder, classifier, index) on its first question,
    which is the cold start's figure, not this bench's."""
    # deferred, ADR 0071: httpx 0.11 s
    import httpx

    body = {"session_id": "load-warm-up", "message": MESSAGES[0]}
    httpx.post(f"{base}/v1/ask", json=body, headers={"X-Assist-User": "load-warm-up"}, timeout=180).raise_for_status()
