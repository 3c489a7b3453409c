"""IAM as AWS enforces it, inside an in-process moto server.

moto authenticates every request once `INITIAL_NO_AUTH_ACTION_COUNT` is reached (unknown keys,
a missing session token and bad signatures are refused), but it authorizes crudely: for
DynamoDB, Step Functions or Secrets Manager it checks every statement against the resource
`*`, so a policy naming its table denies everything, and a condition (`s3:prefix`) is never
met. `enforce()` keeps moto's authentication and replaces the decision with `allowed()`, which
evaluates a request's real action, resource ARN(s) and condition keys the way IAM does
(explicit deny wins; an allow needs a matching action, resource and condition), and records
every denial for the rehearsal's report.
"""

from __future__ import annotations

import html
import json
import re
import threading
import urllib.parse
from dataclasses import asdict, dataclass
from typing import Any

#: DynamoDB operations that IAM authorizes item by item, by the action of each part
_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
#: S3 operations whose IAM action has another name than the operation moto reports
_S3_ACTIONS = {"HeadBucket": "ListBucket", "ListBucketV2": "ListBucket"}
_CONDITIONS = {
    "StringEquals": lambda v, p: v == p,
    "StringNotEquals": lambda v, p: v != p,
    "StringLike": lambda v, p: _like(p, v, case=True),
    "StringNotLike": lambda v, p: not _like(p, v, case=True),
    "ArnLike": lambda v, p: _like(p, v, case=True),
    "ArnEquals": lambda v, p: v == p,
    "Bool": lambda v, p: v.lower() == str(p).lower(),
}


@dataclass(frozen=True)
class Denial:
    principal: str  # the role (or user) name
    action: str
    resource: str


class Denials:
    """What the enforcement refused, in order; shared by the server's threads."""

    def __init__(self) -> None:
        self._items: list[Denial] = []
        self._lock = threading.Lock()

    def add(self, denial: Denial) -> None:
        with self._lock:
            if denial not in self._items:
                self._items.append(denial)

    def since(self, mark: int) -> list[Denial]:
        with self._lock:
            return self._items[mark:]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def as_dicts(self) -> list[dict[str, str]]:
        with self._lock:
            return [asdict(d) for d in self._items]


def _like(pattern: str, value: str, case: bool = False) -> bool:
    regex = "^" + ".*".join(re.escape(part).replace(r"\?", ".") for part in pattern.split("*")) + "$"
    return re.match(regex, value, 0 if case else re.IGNORECASE) is not None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _conditions_hold(block: dict[str, Any] | None, context: dict[str, str]) -> bool:
    for operator, tests in (block or {}).items():
        if_exists = operator.endswith("IfExists")
        check = _CONDITIONS.get(operator.removesuffix("IfExists"))
        for key, expected in tests.items():
            value = context.get(key) if key in context else context.get(key.lower())
            if value is None:
                if if_exists:
                    continue
                return False
            if check is None or not any(check(value, p) for p in _listed(expected)):
                return False
    return True


def allowed(documents: list[dict[str, Any]], action: str, resource: str, context: dict[str, str] | None = None) -> bool:
    """IAM's decision for one identity-based request: an explicit Deny wins, else any matching Allow."""
    verdict = False
    for doc in documents:
        for st in _listed(doc.get("Statement", [])):
            acts = st.get("Action", st.get("NotAction"))
            hit = any(_like(a, action) for a in _listed(acts))
            if ("Action" in st) != hit:
                continue
            if "Resource" in st or "NotResource" in st:
                hit = any(_like(r, resource, case=True) for r in _listed(st.get("Resource", st.get("NotResource"))))
                if ("Resource" in st) != hit:
                    continue
            if not _conditions_hold(st.get("Condition"), context or {}):
                continue
            if st.get("Effect") == "Deny":
                return False
            verdict = True
    return verdict


# -- what a request asks for ----------------------------------------------------------
def requests_of(
    service: str, action: str, body: Any, path: str, region: str, account: str, resource: str
) -> list[tuple[str, str, dict[str, str]]]:
    """(IAM action, resource ARN, condition keys) for each permission one request needs."""
    if service == "s3":
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query, keep_blank_values=True))
        name = action.split(":", 1)[1]
        context = {"s3:prefix": query["prefix"]} if "prefix" in query else {}
        if "delete" in query:  # DeleteObjects (POST ?delete): S3 authorizes it key by key, s3:DeleteObject on each
            keys = re.findall(rb"<Key>(.*?)</Key>", body if isinstance(body, bytes) else str(body or "").encode())
            bucket = resource.rstrip("/")
            return [("s3:DeleteObject", f"{bucket}/{html.unescape(k.decode())}", {}) for k in keys]
        return [(f"s3:{_S3_ACTIONS.get(name, name)}", resource, context)]
    data = _json(body)
    if service == "dynamodb":
        return _dynamodb(action.split(":", 1)[1], data, f"arn:aws:dynamodb:{region}:{account}:table/")
    arn = {
        "states": data.get("stateMachineArn") or data.get("executionArn"),
        "secretsmanager": _secret_arn(data.get("SecretId"), region, account),
    }.get(service)
    return [(action, arn or resource, {})]


