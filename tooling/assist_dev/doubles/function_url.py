"""A Lambda function URL in front of an HTTP app through the Lambda Web Adapter, as AWS delivers a request.

Two steps, each as the real part takes it (ADR 0092):
1. the function URL turns the client's request into an invocation event (payload format 2.0): the caller's
   address, as the platform saw it, in `requestContext.http.sourceIp`; `X-Forwarded-For` passed on with only its
   leftmost value, the one the client wrote (the caller's address when the client wrote none);
2. the Lambda Web Adapter turns the event back into an HTTP request to the app, with the request context as JSON
   in `x-amzn-request-context` and the invocation's context in `x-amzn-lambda-context`, each replacing a header of
   that name the client sent (awslabs/aws-lambda-web-adapter, `fetch_response`).

`FunctionUrl(app_url).request(...)` does both for one request, so a test (or the deploy rehearsal) calls the app
exactly as the stream function's URL would.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

ACCOUNT = "123456789012"


def event(
    method: str, path: str, source_ip: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> dict[str, Any]:
    """The function URL's invocation event for a client's request from `source_ip`."""
    path, _, query = path.partition("?")
    sent = {k.lower(): v for k, v in (headers or {}).items()}
    forwarded = [e.strip() for e in sent.get("x-forwarded-for", "").split(",") if e.strip()]
    sent["x-forwarded-for"] = forwarded[0] if forwarded else source_ip  # the leftmost value only: the client's
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": sent,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "rehearsalurl",
            "domainName": "rehearsalurl.lambda-url.us-east-1.on.aws",
            "domainPrefix": "rehearsalurl",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": sent.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": int(time.time() * 1000),
        },
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def adapted(invocation: dict[str, Any], function_arn: str = "") -> tuple[str, str, dict[str, str], bytes]:
    """The Lambda Web Adapter's request to the app for an invocation event: method, path and query, headers,
    body."""
    context = invocation["requestContext"]
    headers = dict(invocation["headers"])
    headers["x-amzn-request-context"] = json.dumps(context)  # replaces whatever the client sent
    headers["x-amzn-lambda-context"] = json.dumps(
        {"request_id": context["requestId"], "invoked_function_arn": function_arn, "deadline": 0}
    )
    query = invocation.get("rawQueryString") or ""
    target = invocation["rawPath"] + (f"?{query}" if query else "")
    body = invocation.get("body") or ""
    raw = base64.b64decode(body) if invocation.get("isBase64Encoded") else body.encode()
    return context["http"]["method"], target, headers, raw


class FunctionUrl:
    """An app (its base URL) reached through a function URL and the adapter."""

    def __init__(self, app_url: str, timeout_s: float = 60) -> None:
        self.app_url = app_url.rstrip("/")
        self.timeout_s = timeout_s

    def request(
        self,
        method: str,
        path: str,
        source_ip: str,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
    ) -> httpx.Response:
        """One client request from `source_ip`, read whole."""
        with self.stream(method, path, source_ip, headers, json_body) as response:
            response.read()
            return response

    @contextmanager
    def stream(
        self,
        method: str,
        path: str,
        source_ip: str,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
    ) -> Iterator[httpx.Response]:
        """One client request from `source_ip`, its response streamed (the function URL's RESPONSE_STREAM)."""
        body = b"" if json_body is None else json.dumps(json_body).encode()
        sent = {**(headers or {}), **({"content-type": "application/json"} if json_body is not None else {})}
        method, target, app_headers, raw = adapted(event(method, path, source_ip, sent, body))
        with httpx.stream(
            method, self.app_url + target, headers=app_headers, content=raw, timeout=self.timeout_s
        ) as response:
            yield response
