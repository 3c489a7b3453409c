from __future__ import annotations

import argparse

from assist.aws.clients import index_s3
from assist.build.run import sync_sources
from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.embed import build_embedder
from assist.errors import AssistError
from assist.index.publish import publish, rollback
from assist.sources.resolve import kind_names, load_file, resolved
from assist.sources.spec import SourceError, SourceSpec


def register(sub: argparse._SubParsersAction) -> None:
    ix = sub.add_parser(
        "index",
        help=HELP["index"],
    )
    ix.add_argument("locations", nargs="*", metavar="URL|PATH", help="sources; the index holds exactly these")
    ix.add_argument("--sources", help="a YAML sources file (default: SOURCES_FILE), read after the locations")
    ix.add_argument("--kind", choices=kind_names(), help="instead of guessing")
    ix.add_argument("--base-url", default="", help="folder/repo: where the files are published ({path}, {stem})")
    ix.add_argument("--prefix", default="", help="put before every document id of these locations")
    ix.add_argument("--index", help="index URI: a directory or s3://bucket/prefix (default: INDEX_URI)")
    ix.add_argument("--quiet", action="store_true", help="no progress bar")
    ix.add_argument(
        "--workers",
        type=positive,
        default=1,
        metavar="N",
        help="embed the build's shards on N processes (each with its share of the CPUs; ADR 0120)",
    )
    ix.add_argument(
        "--publish",
        action="store_true",
        help="build a new version beside the live one, gate it (INDEX_GATE_*), then make it live (ADR 0067)",
    )
    ix.add_argument("--rollback", action="store_true", help="make the previous live version live again")
    ix.add_argument("--to", metavar="VERSION", help="with --rollback: an earlier live version")
    ix.set_defaults(func=run)


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1, not {value}")
    return value


def specs_of(args: argparse.Namespace, sources_file: str) -> list[SourceSpec]:
    given = {"kind": args.kind, "base_url": args.base_url, "prefix": args.prefix}
    specs = [resolved(given | {"location": loc}) for loc in args.locations]
    if args.sources or (sources_file and not specs):
        specs += load_file(args.sources or sources_file)
    if not specs:
        raise SourceError("name a URL or path to index, or a sources file (--sources, SOURCES_FILE)")
    return specs


def run(args: argparse.Namespace) -> int:
    s = settings(index={"uri": args.index})
    if args.rollback and (args.publish or args.locations or args.sources):
        raise AssistError("--rollback takes no sources and no --publish: it only moves the live pointer back")
    if args.to and not args.rollback:
        raise AssistError("--to names the version --rollback goes back to")
    if args.rollback:
        emit(rollback(s, index_s3(s), args.to))
        return 0
    specs = specs_of(args, s.sources.file)
    if args.publish:
        # deferred, ADR 0104: the gate's evaluation loads lancedb (1.2 s), which `assist index --help` need not pay
        from assist.offline.retrieve.evaluate import gate_score

        embedder, s3 = build_embedder(s), index_s3(s)
        report = publish(
            s,
            build=lambda version: sync_sources(specs, version, embedder, not args.quiet, s3, args.workers),
            score=lambda version: gate_score(version, embedder),
            s3=s3,
        )
        emit(report)
        return 0 if report["published"] else 1
    result = sync_sources(specs, s, build_embedder(s), not args.quiet, index_s3(s), args.workers)
    emit(result)
    return 0
