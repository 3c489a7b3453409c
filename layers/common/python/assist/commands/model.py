from __future__ import annotations

import argparse

from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.embed.export import export_minilm


def register(sub: argparse._SubParsersAction) -> None:
    model = sub.add_parser(
        "model",
        help=HELP["model"],
    ).add_subparsers(dest="model_cmd", required=True)
    ex = model.add_parser("export", help="export all-MiniLM-L6-v2 to ONNX (set-up step; needs torch)")
    ex.add_argument("--out", help="target directory (default: EMBED_MODEL_DIR)")
    ex.add_argument("--force", action="store_true")
    ex.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    s = settings()
    emit({"model_dir": str(export_minilm(args.out or s.embed.model_dir, force=args.force))})
    return 0
