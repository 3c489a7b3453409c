"""What the local state machine path costs (`assist bench statemachine`).

- One hop through the local Lambda endpoint, as moto's interpreter makes it (boto3 Lambda
  Invoke over loopback HTTP) with Nagle's algorithm off and on, against calling the same
  handler in-process.
- An ask through the state machine (start, poll, history) against the same ask run by the
  engine in-process, for a PLATFORM question (two tasks) and a RETRIEVAL one (three).
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.contracts import AskRequest
from assist_dev.bench.harness import local_parts
from assist_dev.local.lambda_endpoint import LambdaEndpoint
from assist_dev.local.stack import LOCAL_CREDENTIALS
from assist_dev.local.statemachine import ServerlessStack

if TYPE_CHECKING:
    from assist.settings import Settings

QUESTIONS = {
    "PLATFORM": "You are a direct and concise assistant. How much of my quota is left?",
    "RETRIEVAL": "How does the engine decide that a message is about billing?",
}


class _Echo:
    def handler(self, event: Any, context: Any = None) -> Any:
        return event


def _median_ms(call: Callable[[], Any], runs: int) -> float:
    call()  # warm: first connection, first client
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(samples), 2)


def invoke_hop_ms(moto_url: str, nodelay: bool, runs: int) -> float:
    # deferred, ADR 0071: boto3 0.1 s (aws extra only)
    import boto3

    endpoint = LambdaEndpoint({"echo": _Echo()}, upstream=moto_url, nodelay=nodelay).start()
    try:
        lam = boto3.client(  # as moto's interpreter builds it
            "lambda",
            endpoint_url=f"http://localhost:{endpoint.port}",
            region_name="us-east-1",
            aws_access_key_id=LOCAL_CREDENTIALS["emulator_access_key_id"],
            aws_secret_access_key=LOCAL_CREDENTIALS["emulator_secret_access_key"],
        )
        payload = b'{"request_id": "x", "route": {"type": "RETRIEVAL"}}'
        return _median_ms(lambda: lam.invoke(FunctionName="echo", Payload=payload)["Payload"].read(), runs)
    finally:
        endpoint.stop()


def measure(settings: Settings, docs: Path, runs: int = 20) -> dict[str, Any]:
    with local_parts(settings, docs=docs) as parts:
        s = parts.with_(ollama={"host": "http://127.0.0.1:9"})  # no Ollama: measure orchestration, not generation
        moto_url = s.aws.endpoint_url
        assert moto_url, "local_parts points every client at its moto server"
        hop = {
            "nodelay": invoke_hop_ms(moto_url, True, runs),
            "nagle": invoke_hop_ms(moto_url, False, runs),
            "in_process": _median_ms(lambda: _Echo().handler({"x": 1}), runs),
        }
        stack = ServerlessStack(s, moto_url).start()
        try:
            stack.warm()
            engine = build_engine(s, client("dynamodb", s))
            engine.warm()
            asks: dict[str, Any] = {}
            for qtype, message in QUESTIONS.items():

                def req(m: str = message) -> AskRequest:
                    return AskRequest(session_id=f"bench-{uuid.uuid4().hex[:12]}", message=m)

                sfn_ms = _median_ms(lambda r=req: stack.ask(r()), runs)
                local_ms = _median_ms(lambda r=req: engine.ask(r()), runs)
                asks[qtype] = {
                    "state_machine_ms": sfn_ms,
                    "in_process_ms": local_ms,
                    "overhead_ms": round(sfn_ms - local_ms, 2),
                    "ratio": round(sfn_ms / local_ms, 2),
                }
        finally:
            stack.stop()
    return {"invoke_hop_ms": hop, "ask": asks, "runs": runs}
