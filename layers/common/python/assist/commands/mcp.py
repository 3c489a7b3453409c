"""`assist mcp`: the MCP server over stdio, for an editor's agent (its bench, `assist bench mcp`, is in bench.py)."""

from __future__ import annotations

import argparse
import threading

import anyio

from assist.api.mcp_server import build_server
from assist.ask.build import build_engine
from assist.commands import HELP
from assist.commands.common import settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help=HELP["mcp"],
        description="An MCP server on stdin/stdout for an editor's agent. It reaches the tables and index the "
        'environment names (`eval "$(assist local env)"` for the local stack), else the embedded defaults.',
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    s = settings()
    engine = build_engine(s)  # DynamoDB's client (boto3) comes with the first store call
    # the embedder and the index load while the client initializes, not on its first call
    threading.Thread(target=engine.warm, name="warm", daemon=True).start()
    anyio.run(build_server(engine).run_stdio_async)
    return 0
