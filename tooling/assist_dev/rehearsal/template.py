"""template.yaml as CloudFormation will see it: expanded by aws-sam-translator, intrinsics resolved.

The SAM transform turns each function's `Policies` (policy templates such as `DynamoDBReadPolicy`)
into the inline statements of a generated role; nothing here restates them. What the transform
leaves to CloudFormation (`Ref`, `Fn::Sub`, `Fn::GetAtt`, `Fn::If`, dynamic references) is resolved
against the physical names the rehearsal gives each resource, as a stack named `stack` would.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assist.errors import AssistError
from assist_dev.local.definition import ASL, ROOT, substitute

TEMPLATE = ROOT / "template.yaml"
ACCOUNT = "123456789012"
_NO_VALUE = object()
_SUB = re.compile(r"\$\{([^}]+)\}")
_DYNAMIC = re.compile(r"\{\{resolve:secretsmanager:(.+?):SecretString\}\}")


class TemplateError(AssistError, ValueError):
    """The template cannot be expanded or resolved."""


@dataclass
class FunctionSpec:
    """One function as Lambda would run it: its role, environment, limits and entry command."""

    logical_id: str
    name: str
    role: str  # the role's logical id
    environment: dict[str, str]
    timeout_s: int
    memory_mb: int
    command: list[str]
    module: str  # functions/<module>: the image's FUNCTION build argument


@dataclass
class RoleSpec:
    logical_id: str
    name: str
    trust: dict[str, Any]
    policies: dict[str, dict[str, Any]]  # inline policy name → document
    managed: list[str] = field(default_factory=list)

    @property
    def arn(self) -> str:
        return f"arn:aws:iam::{ACCOUNT}:role/{self.name}"

    def documents(self) -> list[dict[str, Any]]:
        return list(self.policies.values())


def expand(
    path: Path = TEMPLATE, region: str = "us-east-1", parameters: dict[str, str] | None = None
) -> dict[str, Any]:
    """The SAM template transformed to plain CloudFormation, as `sam deploy` hands it over (image URIs and the
    state machine's definition location filled in, as `sam build` and `sam package` do)."""
    # deferred, ADR 0071: boto3 0.1 s (aws extra only), aws-sam-translator 0.4 s
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.yaml_helper import yaml_parse

    sam = yaml_parse(path.read_text())
    for logical, res in sam["Resources"].items():
        if res["Type"] == "AWS::Serverless::Function":
            res["Properties"]["ImageUri"] = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/assist:{logical}"
        elif res["Type"] == "AWS::Serverless::StateMachine":
            res["Properties"]["DefinitionUri"] = f"s3://sam-artifacts/{Path(res['Properties']['DefinitionUri']).name}"
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    try:
        return translator.translate(sam, parameter_values=dict(parameters or {}), get_managed_policy_map=dict)
    except InvalidDocumentException as exc:
        raise TemplateError(f"template.yaml does not transform: {exc}") from exc


class Stack:
    """Physical names and intrinsic resolution for one expanded template deployed as `name`."""

    def __init__(
        self,
        cfn: dict[str, Any],
        name: str,
        parameters: dict[str, str],
        region: str = "us-east-1",
        secrets: Callable[[str], str] | None = None,
    ) -> None:
        self.cfn = cfn
        self.name = name
        self.region = region
        self.resources: dict[str, dict[str, Any]] = cfn["Resources"]
        self.parameters = {k: str(v.get("Default", "")) for k, v in cfn.get("Parameters", {}).items()}
        self.parameters.update(parameters)
        self.physical: dict[str, str] = {}  # logical id → the id `Ref` returns, when not derived from the name
        self.secrets = secrets  # reads a dynamic reference's secret, as CloudFormation does at deploy time

    # -- what the rehearsal needs -----------------------------------------------------
    def of_type(self, kind: str) -> list[str]:
        return [k for k, v in self.resources.items() if v["Type"] == kind]

    def functions(self) -> dict[str, FunctionSpec]:
        out = {}
        for logical in self.of_type("AWS::Lambda::Function"):
            props = self.resolve(self.resources[logical]["Properties"])
            out[logical] = FunctionSpec(
                logical_id=logical,
                name=self.ref(logical),
                role=self.resources[logical]["Properties"]["Role"]["Fn::GetAtt"][0],
                environment={k: str(v) for k, v in props.get("Environment", {}).get("Variables", {}).items()},
                timeout_s=int(props.get("Timeout", 3)),
                memory_mb=int(props.get("MemorySize", 128)),
                command=list(props.get("ImageConfig", {}).get("Command", [])),
                module=self.resources[logical].get("Metadata", {}).get("DockerBuildArgs", {}).get("FUNCTION", ""),
            )
        return out

    def roles(self) -> dict[str, RoleSpec]:
        out = {}
        for logical in self.of_type("AWS::IAM::Role"):
            props = self.resolve(self.resources[logical]["Properties"])
            out[logical] = RoleSpec(
                logical_id=logical,
                name=self.ref(logical),
                trust=props["AssumeRolePolicyDocument"],
                policies={p["PolicyName"]: p["PolicyDocument"] for p in props.get("Policies", [])},
                managed=list(props.get("ManagedPolicyArns", [])),
            )
        return out

    def state_machine(self, logical: str) -> tuple[str, str]:
        """(definition with its substitutions filled, the role's logical id)."""
        props = self.resources[logical]["Properties"]
        values = self.resolve(props.get("DefinitionSubstitutions", {}))
        asl = ASL.parent / props["DefinitionS3Location"]["Key"]  # the file `sam package` uploaded
        return substitute(asl.read_text(), {k: str(v) for k, v in values.items()}), props["RoleArn"]["Fn::GetAtt"][0]

    # -- intrinsics ---------------------------------------------------------------------
    def ref(self, logical: str) -> str:
        if logical in self.physical:
            return self.physical[logical]
        kind = self.resources[logical]["Type"]
        props = self.resources[logical].get("Properties", {})
        if kind == "AWS::DynamoDB::Table" and "TableName" in props:
            return str(self.resolve(props["TableName"]))
        if kind == "AWS::Logs::LogGroup" and "LogGroupName" in props:
            return str(self.resolve(props["LogGroupName"]))
        if kind == "AWS::StepFunctions::StateMachine":
            name = self.resolve(props["StateMachineName"]) if "StateMachineName" in props else f"{self.name}-{logical}"
            return f"arn:aws:states:{self.region}:{ACCOUNT}:stateMachine:{name}"
        if kind == "AWS::S3::Bucket":
            return f"{self.name}-{logical}".lower()
        if kind == "AWS::SNS::Topic":
            return f"arn:aws:sns:{self.region}:{ACCOUNT}:{self.name}-{logical}"
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT}/{self.name}-{logical}"
        return f"{self.name}-{logical}"

    def get_att(self, logical: str, attribute: str) -> str:
        kind = self.resources[logical]["Type"]
        name = self.ref(logical)
        arns = {
            "AWS::Lambda::Function": f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{name}",
            "AWS::IAM::Role": f"arn:aws:iam::{ACCOUNT}:role/{name}",
            "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{self.region}:{ACCOUNT}:table/{name}",
            "AWS::Logs::LogGroup": f"arn:aws:logs:{self.region}:{ACCOUNT}:log-group:{name}:*",
            "AWS::S3::Bucket": f"arn:aws:s3:::{name}",
            "AWS::SQS::Queue": f"arn:aws:sqs:{self.region}:{ACCOUNT}:{self.name}-{logical}",
            "AWS::SNS::Topic": f"arn:aws:sns:{self.region}:{ACCOUNT}:{name}",
        }
        if attribute == "Arn" and kind in arns:
            return arns[kind]
        if kind == "AWS::StepFunctions::StateMachine" and attribute == "Name":
            return name.rsplit(":", 1)[-1]
        if kind == "AWS::Lambda::Url" and attribute == "FunctionUrl":
            return f"https://{logical.lower()}.lambda-url.{self.region}.on.aws/"
        if kind == "AWS::S3::Bucket" and attribute == "DomainName":
            return f"{name}.s3.amazonaws.com"
        raise TemplateError(f"Fn::GetAtt {logical}.{attribute} ({kind}) is not known to the rehearsal")

    def pseudo(self, name: str) -> str | None:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::StackName": self.name,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{ACCOUNT}:stack/{self.name}/rehearsal",
        }.get(name)

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.cfn.get("Conditions", {})[name]))

    def resolve(self, node: Any) -> Any:
        """`node` with every intrinsic function replaced by its value (AWS::NoValue drops the key)."""
        if isinstance(node, list):
            return [v for v in (self.resolve(x) for x in node) if v is not _NO_VALUE]
        if isinstance(node, str):
            return _DYNAMIC.sub(lambda m: self._secret(m.group(1)), node)
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            fn = _INTRINSICS.get(key)
            if fn is not None:
                return fn(self, copy.deepcopy(arg))
        return {k: v for k, v in ((k, self.resolve(v)) for k, v in node.items()) if v is not _NO_VALUE}

    def _secret(self, ref: str) -> str:
        if self.secrets is None:
            raise TemplateError(f"dynamic reference to secret {ref} but no secret reader")
        return self.secrets(ref)

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if (value := self.pseudo(name)) is not None:
            return value
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            return self.ref(name)
        raise TemplateError(f"Ref {name}: no such parameter or resource")

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def one(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("!"):
                return "${" + expr[1:] + "}"
            if expr in variables:
                return str(variables[expr])
            if "." in expr and expr.split(".", 1)[0] in self.resources:
                return self.get_att(*expr.split(".", 1))
            return str(self._ref(expr))

        return self.resolve(_SUB.sub(one, text))


def _get_att(stack: Stack, arg: Any) -> str:
    logical, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
    return stack.get_att(logical, attribute)


def _if(stack: Stack, arg: list[Any]) -> Any:
    name, yes, no = arg
    return stack.resolve(yes if stack.condition(name) else no)


_INTRINSICS: dict[str, Callable[[Stack, Any], Any]] = {
    "Ref": lambda s, a: s._ref(a),
    "Fn::Sub": lambda s, a: s._sub(a),
    "Fn::GetAtt": _get_att,
    "Fn::If": _if,
    "Fn::Join": lambda s, a: a[0].join(str(x) for x in s.resolve(a[1])),
    "Fn::Select": lambda s, a: s.resolve(a[1])[int(s.resolve(a[0]))],
    "Fn::Split": lambda s, a: str(s.resolve(a[1])).split(a[0]),
    "Fn::Equals": lambda s, a: str(s.resolve(a[0])) == str(s.resolve(a[1])),
    "Fn::Not": lambda s, a: not s.resolve(a[0]),
    "Fn::And": lambda s, a: all(s.resolve(x) for x in a),
    "Fn::Or": lambda s, a: any(s.resolve(x) for x in a),
    "Condition": lambda s, a: s.condition(a),
}
