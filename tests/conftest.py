"""Shared fixtures: the real parts, started once per test session.

- a moto server over HTTP (S3, DynamoDB) with the tables and bucket of template.yaml;
- the real all-MiniLM-L6-v2 ONNX embedder;
- a LanceDB index of the project's docs/;
- the Ollama wire-compatible test server.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest

from assist.aws.clients import client
from assist.logs import configure
from assist.settings import Settings
from assist_dev.doubles.ollama_server import OllamaTestServer
from assist_dev.local.resources import ensure_resources
from assist_dev.local.stack import LOCAL_CREDENTIALS, MotoServer
from tests.support.attacks import ROWS, table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODEL_DIR = Path(os.environ.get("EMBED_MODEL_DIR", ROOT / ".assist/models/all-MiniLM-L6-v2"))
_ids = itertools.count(1)


@pytest.fixture(scope="session")
def moto_url() -> str:
    server = MotoServer().start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def base_settings(moto_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    s = Settings().with_(
        aws={"endpoint_url": moto_url, **LOCAL_CREDENTIALS},
        embed={"model_dir": str(MODEL_DIR)},
        index={"uri": str(tmp_path_factory.mktemp("index"))},
        ollama={"host": "http://127.0.0.1:9"},  # discard port: refused at once, i.e. "no Ollama"
        logs={"format": "console"},
        api={"local_mode": True},  # the X-Assist-User dev header names the caller
        # the verdict's rules are tested at the configured threshold; calibration at index time (ADR 0096) has
        # its own tests (test_calibration.py), which switch it on
        uncertain={"calibrate": False},
    )
    configure(s)
    ensure_resources(s, client("dynamodb", s), client("s3", s))
    return s


@pytest.fixture(scope="session")
def embedder(base_settings: Settings):
    from assist.embed import build_embedder

    return build_embedder(base_settings)


@pytest.fixture(scope="session")
def docs_index(base_settings: Settings, embedder) -> Settings:
    """Settings whose index holds docs/. Kept between runs under .assist/: ingest is incremental,
    so only documents changed since the last run are embedded again."""
    from assist.build.run import ingest

    s = base_settings.with_(index={"uri": str(ROOT / ".assist/test-cache/docs-index")})
    ingest(DOCS, s, embedder, progress=False)
    return s


@pytest.fixture
def ollama() -> OllamaTestServer:
    with OllamaTestServer(models=["main-model:1b", "light-model:0.5b"]) as srv:
        yield srv


@pytest.fixture
def session_id(request: pytest.FixtureRequest) -> str:
    """Unique per test, so tests sharing the tables never see each other's turns."""
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", f"t{next(_ids)}-{request.node.name}")[:100]


@pytest.fixture(scope="session")
def adr_index(base_settings: Settings, embedder, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings whose index holds the made-up architecture corpus (tests/support/adr_corpus.py)."""
    from assist.build.run import ingest
    from tests.support import adr_corpus

    root = adr_corpus.write(tmp_path_factory.mktemp("adr-corpus"))
    s = base_settings.with_(index={"uri": str(tmp_path_factory.mktemp("adr-index"))})
    ingest(root, s, embedder, progress=False)
    return s


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if ROWS:
        terminalreporter.section("front-door attacks")
        for line in table():
            terminalreporter.write_line(line)
