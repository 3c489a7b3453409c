from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from assist.ask.build import build_engine
from assist.build.run import ensure_index
from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.contracts import AskRequest, DoneEvent, InvalidRequest, TokenEvent
from assist.embed import build_embedder
from assist.index.scope import parse as parse_scope

if TYPE_CHECKING:
    from assist.ask.engine import Engine

if TYPE_CHECKING:
    from assist.ask.engine import Engine
    from assist.settings import Settings

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
    p.add_argument(
        "--scope",
        metavar="product=NAME,version=V",
        help="search only this product and/or version of the docs (a session remembers it)",
    )
    p.add_argument("--stream", action="store_true", help="print tokens as the model produces them")
    p.add_argument("--json", action="store_true", help="print the whole answer as one JSON object")
    p.add_argument(
        "--docs",
        type=Path,
        metavar="PATH",
        help="ask about this folder instead: indexed on first use into .assist/docs/NAME-HASH (printed; "
        "`assist index PATH --index` that folder refreshes it)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.docs is not None and not args.docs.is_dir():
        print(f"assist: --docs {args.docs}: not a folder", file=sys.stderr)
        return 2
    s = settings(index={"uri": own_index(args.docs) if args.docs else None})
    engine = build_engine(s)  # the store SESSION_STORE names: DynamoDB, or the embedded file
    try:
        return _ask(args, s, engine)
    finally:
        engine.close()  # work still in flight (an index being copied) ends before the interpreter does


def own_index(docs: Path) -> str:
    """Where `--docs` keeps a folder's index: one per folder (its name, and a hash of where it is)."""
    where = docs.resolve()
    return str(Path(".assist/docs") / f"{where.name}-{hashlib.sha256(str(where).encode()).hexdigest()[:8]}")


def _ask(args: argparse.Namespace, s: Settings, engine: Engine) -> int:
    # the folder asked about, or the checkout's docs; each indexed on first use
    if ensure_index(s, lambda: build_embedder(s), args.docs or CHECKOUT_DOCS) is not None and args.docs:
        print(f"indexed {args.docs} into {s.index.uri}", file=sys.stderr)
    body = {"session_id": args.session or f"cli-{uuid.uuid4().hex[:12]}", "message": args.message}
    body.update({k: v for k, v in (("query_type", args.query_type), ("extra_context", args.extra_context)) if v})
    try:
        if args.scope:
            body["scope"] = msgspec.to_builtins(parse_scope(args.scope))
        req = msgspec.convert(body, AskRequest)
    except (msgspec.ValidationError, InvalidRequest) as exc:
        print(f"assist: {exc}", file=sys.stderr)
        return 2
    if args.stream and not args.json:
        return asyncio.run(_stream(engine, req))
    answer = msgspec.to_builtins(engine.ask(req))
    if args.json:
        emit(answer)
        return 0
    print(answer["answer"])
    _print_sources(answer["sources"])
    _print_status(answer["route"], req.session_id, answer["degraded"])
    return 0


async def _stream(engine: Engine, req: AskRequest) -> int:
    async for event in engine.events(engine.prepare(req)):
        if isinstance(event, TokenEvent):
            print(event.text, end="", flush=True)
        elif isinstance(event, DoneEvent):
            answer = msgspec.to_builtins(event.answer)
            print()
            _print_sources(answer["sources"])
            _print_status(answer["route"], req.session_id, answer["degraded"])
    return 0


def _print_status(route: dict, session: str, degraded: list[str]) -> None:
    """One line on stderr, after the answer: how it was routed, the model only when one answered, the session
    (to continue it) and what did not work as designed."""
    model = f" · {route['model']}" if route.get("model") else ""
    query = f" · query: {route['retrieval_query']}" if route.get("retrieval_query") else ""
    down = f" · degraded: {', '.join(degraded)}" if degraded else ""
    print(
        f"[{route['type']} via {route['layer']} ({route['confidence']:.2f}) · {route['model_slot']} slot{model}"
        f" · session {session}{query}{down}]",
        file=sys.stderr,
    )


def _print_sources(sources: list[dict]) -> None:
    for i, src in enumerate(sources, 1):
        label = "near miss" if src.get("near_miss") else f"[{i}]"  # found, not cited (ADR 0102)
        print(f"  {label} {src['title']} — {src['heading'] or src['title']} ({src['id']})")
