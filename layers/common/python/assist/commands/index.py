from __future__ import annotations

import argparse

from assist.commands.common import emit, settings


def register(sub: argparse._SubParsersAction) -> None:
    ix = sub.add_parser("index", help="index a folder of Markdown/text into LanceDB (incremental)")
    ix.add_argument("path")
    ix.add_argument("--index", help="index URI: a directory or s3://bucket/prefix (default: INDEX_URI)")
    ix.add_argument("--quiet", action="store_true", help="no progress bar")
    ix.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assist.aws.clients import index_s3
    from assist.embed import build_embedder
    from assist.index.store import ingest

    s = settings(index_uri=args.index)
    stats = ingest(args.path, s, build_embedder(s), progress=not args.quiet, s3=index_s3(s))
    emit({"index": s.index_uri, **vars(stats)})
    return 0
