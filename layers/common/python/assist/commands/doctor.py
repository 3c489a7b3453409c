"""`assist doctor`: the model hosts, models, embedder and index as the engine will use them (ADR 0080)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.doctor import Report, doctor

COLUMNS = ("use", "host", "model", "present", "capabilities", "trained", "num_ctx", "num_predict", "think", "ok")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help=HELP["doctor"])
    p.add_argument("--json", action="store_true", help="one JSON object: ok, models, embedder, index")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = doctor(settings())
    if args.json:
        emit(msgspec.to_builtins(result))
    else:
        sys.stdout.write(text(result))
    return 0 if result.ok else 1


def text(result: Report) -> str:
    rows = [
        [
            r.use + ("" if r.active else " (off)"),
            r.host,
            r.model,
            "unreachable" if not r.reachable else r.present,
            ",".join(r.capabilities) or None,
            r.context_length,
            r.num_ctx,
            r.num_predict,
            r.think,
            r.ok,
        ]
        for r in result.models
    ]
    versions = {r.host: r.version for r in result.models}
    notes = [f"host {h}: Ollama {v or 'unreachable'}" for h, v in versions.items()]
    notes += [f"{r.use}: {r.problem}" for r in result.models if r.problem]
    for part, state in (("embedder", result.embedder), ("index", result.index)):
        shown = msgspec.to_builtins(state)  # the fields it has (unset ones are not written)
        facts = ", ".join(f"{k}={v}" for k, v in shown.items() if k not in ("ok", "problem", "calibration"))
        notes.append(
            f"{part}: {'ok' if state.ok else 'PROBLEM'} ({facts})" + (f": {state.problem}" if state.problem else "")
        )
    if result.index.state == "ready":
        calibration = result.index.calibration
        notes.append(f"verdict: {verdict_line(calibration if isinstance(calibration, dict) else None)}")
    notes.append("all good" if result.ok else "something a question needs is missing (above)")
    return "\n".join([*table([COLUMNS, *rows]), *notes]) + "\n"


def verdict_line(c: dict[str, Any] | None) -> str:
    """The index's calibration of the "not in the docs" verdict (ADR 0096), as a person reads it."""
    if c is None:
        return "not calibrated: the configured threshold (run `assist index` again to calibrate this index)"
    how = f"from {c['probes']} probes over {c['sections']} sections, false flags ≤ {c['bound']}"
    how = how if c["calibrated"] else f"not calibrated: {c['why']}"
    how = f"{c['why']}; {c['probes_flagged']} of {c['probes']} probes flagged" if c.get("conflict") else how
    apart = "".join(f"; {k}: {v['threshold']} ({v['sections']} sections)" for k, v in c.get("scopes", {}).items())
    return f"threshold {c['threshold']} ({how}); catches {c['offtopic_caught']:.0%} of the off-topic bank{apart}"


def table(rows: list[Any]) -> list[str]:
    """Aligned columns; a row's cells as a person reads them (yes/no, - for nothing)."""
    cells = [["-" if v is None else ("yes" if v is True else "no" if v is False else str(v)) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
