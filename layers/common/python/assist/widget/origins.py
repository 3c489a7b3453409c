"""Origins as a browser sends them (`Origin: https://docs.example.com`): scheme, host and port, nothing else.

A site key lists the origins that may use it; a request's `Origin` must equal one exactly (RFC 6454's
serialisation: lower-case scheme and host, the port only when it is not the scheme's default)."""

from __future__ import annotations

from urllib.parse import urlsplit

from assist.contracts import InvalidRequest

DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize(origin: str) -> str:
    """`origin` as a browser serialises it; a 400 saying what is wrong for anything that is not one."""
    text = origin.strip()
    parts = urlsplit(text)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise InvalidRequest(f"origin {origin!r} is not http(s)://host[:port]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise InvalidRequest(
            f"origin {origin!r} has more than scheme, host and port: give e.g. https://docs.example.com"
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidRequest(f"origin {origin!r} has a bad port") from exc
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    shown = "" if port in (None, DEFAULT_PORTS[parts.scheme]) else f":{port}"
    return f"{parts.scheme}://{host}{shown}"
