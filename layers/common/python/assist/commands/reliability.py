from __future__ import annotations

import argparse

from assist.commands.common import emit, group, settings


def register(sub: argparse._SubParsersAction) -> None:
    b = group(sub, "bench")
    p = b.add_parser("load", help="concurrent sessions against the API, then a lost/duplicated audit")
    p.add_argument("--url", help="a running stack (default: start one on 127.0.0.1)")
    p.add_argument("--sessions", type=int, default=50)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--workers", type=int, default=16, help="sessions in flight at once")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assist.bench.load import run as bench

    if args.url and not args.url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        print("assist: bench load sends traffic only to loopback addresses", flush=True)
        return 2
    emit(bench(args.url, args.sessions, args.turns, settings(log_level="WARNING"), workers=args.workers))
    return 0