def _dynamodb(op: str, data: dict[str, Any], prefix: str) -> list[tuple[str, str, dict[str, str]]]:
    if op in ("TransactWriteItems", "TransactGetItems"):
        out = []
        for item in data.get("TransactItems", []):
            for part, body in item.items():
                verb = "GetItem" if part == "Get" else _TRANSACT.get(part, part)
                out.append((f"dynamodb:{verb}", prefix + body["TableName"], {}))
        return out
    if op in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{op}", prefix + table, {}) for table in data.get("RequestItems", {})]
    table = data.get("TableName", "*")
    arn = prefix + table + (f"/index/{data['IndexName']}" if data.get("IndexName") else "")
    return [(f"dynamodb:{op}", arn, {})]


def _secret_arn(secret_id: str | None, region: str, account: str) -> str | None:
    if not secret_id or secret_id.startswith("arn:"):
        return secret_id
    return f"arn:aws:secretsmanager:{region}:{account}:secret:{secret_id}"


def _json(body: Any) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def check(denials: Denials, principal: str, documents: list[dict[str, Any]], action: str, resource: str) -> bool:
    """A call made on a principal's behalf by a service (Step Functions invoking a task): decided and recorded
    like any request."""
    if allowed(documents, action, resource):
        return True
    denials.add(Denial(principal, action, resource))
    return False


def caller_documents(headers: dict[str, str], account: str = "123456789012") -> tuple[str, list[dict[str, Any]]]:
    """(principal, policy documents) of the key that signed a request, checked as moto checks it (a temporary
    key needs its session token). Raises PermissionError for an unknown key or a wrong token."""
    # deferred, ADR 0071: moto 0.5 s
    from moto.iam.access_control import CreateAccessKeyFailure, create_access_key

    auth = headers.get("Authorization") or headers.get("authorization") or ""
    key_id = auth.split("Credential=", 1)[-1].split("/", 1)[0]
    try:
        key = create_access_key(account_id=account, partition="aws", access_key_id=key_id, headers=headers)
    except CreateAccessKeyFailure as exc:
        raise PermissionError(f"the security token included in the request is invalid ({exc.reason})") from exc
    return principal_of(key), documents_of(key)


# -- the patch ------------------------------------------------------------------------
def documents_of(access_key: Any) -> list[dict[str, Any]]:
    """The policy documents attached to the caller: inline (JSON text) and managed (versioned)."""
    docs = []
    for policy in access_key.collect_policies():
        if isinstance(policy, str):
            docs.append(json.loads(policy))
        elif isinstance(policy, dict) and "policy_document" in policy:
            docs.append(json.loads(policy["policy_document"]))
        else:
            version = next(v for v in policy.versions if v.is_default)
            doc = version.document
            docs.append(json.loads(doc) if isinstance(doc, str) else doc)
    return docs


def principal_of(access_key: Any) -> str:
    return getattr(access_key, "_owner_role_name", None) or str(getattr(access_key, "arn", "?")).rsplit("/", 1)[-1]


def enforce(denials: Denials) -> None:
    """Switch on authentication for every request of this process's moto, with `allowed()` deciding."""
    # deferred, ADR 0071: moto 0.5 s
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    def authorize(self: Any, iam_request_cls: type, resource: str = "*") -> None:
        if self.headers.get("X-Amz-Target") in ActionAuthenticatorMixin.PUBLIC_OPERATIONS:
            return
        split = urllib.parse.urlsplit(self.uri)
        path = self.raw_path + (f"?{split.query}" if split.query else "")
        request = iam_request_cls(
            account_id=self.current_account,
            method=self.method,
            path=path,
            data=self.data,
            body=self.raw_body,
            headers=self.headers,
            action=self._get_action(),
        )
        request.check_signature()
        if request._action == "sts:GetCallerIdentity":  # always allowed in AWS
            return
        docs = documents_of(request._access_key)
        service = request._action.split(":", 1)[0]
        for action, arn, context in requests_of(
            service, request._action, self.raw_body, path, request._region, self.current_account, resource
        ):
            if not allowed(docs, action, arn, context):
                denials.add(Denial(principal_of(request._access_key), action, arn))
                request._raise_access_denied()

    ActionAuthenticatorMixin._authenticate_and_authorize_action = authorize  # type: ignore[method-assign]
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
