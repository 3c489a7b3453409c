from __future__ import annotations

import argparse

from assist.commands.common import emit, settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export new classified turns as redacted, labeled JSONL (incremental)")
    p.add_argument("--force", action="store_true", help="export even below CLASSIFIER_EXPORT_THRESHOLD new sessions")
    p.add_argument("--out", help="directory or s3:// prefix (default: CLASSIFIER_EXPORT_DIR)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from dataclasses import asdict

    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.export.labels import run_export

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
