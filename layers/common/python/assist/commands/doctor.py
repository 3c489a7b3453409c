"""`assist doctor`: the model hosts, models, embedder and index as the engine will use them (ADR 0080)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from assist.commands.common import emit, settings

COLUMNS = ("use", "host", "model", "present", "capabilities", "trained", "num_ctx", "num_predict", "think", "ok")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="check every model use (host reachable, model present, capabilities, window, think), the embedder and "
        "the index; exit 1 when something is missing",
    )
    p.add_argument("--json", action="store_true", help="one JSON object: ok, models, embedder, index")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assist.doctor import doctor

    result = doctor(settings())
    if args.json:
        emit(result)
    else:
        sys.stdout.write(text(result))
    return 0 if result["ok"] else 1


def text(result: dict[str, Any]) -> str:
    from assist.bench.figures import Table, render

    rows = [
        [
            r["use"] + ("" if r["active"] else " (off)"),
            r["host"],
            r["model"],
            "unreachable" if not r["reachable"] else r["present"],
            ",".join(r["capabilities"]) or None,
            r["context_length"],
            r["num_ctx"],
            r["num_predict"],
            r["think"],
            r["ok"],
        ]
        for r in result["models"]
    ]
    versions = {r["host"]: r["version"] for r in result["models"]}
    notes = [f"host {h}: Ollama {v or 'unreachable'}" for h, v in versions.items()]
    notes += [f"{r['use']}: {r['problem']}" for r in result["models"] if r["problem"]]
    for part in ("embedder", "index"):
        state = result[part]
        facts = ", ".join(f"{k}={v}" for k, v in state.items() if k not in ("ok", "problem"))
        notes.append(
            f"{part}: {'ok' if state['ok'] else 'PROBLEM'} ({facts})"
            + (f": {state['problem']}" if state.get("problem") else "")
        )
    notes.append("all good" if result["ok"] else "something a question needs is missing (above)")
    return render(Table(COLUMNS, rows, notes))
