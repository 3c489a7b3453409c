"""The address a request came from, as the platform recorded it, never as the client wrote it (ADR 0092).

- Behind API Gateway (mangum: the event is in the scope), the event's `requestContext.http.sourceIp` (HTTP API,
  function URL payload 2.0) or `requestContext.identity.sourceIp` (REST API).
- Behind a Lambda function URL through the Lambda Web Adapter (`WIDGET_ADDRESS_FROM=lambda-web-adapter`), the
  `x-amzn-request-context` header: the adapter writes the invocation's request context there, replacing any
  header of that name the client sent. A process not behind the adapter never reads it: there a client wrote it.
- Otherwise the socket's peer.

`X-Forwarded-For` is read only when the address so found is one of `WIDGET_TRUSTED_PROXIES` (CIDRs): then the
address is its rightmost entry that is not a trusted proxy. A function URL keeps only the leftmost value of the
header, which the client wrote, so the template names no proxy.

The address a limit counts is grouped: an IPv4 address itself, an IPv6 address by its /64 (one subscriber's
whole prefix: a client can pick any address in it).
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING, Any

from assist.logs import get_logger
from assist.settings import SettingsError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from assist.settings import Widget

log = get_logger(__name__)
UNKNOWN = "unknown"  # no usable record of the address: such requests share one counter (and a log line says so)
IPV6_PREFIX = 64
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Addresses:
    """Where this deployment reads a request's address from (WIDGET_ADDRESS_FROM, WIDGET_TRUSTED_PROXIES)."""

    def __init__(self, settings: Widget) -> None:
        self.adapter = settings.address_from == "lambda-web-adapter"
        try:
            self.proxies = [ipaddress.ip_network(p.strip(), strict=False) for p in settings.trusted_proxies]
        except ValueError as exc:
            raise SettingsError(f"WIDGET_TRUSTED_PROXIES: {exc} (give CIDRs, e.g. 10.0.0.0/8)") from exc

    def of(self, scope: Mapping[str, Any]) -> str:
        """The address an ASGI request's limits count, grouped (`group`)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        seen = _address(self._platform(scope, headers))
        if seen is not None and self._trusted(seen):
            seen = self._forwarded(headers.get("x-forwarded-for", ""), seen)
        if seen is None:
            log.warning("widget.address_unknown", adapter=self.adapter)
            return UNKNOWN
        return group(seen)

    def _platform(self, scope: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
        event = scope.get("aws.event")  # mangum: API Gateway's (or a function URL's) event, not a header
        if isinstance(event, dict):
            return source_ip(event.get("requestContext"))
        if self.adapter:
            try:
                return source_ip(json.loads(headers.get("x-amzn-request-context", "")))
            except ValueError:
                return None
        client = scope.get("client")
        return client[0] if client else None

    def _trusted(self, address: Address) -> bool:
        return any(address in net for net in self.proxies)

    def _forwarded(self, header: str, proxy: Address) -> Address | None:
        """The rightmost X-Forwarded-For entry a trusted proxy did not write (each appends what it saw)."""
        for entry in reversed([e.strip() for e in header.split(",") if e.strip()]):
            address = _address(entry)
            if address is None:
                return None  # a trusted proxy writes addresses: anything else came from the client
            if not self._trusted(address):
                return address
        return proxy


def source_ip(context: Any) -> str | None:
    """`http.sourceIp` (HTTP API and function URL payload 2.0) or `identity.sourceIp` (REST API) of a request
    context; None when it has neither."""
    if not isinstance(context, dict):
        return None
    for part in ("http", "identity"):
        found = context.get(part)
        if isinstance(found, dict) and isinstance(found.get("sourceIp"), str):
            return found["sourceIp"]
    return None


def group(address: Address) -> str:
    """The counter's name for an address: IPv4 itself (an IPv4-mapped IPv6 address too), IPv6 its /64."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network((address, IPV6_PREFIX), strict=False))
    return str(address)


def _address(text: str | None) -> Address | None:
    if not text:
        return None
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None
