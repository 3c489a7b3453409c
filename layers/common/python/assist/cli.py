"""The `assist` command. Each subcommand imports only what it needs, so `--help` stays instant."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _settings():
    from assist.logs import configure
    from assist.settings import Settings

    s = Settings.from_env()
    configure(s)
    return s


def cmd_index(args: argparse.Namespace) -> int:
    from assist.embed import build_embedder
    from assist.index.store import ingest

    s = _settings()
    if args.index:
        s = s.with_(index_uri=args.index)
    stats = ingest(args.path, s, build_embedder(s), progress=not args.quiet)
    print(json.dumps({"index": s.index_uri, **vars(stats)}))
    return 0


def cmd_local_up(args: argparse.Namespace) -> int:
    from assist.local.stack import up

    return up(_settings(), port=args.port, docs=Path(args.docs), index=args.index)


def cmd_local_env(args: argparse.Namespace) -> int:
    from assist.local.stack import env

    return env()


def cmd_model_export(args: argparse.Namespace) -> int:
    from assist.embed.export import export_minilm

    s = _settings()
    out = export_minilm(args.out or s.embed_model_dir, force=args.force)
    print(json.dumps({"model_dir": str(out)}))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="assist", description="Adaptive-routing RAG assistance engine")
    sub = p.add_subparsers(dest="command", required=True)

    ix = sub.add_parser("index", help="index a folder of Markdown/text into LanceDB (incremental)")
    ix.add_argument("path")
    ix.add_argument("--index", help="index URI: a directory or s3://bucket/prefix (default: INDEX_URI)")
    ix.add_argument("--quiet", action="store_true", help="no progress bar")
    ix.set_defaults(func=cmd_index)

    local = sub.add_parser("local", help="the local cloud stack").add_subparsers(dest="local_cmd", required=True)
    lu = local.add_parser("up", help="moto (S3, DynamoDB) + tables + index + API, in the foreground")
    lu.add_argument("--port", type=int, default=8000)
    lu.add_argument("--docs", default="docs", help="folder to index (default: docs)")
    lu.add_argument("--index", help="index URI, e.g. s3://assist-data/index (default: INDEX_URI)")
    lu.set_defaults(func=cmd_local_up)
    local.add_parser("env", help="print the export lines that reach the running stack").set_defaults(func=cmd_local_env)

    model = sub.add_parser("model", help="embedding model set-up").add_subparsers(dest="model_cmd", required=True)
    me = model.add_parser("export", help="export all-MiniLM-L6-v2 to ONNX (set-up step; needs torch)")
    me.add_argument("--out", help="target directory (default: EMBED_MODEL_DIR)")
    me.add_argument("--force", action="store_true")
    me.set_defaults(func=cmd_model_export)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from assist.errors import AssistError

    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except AssistError as exc:
        print(f"assist: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
