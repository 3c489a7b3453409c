"""The DynamoDB stores' base: a table of one deployment (or the local stack's moto) through a client passed in,
and what its failures mean (ADR 0044, ADR 0101): `DynamoDBTable`, under the sessions' and the widget's backends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from assist.tables.base import Backend

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: DynamoDB failures that no retry fixes, and what to do about each ({endpoint}, {table} filled in)
NO_CREDENTIALS = (
    "no AWS credentials for DynamoDB: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
    'or run `eval "$(assist local env)"` for the local stack, or unset the AWS_* variables '
    "(or set SESSION_STORE=file) to use the embedded store in .assist/"
)
ADVICE = {
    "NoCredentialsError": NO_CREDENTIALS,
    "PartialCredentialsError": NO_CREDENTIALS,
    "NoRegionError": "no AWS region: set AWS_REGION, or unset the AWS_* variables to use the embedded store",
    "EndpointConnectionError": "nothing answers at {endpoint}: is the local stack running? Start it with "
    '`make run`, then `eval "$(assist local env)"`; or unset AWS_ENDPOINT_URL to use the embedded store',
    "ResourceNotFoundException": "no table {table} at {endpoint}: deploy the stack, set SESSIONS_TABLE and "
    "INTENT_HISTORY_TABLE to its tables, or start the local stack with `make run`",
    "UnrecognizedClientException": "AWS rejected the credentials: refresh AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
    "InvalidSignatureException": "AWS rejected the credentials' signature: check AWS_SECRET_ACCESS_KEY",
    "ExpiredTokenException": "the AWS session token has expired: refresh the credentials",
    "AccessDeniedException": "these AWS credentials may not use {table}: grant them access to the tables",
}


def advice(cause: BaseException, endpoint: str | None, table: str) -> tuple[str, str | None]:
    """The failure's code, and what to do about it (None: transient, retry)."""
    code = getattr(cause, "response", {}).get("Error", {}).get("Code") or type(cause).__name__
    hint = ADVICE.get(code)
    if code == "EndpointConnectionError" and not endpoint:
        hint = None  # the real AWS endpoint unreachable: the network, not our configuration
    return code, hint.format(endpoint=endpoint or "AWS", table=table) if hint else None


class DynamoDBTable(Backend):
    """A store kept in DynamoDB: the client (built by the entry point, `aws/clients.client`), the table a failure's
    advice names, and the endpoint when it is not AWS's own (an emulator's: its advice names the local stack)."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self.table = table
        self.endpoint = client.meta.endpoint_url if "amazonaws.com" not in client.meta.endpoint_url else None

    def failure(self, exc: Exception) -> tuple[str, str | None] | None:
        return advice(exc, self.endpoint, self.table) if isinstance(exc, ClientError | BotoCoreError) else None
