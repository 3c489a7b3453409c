"""`make test` validates the deployment files: cfn-lint on template.yaml, statelint on the ASL (placeholders filled).

Each validator also fails a deliberately broken copy, so a passing run means something.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assist_dev.local.definition import ASL, FUNCTION_ARNS, INDEX_ASL, ROOT, local_definition, placeholders

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent
TEMPLATE = ROOT / "template.yaml"


def cfn_lint(path: Path, *options: str) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "cfn-lint"), str(path), *options]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def statelint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "statelint"), str(path)], capture_output=True, text=True, timeout=60)


def test_cfn_lint_passes_the_template():
    r = cfn_lint(TEMPLATE)
    assert r.returncode == 0, r.stdout + r.stderr


def test_cfn_lint_informational_checks_pass_too():
    """I3011 among them: every stateful resource says what happens to it on deletion (ADR 0065)."""
    r = cfn_lint(TEMPLATE, "--include-checks", "I")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_command_as_written_with_the_checks_first_lints_the_template():
    """`cfn-lint --include-checks I template.yaml` from the root: .cfnlintrc names the template, which the
    option's word list would otherwise swallow."""
    cmd = [str(BIN / "cfn-lint"), "--include-checks", "I", "template.yaml"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_informational_checks_catch_a_table_without_a_deletion_policy(tmp_path):
    text = TEMPLATE.read_text()
    table = "  SessionsTable:\n    Type: AWS::DynamoDB::Table\n    DeletionPolicy: Retain\n"
    assert table in text
    bad = tmp_path / "template.yaml"
    bad.write_text(text.replace(table, "  SessionsTable:\n    Type: AWS::DynamoDB::Table\n", 1))
    r = cfn_lint(bad, "--include-checks", "I")
    assert "I3011" in r.stdout


@pytest.mark.parametrize(
    ("broken", "needle"),
    [
        (("MemorySize: 2048 #", "MemorySize: lots #"), "E3012"),  # a property of the wrong type
        (
            ("DefinitionUri: ", "DefinitionUrl: "),
            "E3002",  # a property the resource type does not have
        ),
    ],
)
def test_cfn_lint_fails_a_broken_template(tmp_path, broken, needle):
    text = TEMPLATE.read_text()
    assert broken[0] in text
    bad = tmp_path / "template.yaml"
    bad.write_text(text.replace(broken[0], broken[1], 1))
    r = cfn_lint(bad)
    assert r.returncode != 0
    assert needle in r.stdout


#: what statelint 3.1.0 (the newest release) does not know yet: the Distributed Map's ReaderConfig.InputType, which
#: AWS requires for an ItemReader reading a JSON file (Step Functions Developer Guide, "ItemReader (Map)")
STATELINT_GAPS = {'Field "InputType" not allowed in State Machine.States.Embed.ItemReader.ReaderConfig'}


@pytest.mark.parametrize("asl", [ASL, INDEX_ASL], ids=["ask", "index"])
def test_statelint_passes_the_definition_with_its_placeholders_filled(tmp_path, asl):
    filled = tmp_path / asl.name
    filled.write_text(local_definition(path=asl))
    assert not placeholders(filled.read_text())
    r = statelint(filled)
    errors = {line.strip() for line in r.stdout.splitlines()[1:] if line.strip()}
    assert r.returncode == 0 or errors <= STATELINT_GAPS, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("state", "change", "needle"),
    [
        ("Retrieve", {"Next": "Answr"}, "Answr"),  # a dangling transition
        ("RouteByType", {"Type": "Switch"}, "Switch"),  # no such state type
    ],
)
def test_statelint_fails_a_broken_definition(tmp_path, state, change, needle):
    definition = json.loads(local_definition())
    definition["States"][state].update(change)
    bad = tmp_path / "ask.asl.json"
    bad.write_text(json.dumps(definition))
    r = statelint(bad)
    assert r.returncode != 0
    assert needle in r.stdout


@pytest.mark.parametrize(("resource", "asl"), [("AskStateMachine", ASL), ("IndexBuildStateMachine", INDEX_ASL)])
def test_the_template_deploys_this_definition_with_every_placeholder_substituted(resource, asl):
    from assist_dev.local.resources import load_template

    machine = load_template()["Resources"][resource]["Properties"]
    assert (ROOT / machine["DefinitionUri"]).resolve() == asl
    assert set(machine["DefinitionSubstitutions"]) == placeholders(asl.read_text())
    assert set(machine["DefinitionSubstitutions"]) <= set(FUNCTION_ARNS)
    for key in machine["DefinitionSubstitutions"]:
        expected = {"Fn::GetAtt": f"{FUNCTION_ARNS[key].capitalize()}Function.Arn"}
        assert machine["DefinitionSubstitutions"][key] == expected
