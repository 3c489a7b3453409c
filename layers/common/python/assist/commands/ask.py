from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path

import msgspec

from assist.ask.build import build_engine
from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.contracts import AskRequest
from assist.embed import build_embedder
from assist.sources.sync import ensure_index

#: the checkout's docs, indexed on first use (what template.yaml's directory holds)
CHECKOUT_DOCS = Path(__file__).resolve().parents[5] / "docs"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ask",
        help=HELP["ask"],
    )
    p.add_argument("message")
    p.add_argument("--session", help="session id (default: a new one, printed)")
    p.add_argument(
        "--type",
        dest="query_type",
        choices=["RETRIEVAL", "CODE_GENERATION", "CONVERSATIONAL", "PLATFORM"],
        help="caller-declared type: bypasses classification",
    )
    p.add_argument("--extra-context", help="account data for PLATFORM questions (never stored)")
    p.add_argument("--stream", action="store_true", help="print tokens as the model produces them")
    p.add_argument("--json", action="store_true", help="print the whole answer as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    s = settings()
    engine = build_engine(s)  # the store SESSION_STORE names: DynamoDB, or the embedded file
    try:
        return _ask(args, s, engine)
    finally:
        engine.close()  # work still in flight (an index being copied) ends before the interpreter does


def _ask(args: argparse.Namespace, s, engine) -> int:
    ensure_index(s, lambda: build_embedder(s), CHECKOUT_DOCS)  # the checkout's docs, on first use
    body = {"session_id": args.session or f"cli-{uuid.uuid4().hex[:12]}", "message": args.message}
    body.update({k: v for k, v in (("query_type", args.query_type), ("extra_context", args.extra_context)) if v})
    try:
        req = msgspec.convert(body, AskRequest)
    except msgspec.ValidationError as exc:
        print(f"assist: {exc}", file=sys.stderr)
        return 2
    if args.stream and not args.json:
        return asyncio.run(_stream(engine, req))
    answer = msgspec.to_builtins(engine.ask(req))
    if args.json:
        emit(answer)
        return 0
    _print_route(answer["route"], req.session_id, answer["degraded"])
    print(answer["answer"])
    _print_sources(answer["sources"])
    return 0


async def _stream(engine, req) -> int:
    async for name, data in engine.stream(engine.prepare(req)):
        if name == "route":
            _print_route(data, req.session_id, data["degraded"])
        elif name == "token":
            print(data["text"], end="", flush=True)
        elif name == "done":
            print()
            _print_sources(data["sources"])
            if data["degraded"]:
                print(f"degraded: {', '.join(data['degraded'])}", file=sys.stderr)
    return 0


def _print_route(route: dict, session: str, degraded: list[str]) -> None:
    query = f" · query: {route['retrieval_query']}" if route.get("retrieval_query") else ""
    print(
        f"[{route['type']} via {route['layer']} ({route['confidence']:.2f}) · {route['model_slot']} "
        f"{route.get('model', '')} · session {session}{query}]",
        file=sys.stderr,
    )
    if degraded:
        print(f"degraded: {', '.join(degraded)}", file=sys.stderr)


def _print_sources(sources: list[dict]) -> None:
    for i, src in enumerate(sources, 1):
        label = "near miss" if src.get("near_miss") else f"[{i}]"  # found, not cited (ADR 0102)
        print(f"  {label} {src['title']} — {src['heading'] or src['title']} ({src['id']})")
