"""`assist bench widget`: many widget visitors asking at once through several app processes that share one store,
then an audit (docs/widget.md, ADR 0089).

Each process is the answer container as deployed (`uvicorn functions.answer.app:app`), on its own port, all on
one store: the moto server's DynamoDB tables or one embedded SQLite file. One site key allows `limit`
questions per visitor; every visitor gets a token and asks `questions` questions, all visitors at once, the
requests spread over the processes in turn. Then:
- every visitor got exactly `min(limit, questions)` answers, every other request a 429 `visitor_limit` with a
  Retry-After;
- every answered question is stored once in its visitor's sessions (read back as that visitor), no refused
  one at all, turn numbers 1..n in each session: `lost`, `duplicated`;
- the store's counters hold exactly what passed: each visitor's, the address's; the key's daily budget 1 or 2
  model calls per answered question (the answer, a rewrite).
No model is configured: answers are extractive, so the figures are the engine's and the store's, not a model's.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assist.stats import percentile
from assist_dev.bench.containers import answer_containers, container_env
from assist_dev.bench.figures import Table
from assist_dev.local.definition import ROOT

ORIGIN = "https://docs.example.com"
SESSIONS_PER_VISITOR = 4  # several turns of one session at once: the turn counter is part of what is audited
DOCS = {
    "storage.md": "# Storage\n\nThe index is stored in LanceDB, in a folder or on S3. Sessions live in DynamoDB.\n",
    "routing.md": "# Routing\n\nEach message is routed by rules, then the embedding classifier, then a model.\n",
    "widget.md": "# Widget\n\nThe widget puts the assistant on a docs site with one script tag and a site key.\n",
}


@dataclass
class Run:
    base_urls: list[str]
    key: str
    store: Any  # WidgetStore of the same backend, read for the audit
    results: list[tuple[int, int, str, int | None, float]] = field(default_factory=list)  # visitor, q, status, …
    # answered questions the verdict found not covered: their answer asked no model, so it charged no budget
    uncertain: set[tuple[int, int]] = field(default_factory=set)


def run(
    visitors: int = 20,
    questions: int = 50,
    limit: int = 20,
    processes: int = 4,
    stores: tuple[str, ...] = ("dynamodb", "file"),
    endpoint: str | None = None,
    index: str | None = None,
    workers: int = 48,
) -> dict[str, Any]:
    """The figures per store (`dynamodb`: the moto server at `endpoint`, or one started here; `file`: a new
    embedded file). `index`: a LanceDB index to answer from (default: three small documents, indexed here)."""
    out: dict[str, Any] = {"visitors": visitors, "questions": questions, "limit": limit, "processes": processes}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="assist-bench-widget-")))
        index = index or _small_index(tmp)
        for name in stores:
            if name == "dynamodb" and endpoint is None:
                from assist_dev.local.stack import MotoServer

                moto = MotoServer().start()
                stack.callback(moto.stop)
                endpoint = moto.url
            env = _environment(name, tmp, endpoint, index)
            out[name] = _one_store(env, visitors, questions, limit, processes, workers)
    return out


def _one_store(env: dict[str, str], visitors: int, questions: int, limit: int, processes: int, workers: int) -> Any:
    import httpx

    from assist.settings import Settings
    from assist.widget import keys
    from assist.widget.store.backends import open_widget_store

    settings = Settings.from_env(env).with_(**_emulator(env))
    _tables(settings)
    store = open_widget_store(settings)
    key = keys.create(
        store,
        keys.NewKey(
            origins=[ORIGIN],
            name="bench",
            limits=keys.Limits(
                visitor_questions=limit,
                visitor_window_s=600,
                key_rate_per_s=10_000.0,
                key_burst=10_000,
                ip_requests=10 * visitors * (questions + 1),
                ip_window_s=600,
                new_visitors=10 * visitors,  # every visitor comes from 127.0.0.1
                daily_model_calls=10 * visitors * questions,
            ),
        ),
    ).key
    t0 = time.perf_counter()
    with answer_containers(env, processes) as containers:
        bases = [c.base for c in containers]
        started_s = round(time.perf_counter() - t0, 1)
        _warm(bases, store)
        run = Run(bases, key, store)
        tokens = [_token(bases[v % len(bases)], key) for v in range(visitors)]
        lock = threading.Lock()

        def ask(job: tuple[int, int]) -> None:
            v, q = job
            base = bases[(v * questions + q) % len(bases)]
            session = f"{tokens[v]['visitor']}.s{q % SESSIONS_PER_VISITOR}"
            body = {"session_id": session, "message": f"Where is the index stored? (visitor {v}, question {q})"}
            headers = {"authorization": f"Bearer {tokens[v]['token']}", "origin": ORIGIN}
            t = time.perf_counter()
            try:
                r = httpx.post(f"{base}/v1/ask/stream?key={key}", json=body, headers=headers, timeout=120)
                code = str(r.status_code)
                if r.status_code == 200 and "event: done" not in r.text:
                    code = "200 without done"
                elif r.status_code == 200 and _done(r.text).get("uncertain"):
                    run.uncertain.add((v, q))
                retry = int(r.headers["retry-after"]) if "retry-after" in r.headers else None
                reason = r.json().get("reason", "") if r.status_code == 429 else ""
            except httpx.HTTPError as exc:
                code, retry, reason = type(exc).__name__, None, ""
            with lock:
                run.results.append((v, q, code + (f" {reason}" if reason else ""), retry, time.perf_counter() - t))

        jobs = [(v, q) for q in range(questions) for v in range(visitors)]  # every visitor at once
        t1 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(ask, jobs))
        wall = time.perf_counter() - t1
        audit = _audit(run, tokens, visitors, questions, limit)
    statuses = Counter(r[2] for r in run.results)
    answered = [r[4] * 1000 for r in run.results if r[2] == "200"]
    refused = [r[4] * 1000 for r in run.results if r[2].startswith("429")]
    return {
        "requests": len(run.results),
        "statuses": dict(statuses),
        "refused_without_retry_after": sum(1 for r in run.results if r[2].startswith("429") and not r[3]),
        "uncertain_answered": len(run.uncertain),
        **audit,
        "rps": round(len(run.results) / wall, 1),
        "answered_p50_ms": percentile(answered, 50),
        "answered_p95_ms": percentile(answered, 95),
        "refused_p50_ms": percentile(refused, 50),
        "refused_p95_ms": percentile(refused, 95),
        "wall_s": round(wall, 1),
        "processes_start_s": started_s,
    }


def _audit(run: Run, tokens: list[dict[str, Any]], visitors: int, questions: int, limit: int) -> dict[str, Any]:
    """Per visitor: the answers it got, its stored turns (read back as that visitor), its counter."""
    import httpx

    per_visitor = Counter(r[0] for r in run.results if r[2] == "200")
    expected = min(limit, questions)
    lost = duplicated = gaps = 0
    counters_wrong: list[str] = []
    now = int(time.time() * 1000)
    for v in range(visitors):
        asked = {
            f"Where is the index stored? (visitor {v}, question {r[1]})"
            for r in run.results
            if r[0] == v and r[2] == "200"
        }
        stored: list[str] = []
        for s in range(SESSIONS_PER_VISITOR):
            session = f"{tokens[v]['visitor']}.s{s}"
            headers = {"authorization": f"Bearer {tokens[v]['token']}", "origin": ORIGIN}
            r = httpx.get(
                f"{run.base_urls[s % len(run.base_urls)]}/v1/sessions/{session}?key={run.key}", headers=headers
            )
            if r.status_code == 404:
                continue
            turns = r.json()["turns"]
            stored += [t["message"] for t in turns]
            gaps += [t["turn"] for t in turns] != list(range(1, len(turns) + 1))
        lost += len(asked - set(stored))
        duplicated += len(stored) - len(set(stored)) + len(set(stored) - asked)
        if (n := run.store.count(f"visitor#{run.key}#{tokens[v]['visitor']}", now)) != per_visitor[v]:
            counters_wrong.append(f"visitor {v}: counter {n}, answered {per_visitor[v]}")
    day = datetime.now(UTC).date().isoformat()
    total = sum(per_visitor.values())
    # the budget counts model calls (ADR 0092): each answered question's answer, and a rewrite when it leans on
    # the history (no classifier or translation calls here: no model host named); an answer the verdict judged
    # not covered asks no model (ADR 0055) and charges nothing
    asked = total - len(run.uncertain)
    if not asked <= (n := run.store.count(f"budget#{run.key}#{day}", now)) <= 2 * asked:
        counters_wrong.append(
            f"budget: counter {n}, answered {total} of which {len(run.uncertain)} not covered "
            f"(1 or 2 model calls each of the others)"
        )
    # the address counts every request: the tokens, the questions, and this audit's history reads (ADR 0092)
    requests = visitors + len(run.results) + visitors * SESSIONS_PER_VISITOR
    if (n := run.store.count(f"ip#{run.key}#127.0.0.1", now)) != requests:
        counters_wrong.append(f"address: counter {n}, requests {requests}")
    return {
        "answered_per_visitor": sorted(set(per_visitor[v] for v in range(visitors))),
        "expected_per_visitor": expected,
        "exact": all(per_visitor[v] == expected for v in range(visitors)),
        "lost": lost,
        "duplicated": duplicated,
        "turn_gaps": gaps,
        "counters_exact": not counters_wrong,
        "counters_wrong": counters_wrong[:5],
    }


def _warm(bases: list[str], store: Any) -> None:
    """One question per process under a key of its own (the audited key's counters untouched): the engine of
    each is built by its first question (embedder, classifier, index), which is not what is measured."""
    import httpx

    from assist.widget import keys

    key = keys.create(store, keys.NewKey(origins=[ORIGIN], name="bench warm-up")).key

    def warm(base: str) -> None:
        visitor = _token(base, key)
        body = {"session_id": f"{visitor['visitor']}.warm", "message": "Where is the index stored? (warm-up)"}
        headers = {"authorization": f"Bearer {visitor['token']}", "origin": ORIGIN}
        httpx.post(f"{base}/v1/ask/stream?key={key}", json=body, headers=headers, timeout=120).raise_for_status()

    with ThreadPoolExecutor(len(bases)) as pool:
        list(pool.map(warm, bases))


def _token(base: str, key: str) -> dict[str, Any]:
    import httpx

    r = httpx.post(f"{base}/v1/widget/session", json={"key": key}, headers={"origin": ORIGIN}, timeout=30)
    r.raise_for_status()
    return dict(r.json())


def _environment(store: str, tmp: Path, endpoint: str | None, index: str) -> dict[str, str]:
    env = container_env(INDEX_URI=index, OLLAMA_HOST="http://127.0.0.1:9")  # the discard port: answers are extractive
    if store == "file":
        env.update(SESSION_STORE="file", SESSION_STORE_FILE=str(tmp / f"sessions-{time.time_ns()}.sqlite3"))
    else:
        assert endpoint is not None
        suffix = f"-bench-{time.time_ns()}"
        env.update(
            SESSION_STORE="dynamodb",
            AWS_ENDPOINT_URL=endpoint,
            AWS_REGION="us-east-1",
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",  # noqa: S106 - the emulator's
            SESSIONS_TABLE="assist-sessions" + suffix,
            INTENT_HISTORY_TABLE="assist-intent-history" + suffix,
            IDEMPOTENCY_TABLE="assist-idempotency" + suffix,
            WIDGET_TABLE="assist-widget" + suffix,
        )
    return env


def _emulator(env: dict[str, str]) -> dict[str, Any]:
    if "AWS_ACCESS_KEY_ID" not in env:
        return {}
    keys = {
        "emulator_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "emulator_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
    }
    return {"aws": keys}


def _tables(settings: Any) -> None:
    """The run's own tables (from template.yaml) on the emulator; nothing for the file."""
    if settings.session_backend != "dynamodb":
        return
    from assist.aws.clients import client
    from assist_dev.local.resources import ensure_resources

    ensure_resources(settings, client("dynamodb", settings), client("s3", settings))


def _small_index(tmp: Path) -> str:
    from assist.build.run import ingest
    from assist.embed import build_embedder
    from assist.settings import Settings

    docs = tmp / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    settings = Settings().with_(
        index={"uri": str(tmp / "index")},
        embed={"model_dir": os.environ.get("EMBED_MODEL_DIR", str(ROOT / ".assist/models/all-MiniLM-L6-v2"))},
    )
    ingest(docs, settings, build_embedder(settings), progress=False)
    return settings.index.uri


def table(result: dict[str, Any]) -> Table:
    stores = [s for s in ("dynamodb", "file") if s in result]
    rows = []
    for label, k in [
        ("requests", "requests"),
        ("answered per visitor", "answered_per_visitor"),
        ("exactly the limit", "exact"),
        ("429 without Retry-After", "refused_without_retry_after"),
        ("lost turns", "lost"),
        ("duplicated turns", "duplicated"),
        ("counters exact", "counters_exact"),
        ("requests/s", "rps"),
        ("answered p50 / p95 ms", None),
        ("refused p50 / p95 ms", None),
        ("wall s", "wall_s"),
    ]:
        if k is None:
            kind = "answered" if label.startswith("answered") else "refused"
            rows.append([label, *(f"{result[s][kind + '_p50_ms']} / {result[s][kind + '_p95_ms']}" for s in stores)])
        else:
            rows.append(
                [label, *(str(result[s][k]) if isinstance(result[s][k], list) else result[s][k] for s in stores)]
            )
    notes = [
        f"{result['visitors']} visitors × {result['questions']} questions at once, limit {result['limit']} per "
        f"visitor, {result['processes']} app processes sharing one store; expected per visitor: "
        f"{min(result['limit'], result['questions'])}",
        *(f"{s}: statuses {result[s]['statuses']}" for s in stores),
    ]
    return Table(["", *stores], rows, notes)


def _done(stream: str) -> dict[str, Any]:
    """The `done` event's data of an SSE body (the answer), {} when it has none."""
    _, _, after = stream.rpartition("event: done")
    line = next((x for x in after.splitlines() if x.startswith("data:")), "")
    try:
        return json.loads(line.removeprefix("data:").strip() or "{}")
    except json.JSONDecodeError:
        return {}
