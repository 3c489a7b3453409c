"""`assist bench cost`: what 1,000 questions of each type cost on the serverless path (ADR 0068).

Durations are measured: each state machine task (`serverless/tasks.py`: what the Classify, Retrieve and
Answer functions run) is timed in this process on the docs index, warm, per question type, without a
model (the answer is extractive). The model's generation time is a parameter (`model_s`, per slot): the
Answer function waits for it, and the Ask function waits for the whole execution. Memory sizes are read
from template.yaml (expanded), so a change there changes the figures. Prices are parameters with the
defaults below (us-east-1, on-demand, as of 2025). The model host is priced separately, by the hour, at
full use of its concurrent slots: its share is what no serverless price covers.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from assist.ask.build import build_engine
from assist.contracts import AskRequest
from assist.serverless import tasks
from assist.serverless.execution import ExecutionInput
from assist.settings import Settings
from assist_dev.rehearsal.template import Stack, expand

PRICES = {
    "lambda_gb_s_x86": 0.0000166667,  # $ per GB-second
    "lambda_gb_s_arm64": 0.0000133334,
    "lambda_request": 0.20 / 1e6,
    "sfn_express_request": 1.00 / 1e6,
    "sfn_express_gb_s": 0.00001667,  # Express duration, billed at 64 MB steps
    "api_http_request": 1.00 / 1e6,
    "ddb_write_unit": 0.625 / 1e6,  # on-demand write request unit
    "ddb_read_unit": 0.125 / 1e6,
    "s3_get": 0.0004 / 1000,
    "model_host_hour": 1.006,  # a g5.xlarge (one A10G) running Ollama
}
#: what one turn does beside the functions' time (counted from the code, ADR 0068): the session header's
#: UpdateItem (1 WRU), the turn written to both tables in one transaction (2 items × 2 WRU), the history
#: Query and header read (eventually consistent: 2 × 0.5 RRU); the index's S3 range reads per search
PER_TURN = {"ddb_write_units": 5, "ddb_read_units": 1.0, "s3_gets_retrieval": 8, "sfn_memory_mb": 64}
MODEL_S = {"main": 4.0, "light": 1.5}  # a generation's wall time on the model host, per slot
MODEL_HOST_SLOTS = 4  # generations the host serves at once (OLLAMA_NUM_PARALLEL)
QUESTIONS = {
    "RETRIEVAL": ("How is the engine configured?", None),
    "CODE_GENERATION": ("Write a Python function that posts a question to /v1/ask", None),
    "PLATFORM": ("How much of my quota is left?", "plan: team; quota used: 40%"),
    "CONVERSATIONAL": ("Summarize what you just told me in one sentence.", None),
}
SLOT = {"RETRIEVAL": "main", "CODE_GENERATION": "main", "PLATFORM": "light", "CONVERSATIONAL": "light"}
SEARCHES = {"RETRIEVAL", "CODE_GENERATION"}  # the state machine's RouteByType: only these run Retrieve


def memory_sizes() -> dict[str, int]:
    """MB per function, from template.yaml as CloudFormation will see it."""
    cfn = expand(parameters={"OllamaHost": "http://o", "JwtIssuer": "https://i", "JwtAudience": "a"})
    functions = Stack(cfn, "cost", {}, secrets=lambda ref: "").functions()
    return {logical: f.memory_mb for logical, f in functions.items()}


def measure(settings: Settings, rounds: int) -> dict[str, dict[str, float]]:
    """Median ms of each task per type: Classify, Retrieve (searching types), Answer (without the model)."""
    with tempfile.TemporaryDirectory() as tmp:
        s = settings.with_(sessions={"store": "file", "store_file": str(Path(tmp) / "s.sqlite3")})
        engine = build_engine(s)
        engine.warm()
        times: dict[str, dict[str, list[float]]] = {
            t: {"classify": [], "retrieve": [], "answer": []} for t in QUESTIONS
        }
        for i in range(rounds + 1):  # the first round warms the caches and is not counted
            for qtype, (message, extra) in QUESTIONS.items():
                req = AskRequest(session_id=f"cost-{i}", message=message, query_type=qtype, extra_context=extra)
                t0 = time.perf_counter()
                state = tasks.classify(engine, ExecutionInput(req))
                t1 = time.perf_counter()
                if qtype in SEARCHES:
                    state = tasks.retrieve(engine, state)
                t2 = time.perf_counter()
                tasks.answer(engine, msgspec.convert(msgspec.to_builtins(state), tasks.CaughtTurn))
                t3 = time.perf_counter()
                if i:
                    for name, ms in (("classify", t1 - t0), ("retrieve", t2 - t1), ("answer", t3 - t2)):
                        times[qtype][name].append(ms * 1000)
    return {t: {k: round(statistics.median(v), 2) for k, v in by.items()} for t, by in times.items()}


def cost(
    durations: dict[str, dict[str, float]],
    memory: dict[str, int],
    prices: dict[str, float] = PRICES,
    model_s: dict[str, float] = MODEL_S,
    slots: int = MODEL_HOST_SLOTS,
) -> dict[str, Any]:
    """$ per 1,000 questions per type: serverless (x86 and arm64) by part, and the model host's share."""
    out: dict[str, Any] = {}
    for qtype, ms in durations.items():
        model_ms = model_s[SLOT[qtype]] * 1000
        run = {
            "ClassifyFunction": ms["classify"],
            "RetrieveFunction": ms["retrieve"] if qtype in SEARCHES else 0.0,
            "AnswerFunction": ms["answer"] + model_ms,
        }
        run["AskFunction"] = sum(run.values())  # it waits for the whole execution (StartSyncExecution)
        gb_s = sum(memory[f] / 1024 * v / 1000 for f, v in run.items() if v)
        invokes = sum(1 for v in run.values() if v)
        execution_s = run["AskFunction"] / 1000
        fixed = (
            invokes * prices["lambda_request"]
            + prices["sfn_express_request"]
            + PER_TURN["sfn_memory_mb"] / 1024 * execution_s * prices["sfn_express_gb_s"]
            + prices["api_http_request"]
            + PER_TURN["ddb_write_units"] * prices["ddb_write_unit"]
            + PER_TURN["ddb_read_units"] * prices["ddb_read_unit"]
            + (PER_TURN["s3_gets_retrieval"] if qtype in SEARCHES else 0) * prices["s3_get"]
        )
        host = model_ms / 1000 / 3600 * prices["model_host_hour"] / slots
        x86 = 1000 * (gb_s * prices["lambda_gb_s_x86"] + fixed)
        arm = 1000 * (gb_s * prices["lambda_gb_s_arm64"] + fixed)
        out[qtype] = {
            "measured_ms": ms,
            "billed_gb_s": round(gb_s, 4),
            "lambda_x86": round(1000 * gb_s * prices["lambda_gb_s_x86"], 4),
            "lambda_arm64": round(1000 * gb_s * prices["lambda_gb_s_arm64"], 4),
            "other_services": round(1000 * fixed, 4),
            "serverless_x86": round(x86, 4),
            "serverless_arm64": round(arm, 4),
            "model_host": round(1000 * host, 4),
            "model_host_share_x86": round(host * 1000 / (x86 + host * 1000), 3),
        }
    return out


def run(settings: Settings, rounds: int, prices: dict[str, float], model_s: dict[str, float], slots: int) -> dict:
    memory = memory_sizes()
    durations = measure(settings, rounds)
    return {
        "per_1000_questions_usd": cost(durations, memory, prices, model_s, slots),
        "memory_mb": memory,
        "prices": prices,
        "model_s": model_s,
        "model_host_slots": slots,
        "per_turn": PER_TURN,
        "rounds": rounds,
    }
