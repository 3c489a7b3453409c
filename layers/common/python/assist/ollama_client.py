"""Ollama clients and the errors that mean "this host cannot answer now", shared by every model caller.

The answer slots and the LLM classifier build their clients and catch failures the same way;
`ollama` and `httpx` are imported only when a client is first built (cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ollama


def build_client(
    host: str, timeout_s: float, connect_timeout_s: float, asynchronous: bool = False, api_key: str | None = None
) -> ollama.Client | ollama.AsyncClient:
    """The async client streams answers (a closed stream closes the connection to Ollama). `host` may be
    `https://…`; `api_key` (OLLAMA_API_KEY) goes as a bearer token to a proxy in front of Ollama (ADR 0066)."""
    # deferred, ADR 0071: httpx 0.11 s, ollama 0.3 s
    import httpx
    import ollama

    cls = ollama.AsyncClient if asynchronous else ollama.Client
    timeout = httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s))
    return cls(host=host, timeout=timeout, headers=bearer(api_key))


def bearer(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def call_errors() -> tuple[type[BaseException], ...]:
    """What a failed call raises: an HTTP error status, a refused or dropped connection, a timeout."""
    # deferred, ADR 0071: httpx 0.11 s, ollama 0.3 s
    import httpx
    import ollama

    return (ollama.ResponseError, ConnectionError, httpx.HTTPError, OSError)
