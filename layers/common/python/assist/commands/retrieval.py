"""`assist eval retrieval` and `assist eval docs-corpus`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from assist.commands.common import group, report, settings

STRATEGIES = ("fts", "vector", "rrf", "adaptive")


def register(sub: argparse._SubParsersAction) -> None:
    ev = group(sub, "eval")
    p = ev.add_parser("retrieval", help="one strategy on BEIR files: nDCG@10, recall@5/10/100, MRR@10, latency")
    p.add_argument("--corpus", required=True, help="corpus.jsonl: {_id, title, text} per line")
    p.add_argument("--queries", required=True, help="queries.jsonl: {_id, text} per line")
    p.add_argument("--qrels", required=True, help="qrels TSV with the header query-id, corpus-id, score")
    p.add_argument("--strategy", choices=STRATEGIES, default="adaptive")
    p.add_argument("--index-dir", required=True, help="where the corpus index is built (reused while it matches)")
    p.add_argument(
        "--vs",
        default="auto",
        choices=[*STRATEGIES, "auto", "none"],
        help="baseline run beside it on the same queries, interleaved: a strategy, or none "
        "(default: rrf, LanceDB's own hybrid, when --strategy is adaptive)",
    )
    p.add_argument("--per-query", metavar="FILE", help="write one JSON line per query: ranks per strategy, kind, top 5")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run_eval)
    u = ev.add_parser(
        "uncertain",
        help="the uncertainty verdict on BEIR sets plus off-topic questions: share flagged, side by side (ADR 0055)",
    )
    u.add_argument(
        "--set",
        nargs="+",
        action="append",
        required=True,
        metavar="NAME CORPUS QRELS QUERIES",
        help="a set: its name, corpus.jsonl, qrels TSV and one or more queries.jsonl (repeat the option per set)",
    )
    u.add_argument(
        "--offtopic",
        action="append",
        required=True,
        help="off-topic questions for every set: JSONL {_id, text}, or CLINC150's JSON (oos_train and one train row "
        "per intent are read)",
    )
    u.add_argument("--index-root", required=True, help="each set's index is built in ROOT/NAME (reused)")
    u.add_argument("--json", action="store_true", help="one JSON object on stdout")
    u.set_defaults(func=run_uncertain)
    dc = ev.add_parser("docs-corpus", help="write a docs folder as a BEIR corpus, one document per section")
    dc.add_argument("path", nargs="?", default="docs")
    dc.add_argument("--out", default="-", help="file to write (default: stdout)")
    dc.set_defaults(func=run_docs_corpus)


def run_eval(args: argparse.Namespace) -> int:
    from assist.aws.clients import index_s3
    from assist.embed import build_embedder
    from assist.retrieve.evaluate import METRICS, evaluate

    s = settings(logs={"level": "WARNING"})  # not a log line per query
    s3 = index_s3(s.with_(index={"uri": args.index_dir}))
    vs = {"auto": "rrf" if args.strategy == "adaptive" else None, "none": None}.get(args.vs, args.vs)
    result = evaluate(
        args.corpus,
        args.queries,
        args.qrels,
        args.strategy,
        args.index_dir,
        s,
        build_embedder(s),
        s3=s3,
        baseline=vs,
        per_query=args.per_query,
    )
    if args.json or "baseline" not in result:
        report(result, args.json)
        return 0
    base = result["baseline"]
    print(f"{result['queries']} queries over {result['docs']} documents")
    print(f"{'':<12}{args.strategy:>10}{vs:>10}{'delta':>10}")
    for key in (*METRICS, "p50_ms", "p95_ms"):
        delta = result["delta"].get(key, "")
        print(f"{key:<12}{result[key]:>10}{base[key]:>10}{delta:>10}")
    print(f"p50 ratio {args.strategy}/{vs}: ×{result['p50_ratio']}")
    return 0


def run_uncertain(args: argparse.Namespace) -> int:
    from assist.embed import build_embedder
    from assist.errors import AssistError
    from assist.retrieve.evaluate_verdict import DataSet, evaluate

    for spec in args.set:
        if len(spec) < 4:
            raise AssistError(f"--set {' '.join(spec)}: expected NAME CORPUS QRELS QUERIES [QUERIES ...]")
    sets = [DataSet(spec[0], spec[1], spec[2], tuple(spec[3:])) for spec in args.set]
    s = settings(logs={"level": "WARNING"})
    result = evaluate(sets, args.offtopic, args.index_root, s, build_embedder(s))
    if args.json:
        report(result, True)
        return 0
    names = list(result["sets"])
    print(
        f"uncertain when similarity + {result['centrality_weight']} × centrality"
        f" + {result['coverage_weight']} × coverage < {result['threshold']}"
        ": share flagged (n, and share with retrieval confidence low/none)"
    )
    print(f"{'':<30}" + "".join(f"{n:>28}" for n in names))
    groups = list(result["sets"][names[0]])
    for g in (g for g in groups if g not in ("missed", "flagged_answerable")):
        cells = []
        for n in names:
            r = result["sets"][n][g]
            cells.append(f"{r['flagged']:.3f} (n {r['n']}, weak {r['weak_confidence']:.3f})")
        print(f"{g:<30}" + "".join(f"{c:>28}" for c in cells))
    for n in names:
        print(f"\n{n}: reasons off-topic {result['sets'][n]['off-topic']['reasons']}")
        print(f"  missed off-topic: {result['sets'][n]['missed'][:8]}")
        print(f"  flagged answerable: {result['sets'][n]['flagged_answerable'][:8]}")
    return 0


def run_docs_corpus(args: argparse.Namespace) -> int:
    from assist.retrieve.beir import docs_corpus

    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in docs_corpus(args.path))
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0
