"""`StartSyncExecution` for the rehearsal: moto lacks it, so Step Functions' part is played here.

The caller's key and policies are checked as IAM would (`states:StartSyncExecution` on the state
machine); the execution then runs in moto (StartExecution, polled) and the reply has
StartSyncExecution's shape, so the Ask function's real client code reads it unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from assist_dev.rehearsal import iam

WAIT_S = 60.0  # far past the state machine's own TimeoutSeconds


class SyncExecutions:
    def __init__(self, denials: iam.Denials, sfn: Any) -> None:
        self._denials, self._sfn = denials, sfn  # sfn: an operator's client (Step Functions runs as itself)

    def __call__(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes, dict[str, str]]:
        request = json.loads(body or b"{}")
        arn = request.get("stateMachineArn", "")
        try:
            principal, documents = iam.caller_documents(headers)
        except PermissionError as exc:
            return _error(400, "UnrecognizedClientException", str(exc))
        if not iam.check(self._denials, principal, documents, "states:StartSyncExecution", arn):
            return _error(400, "AccessDeniedException", f"{principal} may not states:StartSyncExecution on {arn}")
        name = request.get("name") or uuid.uuid4().hex
        started = self._sfn.start_execution(stateMachineArn=arn, name=name, input=request.get("input", "{}"))
        execution = started["executionArn"]
        deadline, pause = time.monotonic() + WAIT_S, 0.005
        while (desc := self._sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
            if time.monotonic() > deadline:
                desc = {**desc, "status": "TIMED_OUT", "error": "States.Timeout", "cause": "rehearsal wait"}
                break
            time.sleep(pause)
            pause = min(pause * 1.5, 0.05)
        reply = {
            "executionArn": execution,
            "stateMachineArn": arn,
            "name": name,
            "startDate": desc["startDate"].timestamp(),
            "stopDate": time.time(),
            "status": desc["status"],
            **{k: desc[k] for k in ("output", "error", "cause") if desc.get(k) is not None},
        }
        return 200, json.dumps(reply).encode(), {"Content-Type": "application/x-amz-json-1.0"}


def _error(status: int, code: str, message: str) -> tuple[int, bytes, dict[str, str]]:
    body = json.dumps({"__type": code, "message": message}).encode()
    return status, body, {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": code}
