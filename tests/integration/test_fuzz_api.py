"""schemathesis against the served OpenAPI schema: no 5xx, and every 4xx says what is wrong (`detail`, or
`error.message` on the OpenAI-compatible routes).

Driven through hypothesis directly (schemathesis' pytest plugin does not run under pytest 9):
one property per operation of the served schema."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tests.integration.conftest import served

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(docs_index):
    with served(docs_index) as base:  # no Ollama: extractive answers, fast
        yield base, schemathesis.openapi.from_url(base + "/schema/openapi.json")


def fuzz(base: str, schema, examples: int) -> dict[str, int]:
    seen: dict[str, int] = {}
    operations = [r.ok() for r in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/ask", "/v1/ask/stream", "/healthz"}
    # valid and invalid input; an operation without parameters or body has no invalid input
    runs = [
        (op, m) for op in operations for m in GenerationMode if op.method.upper() == "POST" or m.value == "positive"
    ]
    for op, mode in runs:

        @given(case=op.as_strategy(mode))
        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def run(case) -> None:
            response = case.call(base_url=base, timeout=30)
            seen[str(response.status_code)] = seen.get(str(response.status_code), 0) + 1
            where = f"{case.method} {case.path} → {response.status_code}"
            assert response.status_code < 500, f"{where}: {response.text[:200]}"
            if 400 <= response.status_code < 500:
                body = response.json()  # the OpenAI-compatible routes say it in OpenAI's error shape
                said = body.get("detail") or (body.get("error") or {}).get("message")
                assert said, f"a 4xx must say what is wrong: {response.text[:300]}"

        run()
    return seen


def test_no_server_errors(api):
    base, schema = api
    seen = fuzz(base, schema, examples=40)
    assert sum(seen.values()) >= 100
    assert any(code.startswith("4") for code in seen), "negative cases must reach the validators"
    assert not [code for code in seen if code.startswith("5")]


@pytest.mark.slow
def test_no_server_errors_slow_tier(api):
    base, schema = api
    seen = fuzz(base, schema, examples=250)
    print("schemathesis status codes:", seen)
    assert sum(seen.values()) >= 1000
    assert any(code.startswith("4") for code in seen), "negative cases must reach the validators"
    assert not [code for code in seen if code.startswith("5")]
