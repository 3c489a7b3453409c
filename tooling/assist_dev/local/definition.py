"""The state machines' definitions: the ASL files that template.yaml deploys (the ask chain, the index build), with
their `${…}` placeholders.

SAM fills the placeholders from `DefinitionSubstitutions`; the local stack and the validators
fill them with the local functions' ARNs. Both read this one file.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # the repository (the local stack and the tools run from a checkout)
ASL = ROOT / "infra" / "statemachine" / "ask.asl.json"
INDEX_ASL = ROOT / "infra" / "statemachine" / "index.asl.json"
PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\}")
# placeholder → the function whose ARN fills it
FUNCTION_ARNS = {
    "ClassifyFunctionArn": "classify",
    "RetrieveFunctionArn": "retrieve",
    "AnswerFunctionArn": "answer",
    "SyncFunctionArn": "sync",
}
LOCAL_ACCOUNT = "123456789012"


def local_name(function: str) -> str:
    return f"assist-{function}"


def local_arn(function: str, region: str = "us-east-1") -> str:
    return f"arn:aws:lambda:{region}:{LOCAL_ACCOUNT}:function:{local_name(function)}"


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def substitute(text: str, values: dict[str, str]) -> str:
    missing = placeholders(text) - set(values)
    if missing:
        raise ValueError(f"no value for placeholder(s) {', '.join(sorted(missing))} in the state machine definition")
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def local_definition(region: str = "us-east-1", path: Path = ASL) -> str:
    """The deployed definition with the local functions' ARNs in place of the template's."""
    return substitute(path.read_text(), {k: local_arn(f, region) for k, f in FUNCTION_ARNS.items()})
