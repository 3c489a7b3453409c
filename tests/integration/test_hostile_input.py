"""A hostile-input corpus on every route the local stack serves: never a 5xx, and the server still healthy.

The routes come from the apps themselves (litestar's route table), so a route added later is
covered without touching this file; only path parameters need the small table below. Bodies
start from each route's request schema (its OpenAPI document) and are then broken: nesting,
huge and multi-byte strings, control characters, wrong types, duplicate keys, invalid UTF-8,
oversize bodies and headers. The API app is served as `assist local up` serves it: /v1/ask runs
the ask state machine (moto's interpreter, the deployed ASL, our Lambda handlers), so a request
that gets past validation goes all the way through it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.routes import ASGIRoute, HTTPRoute

from assist.api.app import create_app
from assist.api.body_limits import MAX_JSON_DEPTH
from assist.serverless.routes import classify_app, export_app, retrieve_app, sync_app
from assist_dev.local.statemachine import ServerlessStack
from tests.support.http import serve

pytestmark = pytest.mark.integration
_names = itertools.count(1)
#: a valid value for each path parameter name the apps use (unknown names get "x")
PATH_VALUES = {"session_id": "hostile-corpus", "turn": "1", "path": "openapi.json", "id": "hostile-corpus"}
HOSTILE_PATH_VALUES = ["%FF%FE", "%00%0A", "é" * 300, "a" * 4000, "..%2F..%2Fetc", "-1", "9" * 40]
NEST = b"[" * 5000 + b"]" * 5000


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


# values put in place of each top-level field of a valid body
FIELD_VALUES: list[Any] = [
    "é" * 100_000,  # 200 KB of UTF-8 in one field
    "😀" * 9000,
    "\x00\x01\x1b[2J\x7f\u2028\u202e\ufeff" * 200,  # control, bidi and BOM characters
    10**30,
    -1.5e308,
    None,
    ["x"] * 500,
    nested(MAX_JSON_DEPTH - 2),  # deep, but within the limit
]


class Target:
    """One route of one served app: where to send, and a valid body to break (None: the route takes none)."""

    def __init__(self, base: str, path: str, methods: set[str], body: dict[str, Any] | None, app: str) -> None:
        self.base, self.path, self.methods, self.body, self.app = base, path, methods, body, app

    def url(self, **override: str) -> str:
        return self.base + re.sub(r"{(\w+)}", lambda m: override.get(m[1], PATH_VALUES.get(m[1], "x")), self.path)

    def __repr__(self) -> str:
        return f"{self.app}:{'|'.join(sorted(self.methods))} {self.path}"


def targets(app: Litestar, base: str, name: str) -> list[Target]:
    """Every route of the app: HTTP routes with their methods, mounted ASGI apps with GET and POST."""
    schema = app.openapi_schema.to_schema()
    out = []
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            methods = route.methods - {"OPTIONS", "HEAD"}
        elif isinstance(route, ASGIRoute):
            methods = {"GET", "POST"}
        else:
            continue
        operations = schema["paths"].get(route.path_format, {})
        bodies = [op["requestBody"] for m, op in operations.items() if m.upper() in methods and "requestBody" in op]
        body = example(schema, bodies[0]["content"]["application/json"]["schema"]) if bodies else None
        out.append(Target(base, route.path_format, methods, body, name))
    return out


def example(schema: dict[str, Any], node: dict[str, Any]) -> Any:
    """A minimal valid value of an OpenAPI schema: required properties only, simple values."""
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    for key in ("oneOf", "anyOf"):
        if key in node:
            return example(schema, next(n for n in node[key] if n.get("type") != "null"))
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return {k: example(schema, node["properties"][k]) for k in node.get("required", [])}
    return {"string": "hello", "integer": 1, "number": 1.0, "boolean": False, "array": []}.get(kind, {})


def body_corpus(t: Target) -> Iterator[tuple[str, bytes, dict[str, str]]]:
    """(case, body, headers) for a route that takes a body."""
    base = t.body if isinstance(t.body, dict) else {"session_id": "hostile-corpus", "message": "hello"}
    js = {"content-type": "application/json"}

    def enc(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")

    yield "unknown field nested 5000 deep", enc(base)[:-1] + b', "zz": ' + NEST + b"}", js
    yield "never-closed nesting", b"[" * 200_000, js
    yield "wide array", enc({**base, "zz": [[] for _ in range(60_000)]}), js
    yield "empty", b"", js
    for raw in (b"null", b"[]", b"1", b'"s"', b"{}", b"{", b"abc", b"\xef\xbb\xbf" + enc(base), b"NaN", b"1e99999"):
        yield f"bare {raw[:12]!r}", raw, js
    yield "invalid UTF-8", enc(base).replace(b'"hello"', b'"\xff\xfe\xc3("', 1), js
    yield "lone surrogate", enc(base).replace(b'"hello"', b'"\\ud800\\udfff\\ud800"', 1), js
    yield "escaped NUL", enc(base).replace(b'"hello"', b'"a\\u0000b"', 1), js
    dupes = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in [*base.items(), *base.items()])
    yield "duplicate keys", ("{" + dupes + "}").encode(), js
    yield "text/plain", enc(base), {"content-type": "text/plain"}
    yield "form", b"session_id=a&message=b", {"content-type": "application/x-www-form-urlencoded"}
    yield (
        "multipart",
        b"--zz\r\nContent-Disposition: form-data; name=a\r\n\r\nb\r\n--zz--",
        {"content-type": "multipart/form-data; boundary=zz"},
    )
    yield "utf-16", json.dumps(base).encode("utf-16"), {"content-type": "application/json; charset=utf-16"}
    for field in base:
        for i, value in enumerate(FIELD_VALUES):
            yield f"{field}=value{i}", enc({**base, field: value}), js


def header_corpus() -> Iterator[tuple[str, dict[str, Any]]]:
    yield "oversize header", {"x-junk": "a" * 70_000}
    yield "many headers", {f"x-h{i}": "v" * 200 for i in range(150)}
    yield "long user", {"x-assist-user": "u" * 5000}
    yield "non-ASCII user", {"x-assist-user": "évil\u202e".encode()}
    yield "control user", {"x-assist-user": b"a\x01b"}
    yield "bearer junk", {"authorization": "Bearer " + "." * 3000}


def said(r: httpx.Response) -> str | None:
    """What a 4xx says is wrong: `detail`, or the `error.message` of OpenAI's shape on its routes."""
    body = r.json()
    return body.get("detail") or (body.get("error") or {}).get("message")


