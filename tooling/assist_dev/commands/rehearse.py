from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assist.commands.common import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("deploy", help="deployment checks")
    deploy = p.add_subparsers(dest="deploy_command", required=True)
    r = deploy.add_parser(
        "rehearse",
        help="expand template.yaml (aws-sam-translator), run every function under its own role in a moto server "
        "that enforces IAM, drive every flow, and report what was denied",
    )
    r.add_argument("--docs", type=Path, default=Path("docs"), help="the documents indexed on S3 first (docs/)")
    r.add_argument("--flow", action="append", dest="flows", help="run only this flow (repeatable); default: all")
    r.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="FUNCTION:SERVICE:ACTION",
        help="drop this action from the function role's expanded policies first (shows the rehearsal catching it)",
    )
    r.add_argument("--ollama", help="an Ollama host for the functions (default: none, answers are extractive)")
    r.add_argument("--json", action="store_true", help="print the report as one JSON object")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred, ADR 0071: `assist` imports every command module (0.1 s start; 0.46 s if at the top)
    from assist.commands.common import settings
    from assist_dev.rehearsal.rehearse import rehearse

    report = rehearse(args.docs, args.flows, args.without, args.ollama, settings())
    if args.json:
        emit(report)
    else:
        for name, verdict in report["flows"].items():
            print(f"{'ok  ' if verdict == 'ok' else 'FAIL'}  {name}{'' if verdict == 'ok' else ': ' + verdict}")
        for d in report["denied"]:
            print(f"denied  {d['function']}: {d['action']} on {d['resource']}")
        print(f"{len(report['flows'])} flows, {len(report['denied'])} denied, {report['wall_s']} s")
    ok = all(v == "ok" for v in report["flows"].values()) and not report["denied"]
    if not ok:
        print("the rehearsal found calls the template does not allow, or flows that failed", file=sys.stderr)
    return 0 if ok else 1
