"""`assist bench classify`: warm latency per layer, and the classify path's cold start in a fresh process.

Every figure is printed beside its budget as a ratio (< 1 is within budget): the seeds' 5 ms
regex classification budget and the routing layers' budgets (docs/routing.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from assist.classify.build import embedding_layer, llm_layer
from assist.classify.cascade import Cascade
from assist.classify.rules import platform_prefix
from assist.embed.build import lazy_embedder
from assist.offline.classify.evaluate import history_of
from assist.stats import percentile

if TYPE_CHECKING:
    from assist.offline.classify.data import Example
    from assist.settings import Settings

BUDGETS = {"seed_regex_ms": 5.0, "rules_p50_ms": 0.1, "embedding_p50_ms": 15.0, "cold_start_s": 1.5}
PREFIXED = [
    "You are a direct and concise assistant. You have a project usage percentage of 20%. Provide an insight.",
    "you are a direct and concise assistant. Invoices: jan 40$, feb 40$, mar 95$. Explain the change.",
    "You are a direct and concise assistant. Rules: exactly 3 sentences. Usage is 91% of quota.",
]
# The classify path as a short-lived function runs it: imports, settings, model load, one decision.
COLD = """
import json, sys, time
t0 = time.perf_counter()
from assist.classify.build import build_cascade
from assist.logs import configure
from assist.settings import Settings
t1 = time.perf_counter()
settings = Settings.from_env()
configure(settings)
cascade = build_cascade(settings)
cascade.warm()
t2 = time.perf_counter()
route = cascade.classify(sys.argv[1], [])
t3 = time.perf_counter()
print(json.dumps({"imports_s": t1 - t0, "load_s": t2 - t1, "first_decision_s": t3 - t2, "in_process_s": t3 - t0,
                  "layer": route.layer, "modules": len(sys.modules), "sklearn_loaded": "sklearn" in sys.modules}))
"""


def _stats(times_ms: list[float]) -> dict[str, Any]:
    return {"n": len(times_ms), "p50_ms": percentile(times_ms, 50), "p95_ms": percentile(times_ms, 95)}


def _timed(fn, *args) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - start) * 1000


def warm(settings: Settings, examples: list[Example], repeats: int = 200, llm_samples: int = 20) -> dict[str, Any]:
    embedder = lazy_embedder(settings)
    emb, llm = embedding_layer(settings, embedder), llm_layer(settings)
    cascade = Cascade(settings, embedding=emb, llm=llm)
    cascade.warm()
    cascade.classify("warm-up", [])
    content = [e for e in examples if platform_prefix(e.text, settings.classifier.platform_prefixes) is None]

    rules = [_timed(cascade.classify, PREFIXED[i % len(PREFIXED)], [])[1] for i in range(repeats)]
    layers: dict[str, Any] = {"rules": _stats(rules)}
    if emb is not None:
        layer = emb()
        layers["embedding"] = _stats([_timed(layer.predict, e.text, history_of(e))[1] for e in content])
    else:
        layers["embedding"] = {"skipped": "CLASSIFIER_MODEL_PATH is off"}
    if llm is not None:
        classifier = llm()
        layers["llm"] = _stats([_timed(classifier.classify, e.text, history_of(e))[1] for e in content[:llm_samples]])
    else:
        layers["llm"] = {"skipped": "OLLAMA_HOST unset"}

    by_layer: dict[str, list[float]] = defaultdict(list)
    for e in content:
        route, ms = _timed(cascade.classify, e.text, history_of(e))
        by_layer[route.layer].append(ms)
    return {"layers": layers, "cascade_by_deciding_layer": {k: _stats(v) for k, v in sorted(by_layer.items())}}


def cold(runs: int = 3, message: str = "how do rate limits work?") -> dict[str, Any]:
    """Fresh interpreters (same executable, environment and working directory) timed from the outside too."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", COLD, message], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
        samples.append({**json.loads(out.stdout.strip().splitlines()[-1]), "wall_s": wall})
    keys = ("imports_s", "load_s", "first_decision_s", "in_process_s", "wall_s")
    median = {k: round(sorted(s[k] for s in samples)[len(samples) // 2], 3) for k in keys}
    first = samples[0]
    return {"runs": runs, "median": median, "layer": first["layer"], "sklearn_loaded": first["sklearn_loaded"]}


def ratios(result: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    rules = result["layers"]["rules"].get("p50_ms")
    emb = result["layers"]["embedding"].get("p50_ms")
    if rules is not None:
        out["rules_p50_vs_seed_regex_5ms"] = round(rules / BUDGETS["seed_regex_ms"], 4)
        out["rules_p50_vs_budget_0.1ms"] = round(rules / BUDGETS["rules_p50_ms"], 3)
    if emb is not None:
        out["embedding_p50_vs_seed_regex_5ms"] = round(emb / BUDGETS["seed_regex_ms"], 3)
        out["embedding_p50_vs_budget_15ms"] = round(emb / BUDGETS["embedding_p50_ms"], 3)
    if "cold_start" in result:
        cold_s = result["cold_start"]["median"]["in_process_s"]
        out["cold_start_vs_budget_1.5s"] = round(cold_s / BUDGETS["cold_start_s"], 3)
    return out
