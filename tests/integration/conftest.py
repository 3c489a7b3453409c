"""What the integration tests share beyond tests/conftest.py: the answer app served over real HTTP for an
engine on some settings (`api`, `served`), and asking it (`ask`: the response; `answered`: the answer of a
200). A test module that needs other settings overrides `api_settings`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from tests.support.http import serve


def served(settings: Settings) -> AbstractContextManager[str]:
    """The answer app (uvicorn on loopback) with an engine on `settings`; entered, its base URL."""
    return serve(create_app(build_engine(settings, client("dynamodb", settings))))


@pytest.fixture
def api_settings(docs_index: Settings) -> Settings:
    return docs_index


@pytest.fixture
def api(api_settings: Settings):
    with served(api_settings) as base:
        yield base


def ask(base: str, headers: dict[str, str] | None = None, timeout: float = 60, **body: Any) -> httpx.Response:
    """POST /v1/ask with these body fields (session_id, message, query_type, …)."""
    return httpx.post(base + "/v1/ask", json=body, headers=headers, timeout=timeout)


def answered(base: str, headers: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    """The answer to a /v1/ask that must succeed."""
    r = ask(base, headers, **body)
    assert r.status_code == 200, r.text
    return r.json()
