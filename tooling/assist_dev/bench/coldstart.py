"""Cold start of each function, measured in fresh processes (`assist bench cold-start`).

The child (`coldstart_child.py`, run as a script with its job on stdin) times what a Lambda
cold start pays after the interpreter is up: `import functions.<name>.app`, then the first
handler call on a representative Step Functions payload. The parent starts a moto server and
indexes the docs first, so each first call does its real work: DynamoDB calls, opening the
LanceDB index, loading the embedder, trying the (absent) Ollama host. Each child can import only what its
function's image installs (`footprint.not_in_image`): what the image lacks is refused, not loaded from this
development environment, which has every function's packages.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import assist
from assist.errors import AssistError
from assist.serverless.lambda_entry import LambdaFunction
from assist_dev.bench.footprint import dir_size_mb, extra_size_mb, not_in_image
from assist_dev.bench.harness import local_parts
from assist_dev.local.definition import ROOT

if TYPE_CHECKING:
    from assist.settings import Settings

#: the sync function's run is scheduled and nobody waits on it; its budget keeps its start-up from growing unseen
BUDGETS_S = {"classify": 1.0, "retrieve": 3.0, "answer": 1.0, "export": 2.0, "sync": 5.0}
CARRIES_MODEL = ("classify", "retrieve", "answer", "sync")  # the ONNX embedder is baked into these images
CHILD = Path(__file__).with_name("coldstart_child.py")
TOP_IMPORTS = 8
SCHEDULED_EVENT = {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def _run(job: dict[str, Any] | None, env: dict[str, str], cwd: Path, importtime: bool = False) -> dict[str, Any]:
    # -P: the child's folder stays off sys.path (its bench/ollama.py would shadow the ollama client)
    argv = [sys.executable, "-P", *(["-X", "importtime"] if importtime else []), str(CHILD)]
    argv = argv if job else [sys.executable, "-c", "pass"]
    t0 = time.perf_counter()
    proc = subprocess.run(
        argv, input=json.dumps(job or {}), capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        name = job["function"] if job else "interpreter"
        raise AssistError(f"cold-start run of {name} failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")
    if not job:
        return {"wall_s": wall}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out | ({"imports": import_shares(proc.stderr)} if importtime else {})


def import_shares(stderr: str, top: int = TOP_IMPORTS) -> dict[str, float]:
    """Seconds of `-X importtime`'s self times per top-level package (the import and the first call alike: a
    deferred import counts where it happens), the `top` largest and the rest together."""
    by: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        self_us, _, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        if self_us.isdigit():
            package = name.split(".")[0]
            by[package] = by.get(package, 0.0) + int(self_us) / 1e6
    ranked = sorted(by.items(), key=lambda kv: -kv[1])
    shares = {name: round(s, 3) for name, s in ranked[:top]}
    return shares | ({"(others)": round(sum(s for _, s in ranked[top:]), 3)} if len(ranked) > top else {})


def _events(settings: Settings, runs: int, docs: Path) -> dict[str, list[dict[str, Any]]]:
    """Per function, `runs` payloads as the state machine would pass them (fresh sessions: no shared turns); the
    sync function's a scheduled sync of the indexed docs, which finds them unchanged (a run with nothing new)."""
    classify, retrieve = LambdaFunction("classify", settings), LambdaFunction("retrieve", settings)
    question = "How does the engine decide that a message is about billing?"
    asks = [{"session_id": f"coldstart-{uuid.uuid4().hex[:12]}", "message": question} for _ in range(3 * runs)]
    retrieve_in = [classify.task(a) for a in asks[runs : 2 * runs]]
    answer_in = [retrieve.task(classify.task(a)) for a in asks[2 * runs :]]
    return {
        "classify": asks[:runs],
        "retrieve": retrieve_in,
        "answer": answer_in,
        "export": [SCHEDULED_EVENT] * runs,
        "sync": [SCHEDULED_EVENT | {"sources_file": str(_sources_file(settings, docs))}] * runs,
    }


def _sources_file(settings: Settings, docs: Path) -> Path:
    """A sources file of the docs the index was built from, in the throw-away index's folder."""
    path = Path(settings.index.uri) / "coldstart-sources.yaml"
    path.write_text(f"sources:\n  - {json.dumps(str(docs.resolve()))}\n")
    return path


def measure(settings: Settings, docs: Path, runs: int = 5) -> dict[str, Any]:
    """Median over `runs` fresh processes per function, against the budgets (import + first call)."""
    library = Path(assist.__file__).resolve().parents[1]
    # a throw-away index of `docs`, and no Ollama (a first call measures start-up, not generation)
    with local_parts(settings, docs=docs) as parts:
        s = parts.with_(ollama={"host": "http://127.0.0.1:9"})
        env = {
            **s.env_lines(),
            "OLLAMA_HOST": s.ollama.host,
            "LOG_FORMAT": "json",
            "LOG_LEVEL": s.logs.level,
            "PYTHONPATH": f"{ROOT}:{library}",
        }
        events = _events(s, runs, docs)
        interpreter = statistics.median(_run(None, env, ROOT)["wall_s"] for _ in range(runs))
        out: dict[str, Any] = {}
        for name, budget in BUDGETS_S.items():
            blocked = not_in_image([name, "lambda"])  # the image's packages only
            samples = [_run({"function": name, "event": e, "blocked": blocked}, env, ROOT) for e in events[name]]
            imports = [x["import_s"] for x in samples]
            firsts = [x["first_call_s"] for x in samples]
            total = statistics.median(i + f for i, f in zip(imports, firsts, strict=True))
            # one more run under -X importtime (its own overhead kept out of the figures above): what it loads
            job = {"function": name, "event": events[name][0], "blocked": blocked}
            profiled = _run(job, env, ROOT, importtime=True)
            size, missing = extra_size_mb([name, "lambda"])
            out[name] = {
                "import_s": round(statistics.median(imports), 3),
                "first_call_s": round(statistics.median(firsts), 3),
                "total_s": round(total, 3),
                "budget_s": budget,
                "ratio": round(total / budget, 2),
                "within_budget": total <= budget,
                "installed_mb": size,
                "model_mb": dir_size_mb(Path(s.embed.model_dir)) if name in CARRIES_MODEL else 0.0,
                "not_installed_here": missing,
                "runs": runs,
                "imports_s": profiled["imports"],
            }
        out["interpreter_s"] = round(interpreter, 3)
        out["answer_to_classify"] = round(out["answer"]["total_s"] / out["classify"]["total_s"], 2)
        return out
