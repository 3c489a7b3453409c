"""`assist eval retrieval`, `uncertain`, `everyday`, `scoped-verdict` and `docs-corpus`: their arguments. What
they run is in `commands/retrieval_run.py`, loaded when one runs (the evaluation loads lancedb: 3 s that
`assist eval --help` need not pay, ADR 0104)."""

from __future__ import annotations

import argparse

from assist.commands.common import group

STRATEGIES = ("fts", "vector", "rrf", "adaptive")
RUN = "assist.commands.retrieval_run"


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
    p.set_defaults(func=f"{RUN}:run_eval")
    _uncertain(ev)
    _everyday(ev)
    _scoped(ev)
    dc = ev.add_parser("docs-corpus", help="write a docs folder as a BEIR corpus, one document per section")
    dc.add_argument("path", nargs="?", default="docs")
    dc.add_argument("--out", default="-", help="file to write (default: stdout)")
    dc.set_defaults(func=f"{RUN}:run_docs_corpus")


def _sets(parser: argparse.ArgumentParser, required: bool, what: str) -> None:
    parser.add_argument(
        "--set",
        nargs="+",
        action="append",
        required=required,
        metavar="NAME CORPUS QRELS QUERIES",
        help=f"a set: its name, corpus.jsonl, qrels TSV and one or more queries.jsonl ({what})",
    )


def _offtopic(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--offtopic",
        action="append",
        default=[],
        help="off-topic questions for every set: JSONL {_id, text}, or CLINC150's JSON (oos_train and one train row "
        f"per intent are read){default}",
    )


def _uncertain(ev: argparse._SubParsersAction) -> None:
    u = ev.add_parser(
        "uncertain",
        help="the uncertainty verdict fitted on several BEIR sets, each reported as fitted and left out of the fit "
        "(ADR 0055, ADR 0082)",
    )
    _sets(u, False, "repeat the option per set")
    _offtopic(u, "")
    u.add_argument(
        "--absent",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "FILE"),
        help="in-domain but absent questions of one set: JSONL {_id, text} (repeatable)",
    )
    u.add_argument("--index-root", help="each set's index is built in ROOT/NAME (reused)")
    u.add_argument("--evidence", metavar="FILE", help="write every question's signals to FILE (JSON lines)")
    u.add_argument(
        "--from-evidence", metavar="FILE", help="fit and report from a FILE --evidence wrote, without searching"
    )
    u.add_argument("--margin", type=float, default=0.5, help="a fit flags at most MARGIN × 0.05 answerable questions")
    u.add_argument("--json", action="store_true", help="one JSON object on stdout")
    u.set_defaults(func=f"{RUN}:run_uncertain")


def _everyday(ev: argparse._SubParsersAction) -> None:
    e = ev.add_parser(
        "everyday",
        help="everyday first turns through the router and the verdict, per set, beside the baseline (ADR 0127)",
    )
    _sets(e, True, "its answerable questions")
    e.add_argument("--everyday", default="data/uncertain/everyday.jsonl", help="everyday first turns (JSONL)")
    e.add_argument("--recall", default="data/uncertain/recall.jsonl", help="first-turn recall questions (JSONL)")
    e.add_argument("--index-root", required=True, help="each set's index is built in ROOT/NAME (reused)")
    e.add_argument("--limit", type=int, help="at most N answerable questions per set")
    e.add_argument("--json", action="store_true", help="one JSON object on stdout")
    e.set_defaults(func=f"{RUN}:run_everyday")


def _scoped(ev: argparse._SubParsersAction) -> None:
    v = ev.add_parser(
        "scoped-verdict",
        help="each set split into scopes by topic: scoped questions judged by their scope's calibration beside the "
        "corpus's (ADR 0129)",
    )
    _sets(v, True, "its answerable questions")
    v.add_argument("--scopes", type=int, default=2, help="scopes per set: k-means clusters of its documents")
    _offtopic(v, " (default data/uncertain/offtopic.jsonl)")
    v.add_argument("--index-root", required=True, help="each set's index is built in ROOT/NAME (its scopes rewritten)")
    v.add_argument("--json", action="store_true", help="one JSON object on stdout")
    v.set_defaults(func=f"{RUN}:run_scoped")
