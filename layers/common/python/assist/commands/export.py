from __future__ import annotations

import argparse
from dataclasses import asdict

from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.export.labels import run_export


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help=HELP["export"],
    )
    p.add_argument("--force", action="store_true", help="export even below CLASSIFIER_EXPORT_THRESHOLD new sessions")
    p.add_argument("--out", help="directory or s3:// prefix (default: CLASSIFIER_EXPORT_DIR)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = run_export(settings(export={"dir": args.out}), force=args.force)
    if args.json:
        emit(asdict(result))
    else:
        verb = "exported" if result.exported else "nothing exported"
        print(
            f"{verb}: {result.records} records from {result.sessions} sessions into {len(result.files)} files; "
            f"watermark {result.watermark or '(none)'}"
        )
    return 0
