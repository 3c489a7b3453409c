"""GET / serves the web chat from the package, over real HTTP; the classify and retrieve functions never load it."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
import pytest

from assist.api.app import create_app
from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.settings import Settings
from tests.support.http import serve

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base(docs_index: Settings):
    with serve(create_app(build_engine(docs_index, client("dynamodb", docs_index)))) as url:
        yield url


def test_the_page_and_everything_it_loads_come_from_the_same_origin(base):
    page = httpx.get(base + "/", timeout=10)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    loaded = re.findall(r'(?:src|href)="(?!data:)([^"#]+)"', page.text)
    assert sorted(loaded) == ["/static/app.css", "/static/app.js"]  # nothing from a CDN
    kinds = {"/static/app.js": "text/javascript", "/static/app.css": "text/css"}
    for path in loaded:
        r = httpx.get(base + path, timeout=10)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith(kinds[path])
        assert r.content
    script = httpx.get(base + "/static/app.js", timeout=10).text
    assert "/v1/ask/stream" in script
    assert "http://" not in script
    assert "https://" not in script


def test_only_the_pages_own_files_are_served(base):
    for path in ("/static/../web.py", "/static/index.html", "/static/nope.js"):
        r = httpx.get(base + path, timeout=10)
        assert r.status_code == 404, path
    paths = httpx.get(base + "/schema/openapi.json", timeout=10).json()["paths"]
    assert "/" not in paths
    assert "/v1/ask/stream" in paths


def test_the_classify_and_retrieve_apps_do_not_load_the_page():
    code = "import sys, assist.serverless.routes; print('assist.api.web' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
