"""`assist report` (the insights page as a file), `assist feedback review` (thumbs-down turns to look at) and
its bench, `assist bench report`, is in bench.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.aws.clients import index_s3
from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.embed.build import lazy_embedder
from assist.export.redact import redact
from assist.index.calibration import live
from assist.insights.gather import gather
from assist.insights.render import build
from assist.sessions.backends import open_store

if TYPE_CHECKING:
    from assist.sessions.store import HistoryRecord


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "report",
        help=HELP["report"],
    )
    r.add_argument("--out", required=True, help="where to write the HTML (e.g. report.html)")
    r.add_argument("--days", type=int, default=7, help="the window, 1-90 days (default 7)")
    r.add_argument("--json", action="store_true", help="print the page's figures as one JSON object")
    r.set_defaults(func=run_report)
    fb = sub.add_parser(
        "feedback",
        help=HELP["feedback"],
    )
    fbs = fb.add_subparsers(dest="feedback_cmd", required=True)
    rv = fbs.add_parser("review", help="thumbs-down turns of the last N days, newest first, for review")
    rv.add_argument("--days", type=int, default=7, help="the window, 1-90 days (default 7)")
    rv.add_argument("--json", action="store_true", help="one JSON object on stdout")
    rv.set_defaults(func=run_review)


def _store(s: Any) -> Any:
    return open_store(s)  # the one SESSION_STORE names: the embedded file or DynamoDB


def run_report(args: argparse.Namespace) -> int:
    s = settings()
    c = live(s, index_s3(s))
    html, figures = build(s, _store(s), lazy_embedder(s), args.days, c.summary() if c else None)
    Path(args.out).write_text(html, encoding="utf-8")
    if args.json:
        emit({"out": args.out, **figures})
    else:
        print(
            f"{args.out}: {figures['questions']} questions over {args.days} days, "
            f"{figures['gap_questions']} gap questions in {len(figures['gaps'])} topics "
            f"({figures['read']['queries']} index queries, {figures['read']['read_units']} read units)"
        )
    return 0


def review(entries: list[HistoryRecord]) -> list[dict[str, Any]]:
    """Thumbs-down turns, newest feedback first; messages and comments redacted."""
    down = [(e, e.feedback) for e in entries if e.feedback and e.feedback.rating == "down"]
    return [
        {
            "at": fb.at,
            "session_id": e.session_id,
            "turn": e.turn,
            "message": redact(e.message),
            "routed": {"type": e.type, "layer": e.layer, "confidence": e.confidence},
            "retrieval_confidence": e.retrieval_confidence,
            "user_type": fb.type,
            **({"comment": redact(fb.comment)} if fb.comment else {}),
        }
        for e, fb in sorted(down, key=lambda pair: pair[1].at, reverse=True)
    ]


def run_review(args: argparse.Namespace) -> int:
    s = settings()
    rows = review(gather(s, _store(s), args.days).entries)
    if args.json:
        emit({"days": args.days, "count": len(rows), "turns": rows})
        return 0
    for r in rows:
        wanted = f" → {r['user_type']}" if r["user_type"] else ""
        sys.stdout.write(f"{r['at'][:16]}  {r['session_id']}#{r['turn']}  [{r['routed']['type']}{wanted}]  ")
        sys.stdout.write(f"{r['message'][:100]}" + (f"  // {r['comment'][:80]}" if "comment" in r else "") + "\n")
    sys.stdout.write(f"{len(rows)} thumbs-down turns in the last {args.days} days\n")
    return 0
