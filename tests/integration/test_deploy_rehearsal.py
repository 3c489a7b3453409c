"""`assist deploy rehearse`: template.yaml and the code under the rules AWS enforces (moto with IAM on, each
function in its own process under its role's temporary credentials), as its own command runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assist_dev.local.definition import ROOT
from assist_dev.rehearsal.iam import allowed
from assist_dev.rehearsal.rehearse import FLOWS, drop_actions
from tests.support.attacks import record

pytestmark = pytest.mark.integration
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def small_docs(tmp_path_factory) -> Path:
    """A few of the docs: enough for every flow (ADRs for the corpus question), quick to index."""
    root = tmp_path_factory.mktemp("rehearsal-docs")
    (root / "adr").mkdir()
    for name in ("configuration.md", "architecture.md", "answering.md"):
        shutil.copy(DOCS / name, root / name)
    for adr in sorted((DOCS / "adr").glob("00[0-2]*.md"))[:6]:
        shutil.copy(adr, root / "adr" / adr.name)
    return root


def rehearse(docs: Path, *args: str) -> tuple[int, dict]:
    cmd = [sys.executable, "-m", "assist.cli", "deploy", "rehearse", "--docs", str(docs), "--json", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def test_every_flow_runs_under_the_templates_own_roles_and_nothing_is_denied(small_docs):
    code, report = rehearse(small_docs)
    assert report["denied"] == []
    assert report["flows"] == dict.fromkeys(FLOWS, "ok")
    assert code == 0
    assert report["wall_s"] > 0
    assert "logs" not in report  # a rehearsal that passed leaves nothing behind
    record(
        "`assist keys deny-visitor` against a deployed stack (the deploy rehearsal's `deny_visitor` flow, IAM "
        "enforced)",
        "the admin route `POST /v1/admin/denied-visitors` in the HTTP API (admin scope), the Ask function's role "
        "writing the widget table",
        "201; the visitor's stream at the function URL and its renewal 403, another visitor served; `denied: []`",
    )


def test_a_statement_dropped_from_the_expanded_policies_fails_the_rehearsal_naming_the_call(small_docs):
    code, report = rehearse(small_docs, "--flow", "export", "--without", "ExportFunction:dynamodb:UpdateItem")
    assert code == 1
    assert report["flows"]["export"].startswith("denied: dynamodb:UpdateItem on arn:aws:dynamodb:")
    assert [(d["function"], d["action"]) for d in report["denied"]] == [("ExportFunction", "dynamodb:UpdateItem")]
    assert report["denied"][0]["resource"].endswith(":table/assist-rehearsal-intent-history")
    assert Path(report["logs"], "ExportFunction.log").exists()  # a failed rehearsal keeps each function's output
    shutil.rmtree(report["logs"])


# -- the evaluator, on its own --------------------------------------------------------------
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/t"
POLICY = {
    "Statement": [
        {"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:Query"], "Resource": [TABLE, TABLE + "/index/*"]},
        {
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": "arn:aws:s3:::b",
            "Condition": {"StringLike": {"s3:prefix": ["index/*"]}},
        },
        {"Effect": "Deny", "Action": "dynamodb:Query", "Resource": TABLE + "/index/secret"},
    ]
}


@pytest.mark.parametrize(
    ("action", "resource", "context", "verdict"),
    [
        ("dynamodb:GetItem", TABLE, {}, True),
        ("dynamodb:getitem", TABLE, {}, True),  # actions are case-insensitive
        ("dynamodb:UpdateItem", TABLE, {}, False),  # not granted
        ("dynamodb:GetItem", TABLE + "2", {}, False),  # another table
        ("dynamodb:Query", TABLE + "/index/by-day", {}, True),
        ("dynamodb:Query", TABLE + "/index/secret", {}, False),  # an explicit deny wins
        ("s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": "index/x"}, True),
        ("s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": "labels/"}, False),  # the condition fails
        ("s3:ListBucket", "arn:aws:s3:::b", {}, False),  # no prefix: the condition cannot hold
    ],
)
def test_the_policy_evaluator_decides_as_iam_does(action, resource, context, verdict):
    assert allowed([POLICY], action, resource, context) is verdict


def test_dropping_an_action_keeps_the_rest_of_its_statement():
    kept = drop_actions({"p": POLICY}, {"dynamodb:GetItem", "s3:ListBucket"})
    assert not allowed(list(kept.values()), "dynamodb:GetItem", TABLE)
    assert allowed(list(kept.values()), "dynamodb:Query", TABLE)
    assert all(st.get("Action") != [] for st in kept["p"]["Statement"])
