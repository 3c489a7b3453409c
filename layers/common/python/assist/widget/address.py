"""The address a request came from, as the platform recorded it, never as the client wrote it (ADR 0092).

- Behind API Gateway (mangum: the event is in the scope), the event's `requestContext.http.sourceIp` (HTTP API,
  function URL payload 2.0) or `requestContext.identity.sourceIp` (REST API).
- Behind a Lambda function URL through the Lambda Web Adapter (`WIDGET_ADDRESS_FROM=lambda-web-adapter`), the
  `x-amzn-request-context` header: the adapter writes the invocation's request context there, replacing any
  header of that name the client sent. A process not behind the adapter never reads it: there a client wrote it.
- Otherwise the socket's peer.

- Behind CloudFront in front of the function URL (`WIDGET_ADDRESS_FROM=cloudfront`, ADR 0117): the adapter's
  `sourceIp` is CloudFront's; when it is inside `WIDGET_TRUSTED_PROXIES` (CloudFront's origin-facing ranges), the
  address is the `CloudFront-Viewer-Address` header CloudFront sets (`ip:port`), validated. A request that reached
  the function URL from anywhere else counts on its own `sourceIp`, whatever headers it wrote.

`X-Forwarded-For` is read only in `socket` mode, when the address so found is one of `WIDGET_TRUSTED_PROXIES`
(CIDRs): then the address is its rightmost entry that is not a trusted proxy. It is never read in front of a
function URL, which keeps only the header's leftmost value, the one the client wrote.

The address a limit counts is grouped: an IPv4 address itself, an IPv6 address by its `WIDGET_IPV6_PREFIX`
(default /64, one subscriber's whole prefix: a client can pick any address in it).
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
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Addresses:
    """Where this deployment reads a request's address from (WIDGET_ADDRESS_FROM, WIDGET_TRUSTED_PROXIES)."""

    def __init__(self, settings: Widget) -> None:
        self.source = settings.address_from
        self.adapter = self.source != "socket"  # the function URL's sourceIp, through the adapter's header
        try:
            self.proxies = [ipaddress.ip_network(p.strip(), strict=False) for p in settings.trusted_proxies]
        except ValueError as exc:
            raise SettingsError(f"WIDGET_TRUSTED_PROXIES: {exc} (give CIDRs, e.g. 10.0.0.0/8)") from exc
        if self.source == "cloudfront" and not self.proxies:
            raise SettingsError(
                "WIDGET_ADDRESS_FROM=cloudfront needs WIDGET_TRUSTED_PROXIES: CloudFront's origin-facing ranges, "
                "the only sources whose CloudFront-Viewer-Address is believed"
            )
        if self.source == "lambda-web-adapter" and self.proxies:
            raise SettingsError(
                "WIDGET_TRUSTED_PROXIES with WIDGET_ADDRESS_FROM=lambda-web-adapter: a function URL passes on only "
                "the X-Forwarded-For value the client wrote; behind CloudFront set WIDGET_ADDRESS_FROM=cloudfront"
            )
        if not 32 <= settings.ipv6_prefix <= 128:
            raise SettingsError(f"WIDGET_IPV6_PREFIX is {settings.ipv6_prefix}: give 32 to 128 (a prefix length)")
        self.ipv6_prefix = settings.ipv6_prefix

    def of(self, scope: Mapping[str, Any]) -> str:
        """The address an ASGI request's limits count, grouped (`group`)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        seen = _address(self._platform(scope, headers))
        if seen is not None and self._trusted(seen):
            if self.source == "cloudfront":
                seen = viewer_address(headers.get("cloudfront-viewer-address", ""))
            elif self.source == "socket":
                seen = self._forwarded(headers.get("x-forwarded-for", ""), seen)
        if seen is None:
            log.warning("widget.address_unknown", source=self.source)
            return UNKNOWN
        return group(seen, self.ipv6_prefix)

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


def viewer_address(header: str) -> Address | None:
    """The address in CloudFront-Viewer-Address: `ip:port`, IPv6 unbracketed (`2001:db8::1:443`) or bracketed;
    None for anything else (a missing header: the origin request policy does not forward it)."""
    host, _, port = header.strip().rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        return None
    return _address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)


def group(address: Address, ipv6_prefix: int) -> str:
    """The counter's name for an address: IPv4 itself (an IPv4-mapped IPv6 address too), IPv6 its prefix."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network((address, ipv6_prefix), strict=False))
    return str(address)


def _address(text: str | None) -> Address | None:
    if not text:
        return None
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None
