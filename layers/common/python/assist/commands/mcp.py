"""`assist mcp`: the MCP server over stdio, for an editor's agent; `assist bench mcp`: its tools' latency."""

from __future__ import annotations

import argparse

from assist.commands.common import group, report, settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the docs as MCP tools (search_docs, get_document, list_documents, ask) over stdio",
        description="An MCP server on stdin/stdout for an editor's agent. It reaches the tables and index the "
        'environment names (`eval "$(assist local env)"` for the local stack), else the embedded defaults.',
    )
    p.set_defaults(func=run)
    b = group(sub, "bench").add_parser(
        "mcp", help="p50/p95 of the MCP tools search_docs and ask over streamable HTTP, beside /v1/ask"
    )
    b.add_argument("--rounds", type=int, default=20, help="timed calls per measure (default 20)")
    b.add_argument("--token-delay-ms", type=float, default=0.0, help="the Ollama test double's delay per token")
    b.add_argument("--json", action="store_true", help="one JSON object on stdout")
    b.set_defaults(func=run_bench)


def run(args: argparse.Namespace) -> int:
    import threading

    import anyio

    from assist.api.mcp_server import build_server
    from assist.ask.build import Lazy, build_engine
    from assist.aws.clients import client

    s = settings()
    engine = build_engine(s, Lazy(lambda: client("dynamodb", s)))
    # the embedder and the index load while the client initializes, not on its first call
    threading.Thread(target=engine.warm, name="warm", daemon=True).start()
    anyio.run(build_server(engine).run_stdio_async)
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from assist.bench.ways_in import run as bench

    report(bench(settings(log_level="WARNING"), rounds=args.rounds, token_delay_ms=args.token_delay_ms), args.json)
    return 0