def check(r: httpx.Response, what: str) -> None:
    assert r.status_code < 500, f"{what} → {r.status_code}: {r.text[:300]}"
    if r.status_code >= 400 and r.headers.get("content-type", "").startswith("application/json"):
        assert said(r), f"{what}: a 4xx must say what is wrong: {r.text[:300]}"
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        assert "event: error" not in r.text, f"{what}: the stream failed: {r.text[-300:]}"


@pytest.fixture(scope="module")
def served(docs_index, tmp_path_factory):
    """The five functions' apps, the API app as `assist local up` builds it, each on its own port."""
    settings = docs_index.with_(export={"dir": str(tmp_path_factory.mktemp("labels"))})
    stack = ServerlessStack(settings, settings.aws.endpoint_url, name=f"assist-ask-hostile-{next(_names)}").start()
    stack.warm()
    engine = stack.functions["answer"].engine.get()
    apps = {
        "api": create_app(engine, ask_via=stack.ask),
        "classify": classify_app(stack.functions["classify"].engine.get()),
        "retrieve": retrieve_app(stack.functions["retrieve"].engine.get()),
        "export": export_app(settings),
        "sync": sync_app(settings),
    }
    with contextlib.ExitStack() as running:
        bases = {name: running.enter_context(serve(app)) for name, app in apps.items()}
        yield settings, {name: targets(app, bases[name], name) for name, app in apps.items()}, bases
    stack.stop()


