"""`assist bench ollama`: answers queueing on a model host that serves `--parallel` requests per model at once
(OLLAMA_NUM_PARALLEL), measured against the Ollama test double at a realistic token rate (ADR 0081).

For each concurrency level, that many answers start at the same instant, each through the engine's own model
slots (`ModelSlots.chat`: the slot's window, output limit and the request's deadline, which cuts a queued call
short) with a RETRIEVAL-sized prompt. An answer the host finishes before the deadline is "answered by the
model"; one whose turn comes too late times out and would be extractive ("fell back"). The figures beside them:
one answer's model time T (prompt evaluation + generation, measured alone) and the sizing rule's prediction,
`parallel × floor((deadline − reserve) / T)` answers in time, the rest falling back.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from typing import Any

from assist.contracts import Slot
from assist.deadline import PERSIST_RESERVE_S
from assist.settings import Settings
from assist_dev.bench.harness import REPO, ollama_double

MAIN = "qwen3:1.7b"
#: what a small team's host does with qwen3:1.7b: tokens generated and prompt tokens evaluated per second
TOKEN_RATE, PROMPT_RATE = 40.0, 800.0
REPLY_TOKENS = 250
DEADLINE_S = 16.0  # the Answer task's (ask.asl.json)
SHORT = {"token_rate": 400.0, "prompt_rate": 10_000.0, "reply_tokens": 40, "deadline_s": 2.5}


def levels(concurrency: int) -> list[int]:
    out, c = [], 1
    while c < concurrency:
        out.append(c)
        c *= 2
    return [*out, concurrency]


def prompt() -> list[dict[str, str]]:
    """A RETRIEVAL prompt of about 2,000 tokens: the system prompt and five passages of the docs."""
    from assist.answer.prompts import RETRIEVAL_PROMPT

    text = (REPO / "docs" / "answering.md").read_text()[:7500]
    sources = "\n\n".join(f"[{i}] Answering — part {i}\n{text[i * 1500 : (i + 1) * 1500]}" for i in range(5))
    return [
        {"role": "system", "content": RETRIEVAL_PROMPT},
        {"role": "user", "content": f"<sources>\n{sources}\n</sources>\n\nQuestion: How are answers streamed?"},
    ]


def _burst(settings: Settings, n: int, deadline_s: float) -> list[tuple[bool, float]]:
    """`n` answers started together; each (answered by the model, seconds)."""
    from assist.llm.slots import LLMUnavailable, ModelSlots

    slots = ModelSlots(settings)
    messages = prompt()
    slots.window(Slot.MAIN)  # the model's facts, read once before the clock starts, as a warm container has them
    start = threading.Barrier(n)
    out: list[tuple[bool, float]] = []
    lock = threading.Lock()

    def one() -> None:
        start.wait()
        t0 = time.perf_counter()
        try:
            slots.chat(Slot.MAIN, messages, deadline=time.time() + deadline_s)
            ok = True
        except LLMUnavailable:
            ok = False
        with lock:
            out.append((ok, time.perf_counter() - t0))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def run(
    settings: Settings,
    parallel: int = 1,
    concurrency: int = 8,
    token_rate: float = TOKEN_RATE,
    prompt_rate: float = PROMPT_RATE,
    reply_tokens: int = REPLY_TOKENS,
    deadline_s: float = DEADLINE_S,
) -> dict[str, Any]:
    rows = []
    answer_s = None
    for c in levels(concurrency):
        with ollama_double(models=[MAIN], num_parallel=parallel) as host:
            host.token_delay_s = 1.0 / token_rate
            host.prompt_token_s = 1.0 / prompt_rate
            host.reply(" ".join(["word"] * reply_tokens))
            s = settings.with_(ollama={"host": host.url, "model_name": MAIN, "model_name_conversational": None})
            if answer_s is None:  # one answer alone: T
                answer_s = _burst(s, 1, deadline_s + 60)[0][1]
            results = _burst(s, c, deadline_s)
            top = host.max_active(MAIN)
        answered = [sec for ok, sec in results if ok]
        took = sorted(sec for _, sec in results)
        rows.append(
            {
                "concurrency": c,
                "answered": len(answered),
                "fell_back": c - len(answered),
                "p50_s": round(statistics.median(took), 2),
                "p95_s": round(took[min(len(took) - 1, math.ceil(0.95 * len(took)) - 1)], 2),
                "max_active": top,
            }
        )
    assert answer_s is not None
    useful = parallel * math.floor((deadline_s - PERSIST_RESERVE_S) / answer_s)
    return {
        "parallel": parallel,
        "deadline_s": deadline_s,
        "token_rate": token_rate,
        "prompt_rate": prompt_rate,
        "reply_tokens": reply_tokens,
        "answer_s": round(answer_s, 2),
        "useful_concurrency": useful,
        "levels": rows,
    }
