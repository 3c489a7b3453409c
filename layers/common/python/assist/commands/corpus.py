"""`assist bench corpus`: the corpus manifest's size and what corpus questions add per question (ADR 0042)."""

from __future__ import annotations

import argparse

from assist.commands.common import emit, group, settings


def register(sub: argparse._SubParsersAction) -> None:
    b = group(sub, "bench").add_parser(
        "corpus", help="corpus manifest size (docs/, N generated documents) and added latency per question"
    )
    b.add_argument("--rounds", type=int, default=3, help="passes over the questions (default 3)")
    b.add_argument("--documents", type=int, default=1000, help="documents in the generated folder (default 1,000)")
    b.add_argument("--index-dir", help="where the docs/ index is built (default: a throw-away directory)")
    b.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    from assist.bench.corpus import run

    emit(run(settings(log_level="WARNING"), rounds=args.rounds, documents=args.documents, index_dir=args.index_dir))
    return 0