def test_every_route_survives_the_corpus_and_the_stack_stays_healthy(served):
    settings, by_app, bases = served
    limit = settings.api.max_body_bytes
    every = [t for ts in by_app.values() for t in ts]
    paths = {t.path for t in by_app["api"]}
    assert {"/v1/ask", "/v1/ask/stream", "/v1/sessions/{session_id}", "/healthz"} <= paths  # the enumeration works
    sent = 0
    with httpx.Client(timeout=120) as http:
        for t in every:
            for method in sorted(t.methods):
                for case, headers in header_corpus():
                    check(http.request(method, t.url(), headers=headers, json=t.body), f"{t} {method} {case}")
                    sent += 1
                check(http.request(method, t.url() + "?a=" + "%FF" * 500 + "&b=" + "[" * 2000), f"{t} query")
                sent += 1
                for value in HOSTILE_PATH_VALUES if "{" in t.path else ():
                    name = re.findall(r"{(\w+)}", t.path)
                    check(http.request(method, t.url(**dict.fromkeys(name, value))), f"{t} path={value[:20]}")
                    sent += 1
                if method in {"POST", "PUT", "PATCH"}:
                    for case, body, headers in body_corpus(t):
                        check(http.request(method, t.url(), content=body, headers=headers), f"{t} {case}")
                        sent += 1
                # two answers every route gives alike, whatever it does with a body
                deep = http.request(method, t.url(), content=b'{"a":' + NEST + b"}")
                assert (deep.status_code, said(deep)) == (400, "JSON nesting deeper than 32 levels"), t
                big = http.request(method, t.url(), content=b" " * (limit + 1))
                assert big.status_code == 413, t
                assert said(big) == f"request body is {limit + 1} bytes; the limit is {limit}"
                chunked = http.request(method, t.url(), content=iter([b" " * (limit // 2)] * 3))  # no content-length
                assert chunked.status_code == 413, t
                detail = said(chunked)
                assert re.fullmatch(rf"request body is (more than )?\d+ bytes; the limit is {limit}", detail), t
                sent += 4
            assert http.get(t.base + "/healthz").status_code == 200, f"unhealthy after {t}"
        for base in bases.values():  # a header far past what the HTTP server parses: refused there, and no harm done
            # the server refuses it after its first 16 kB and may close while the client is still sending the rest
            # (HTTP/1.1 has no other way to stop it): the client then reads no reply, which is a refusal too
            with contextlib.suppress(httpx.RemoteProtocolError, httpx.WriteError):
                check(http.get(base + "/healthz", headers={"x-junk": "a" * 8_000_000}), "8 MB header")
            assert http.get(base + "/healthz").status_code == 200
        # still answering, through the state machine
        ok = http.post(bases["api"] + "/v1/ask", json={"session_id": "hostile-after", "message": "What is routing?"})
    assert ok.status_code == 200, ok.text[:300]
    assert ok.json()["trace"]["execution"]["states"][0] == "Classify"
    print(f"hostile corpus: {sent} requests over {len(every)} routes")
    assert sent >= 300


def test_a_turn_sent_to_retrieve_meets_the_same_limits_as_an_ask(served):
    _, _, bases = served
    turn = httpx.post(bases["classify"] + "/v1/classify", json={"session_id": "hostile-turn", "message": "Routing?"})
    assert turn.status_code == 200, turn.text[:300]
    tampered = turn.json()
    tampered["request"]["message"] = "é" * 100_000
    r = httpx.post(bases["retrieve"] + "/v1/retrieve", json=tampered, timeout=60)
    assert (r.status_code, r.json()["detail"]) == (400, "message is 100000 characters; the limit is 8000")
