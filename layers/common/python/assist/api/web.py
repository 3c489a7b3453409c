"""The web chat: one static page (HTML, CSS, JS shipped in the package) that calls the same origin's API.

No build step and nothing fetched from elsewhere, so it works offline. Imported only by the answer
app (`create_app`): the classify and retrieve functions never load it.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from litestar import Response, get
from litestar.exceptions import NotFoundException

STATIC = resources.files("assist") / "web" / "static"
ASSETS = {"app.js": "text/javascript", "app.css": "text/css"}
# The page runs only its own script and style and talks only to its own origin.
HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}


def chat_routes() -> list[Any]:
    """`GET /` (the page) and `GET /static/{name}` (its script and style), left out of the API schema."""

    @get("/", include_in_schema=False, sync_to_thread=False, opt={"public": True})
    def page() -> Response[bytes]:
        return _file("index.html", "text/html")

    @get("/static/{name:str}", include_in_schema=False, sync_to_thread=False, opt={"public": True})
    def asset(name: str) -> Response[bytes]:
        if name not in ASSETS:
            raise NotFoundException(f"no static file {name!r}")
        return _file(name, ASSETS[name])

    return [page, asset]


def _file(name: str, media_type: str) -> Response[bytes]:
    return Response((STATIC / name).read_bytes(), media_type=f"{media_type}; charset=utf-8", headers=HEADERS)
