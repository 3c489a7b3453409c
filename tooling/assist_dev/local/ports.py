"""A free loopback port, for the local stack's servers (apart from local/stack.py, which starts the
servers that use one: no import circle)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
