"""`assist bench cold-start` and `assist bench statemachine`: what the serverless shape costs."""

from __future__ import annotations

import argparse
from pathlib import Path

from assist.commands.common import emit, group, settings


def register(sub: argparse._SubParsersAction) -> None:
    bench = group(sub, "bench")
    cs = bench.add_parser(
        "cold-start", help="per function, in fresh processes: import and first-call time against budgets, image size"
    )
    cs.add_argument("--runs", type=int, default=5, help="fresh processes per function (median; default 5)")
    cs.add_argument("--docs", default="docs", help="folder indexed for the retrieve function (default: docs)")
    cs.add_argument("--json", action="store_true", help="one JSON object on stdout")
    cs.set_defaults(func=run_cold_start)
    sm = bench.add_parser(
        "statemachine", help="the local Lambda endpoint's per-hop cost and a state machine ask against in-process"
    )
    sm.add_argument("--runs", type=int, default=20, help="timed repetitions (median; default 20)")
    sm.add_argument("--docs", default="docs", help="folder to index (default: docs)")
    sm.add_argument("--json", action="store_true", help="one JSON object on stdout")
    sm.set_defaults(func=run_statemachine)


def run_cold_start(args: argparse.Namespace) -> int:
    from assist.serverless.coldstart import measure

    result = measure(settings(), Path(args.docs), runs=args.runs)
    if args.json:
        emit(result)
        return 0
    print(f"{'function':<10}{'import s':>10}{'first call s':>14}{'total s':>9}{'budget s':>10}{'ratio':>7}{'MB':>8}")
    for name, r in result.items():
        if isinstance(r, dict):
            mark = "" if r["within_budget"] else "  over budget"
            print(
                f"{name:<10}{r['import_s']:>10.3f}{r['first_call_s']:>14.3f}{r['total_s']:>9.3f}"
                f"{r['budget_s']:>10.1f}{r['ratio']:>7.2f}{r['installed_mb'] + r['model_mb']:>8.1f}{mark}"
            )
    print(f"(interpreter start-up, not counted: {result['interpreter_s']:.3f} s; MB = packages of the extra + model)")
    return 0


def run_statemachine(args: argparse.Namespace) -> int:
    from assist.local.overhead import measure

    result = measure(settings(), Path(args.docs), runs=args.runs)
    if args.json:
        emit(result)
        return 0
    hop = result["invoke_hop_ms"]
    print(
        f"one Lambda invoke hop: {hop['nodelay']} ms (Nagle off), {hop['nagle']} ms (Nagle on), "
        f"in-process {hop['in_process']} ms"
    )
    for qtype, r in result["ask"].items():
        print(
            f"{qtype:<10} state machine {r['state_machine_ms']} ms, in-process {r['in_process_ms']} ms "
            f"(+{r['overhead_ms']} ms, ×{r['ratio']})"
        )
    return 0
