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
    # nothing from a CDN; the renderer is the one the widget carries (ADR 0087)
    assert sorted(loaded) == ["/static/app.css", "/static/app.js", "/static/render.css", "/static/render.js"]
    kinds = {".js": "text/javascript", ".css": "text/css"}
    for path in loaded:
        r = httpx.get(base + path, timeout=10)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith(kinds[path[path.rindex(".") :]])
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


def test_the_widget_is_one_small_script_that_loads_nothing_from_elsewhere(base):
    r = httpx.get(base + "/widget.js", timeout=10)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/javascript")
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"  # any site may load it
    script = r.text
    assert len(r.content) <= 30 * 1024, f"widget.js is {len(r.content)} bytes"
    # the renderer the chat page loads is inside it, in one function scope: no global of ours on the host page
    assert script.count("const AssistRender=") == 1
    assert script.startswith("/*")
    assert script.rstrip().endswith("})();")
    # it fetches only the engine's own routes: no URL but SVG's namespace, no script or style loaded
    assert re.findall(r"https?://[^\s\"'`]+", script) == ["http://www.w3.org/2000/svg"]
    for loader in ("import(", 'createElement("script")', "@import", "url(", "<link", "eval("):
        assert loader not in script, loader


def test_the_classify_and_retrieve_apps_do_not_load_the_page_or_the_widget():
    widget = ("assist.api.web", "assist.api.widget", "assist.widget")
    code = f"import sys, assist.serverless.routes; print([m for m in sys.modules if m.startswith({widget})])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
