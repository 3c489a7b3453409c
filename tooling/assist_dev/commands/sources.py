"""`assist eval sources`: the same Markdown docs indexed as files and as their rendered website (and, to
measure what dropping it does, as the site with its chrome kept)."""

from __future__ import annotations

import argparse
from pathlib import Path

from assist.commands.common import group, report, settings


def register(sub: argparse._SubParsersAction) -> None:
    ev = group(sub, "eval")
    p = ev.add_parser(
        "sources",
        help="docs indexed as files and as their rendered site (loopback), and the site with its chrome kept: "
        "nDCG@10 side by side",
    )
    p.add_argument("--docs", default="docs", help="the Markdown folder (default: docs)")
    p.add_argument("--queries", default="data/retrieval/queries.jsonl")
    p.add_argument("--qrels", default="data/retrieval/qrels.tsv")
    p.add_argument("--work-dir", default=".assist/eval-sources", help="the rendered site and both indexes")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.embed import build_embedder
    from assist_dev.bench.sources import compare

    s = settings(logs={"level": "WARNING"}, crawl={"delay_s": 0.0})  # our own loopback server: no need to be polite
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    result = compare(Path(args.docs), Path(args.queries), Path(args.qrels), s, build_embedder(s), work)
    if not args.json:
        names = ("files", "site", "site_with_chrome")
        print(f"{'':14}" + "".join(f"{n:>18}" for n in names))
        for key in ("ndcg@10", "recall@10", "mrr@10", "cites_chrome", "docs", "chunks"):
            print(f"{key:14}" + "".join(f"{result[n][key]:>18}" for n in names))
        print(
            f"pages {result['pages']}, queries {result['queries']}, Δ nDCG@10 (site − files) {result['delta_ndcg@10']}"
        )
        return 0
    report(result, True)
    return 0
