from __future__ import annotations

import argparse

from assist.commands.common import settings


def register(sub: argparse._SubParsersAction) -> None:
    local = sub.add_parser("local", help="the local cloud stack").add_subparsers(dest="local_cmd", required=True)
    up = local.add_parser("up", help="moto (S3, DynamoDB) + tables + index + API, in the foreground")
    up.add_argument("--port", type=int, default=8000)
    up.add_argument(
        "--docs",
        nargs="+",
        default=["docs"],
        metavar="URL|PATH",
        help="what to index: folders, git repositories, docs sites, OpenAPI specs, PDF (default: docs)",
    )
    up.add_argument("--sources", help="a YAML sources file, beside or instead of --docs")
    up.add_argument("--index", help="index URI, e.g. s3://assist-data/index (default: INDEX_URI)")
    up.set_defaults(func=run_up)
    local.add_parser("env", help="print the export lines that reach the running stack").set_defaults(func=run_env)


def run_up(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.sources.resolve import load_file, resolved
    from assist_dev.local.stack import up

    s = settings()
    given = args.docs if (args.docs != ["docs"] or not (args.sources or s.sources.file)) else []
    specs = [resolved({"location": loc}) for loc in given]
    if args.sources or s.sources.file:
        specs += load_file(args.sources or s.sources.file)
    return up(s, port=args.port, docs=specs, index=args.index)


def run_env(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist_dev.local.stack import env

    return env()
