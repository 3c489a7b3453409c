"""The web chat and the widget: static files shipped in the package, no build tool, nothing fetched from elsewhere.

`GET /` is the chat page (HTML, its script and style, and the answer renderer it shares with the widget:
`render.js`, `render.css`), which calls the same origin's API. `GET /widget.js` is the widget a docs site embeds
with one `<script>` tag: the same renderer, the widget's own script and both style sheets, joined into one file
inside one function scope (ADR 0087). Imported only by the answer app (`create_app`): the classify and retrieve
functions never load it.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import rcssmin
import rjsmin
from litestar import Response, get
from litestar.exceptions import NotFoundException

STATIC = resources.files("assist") / "web" / "static"
ASSETS = {
    "app.js": "text/javascript",
    "app.css": "text/css",
    "render.js": "text/javascript",
    "render.css": "text/css",
}
# The page runs only its own script and style and talks only to its own origin.
HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}
# Any site may load the widget's script (that is what it is for); browsers re-check it every few minutes.
WIDGET_HEADERS = {
    "Cache-Control": "public, max-age=300",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Resource-Policy": "cross-origin",
}


def chat_routes(stream_url: str = "") -> list[Any]:
    """`GET /` (the page), `GET /static/{name}` (its scripts and styles) and `GET /widget.js`, left out of the API
    schema. `stream_url`: where the widget streams answers, when not from the origin that served it (in AWS, the
    stream function's URL: API Gateway buffers responses)."""

    @get("/", include_in_schema=False, sync_to_thread=False, opt={"public": True})
    def page() -> Response[bytes]:
        return _file("index.html", "text/html")

    @get("/static/{name:str}", include_in_schema=False, sync_to_thread=False, opt={"public": True})
    def asset(name: str) -> Response[bytes]:
        if name not in ASSETS:
            raise NotFoundException(f"no static file {name!r}")
        return _file(name, ASSETS[name])

    @get("/widget.js", include_in_schema=False, sync_to_thread=False, opt={"public": True})
    def widget() -> Response[bytes]:
        return Response(widget_script(stream_url), media_type="text/javascript; charset=utf-8", headers=WIDGET_HEADERS)

    return [page, asset, widget]


def _file(name: str, media_type: str) -> Response[bytes]:
    return Response((STATIC / name).read_bytes(), media_type=f"{media_type}; charset=utf-8", headers=HEADERS)


@functools.lru_cache(maxsize=2)
def widget_script(stream_url: str = "") -> bytes:
    """widget.js as served: render.js and the widget's script in one function scope (no global of ours on the
    host page), with both style sheets as a string for its shadow root; minified by rjsmin and rcssmin (made for
    use at run time: whitespace and comments only, no renaming), once per process."""
    style = rcssmin.cssmin((STATIC / "render.css").read_text() + (STATIC / "widget.css").read_text())
    script = rjsmin.jsmin((STATIC / "render.js").read_text() + (STATIC / "widget.js").read_text())
    parts = [
        "/* assist widget: the engine's answers on any page (docs/widget.md) */",
        '(()=>{"use strict";',
        f"const STREAM_BASE={json.dumps(stream_url.rstrip('/'))};",
        f"const STYLE={json.dumps(style, ensure_ascii=False)};",
        script,
        "})();",
    ]
    return "\n".join(parts).encode()
