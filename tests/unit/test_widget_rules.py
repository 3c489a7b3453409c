"""The widget's pure rules: origins as browsers send them, the source address behind proxies, a key's limits over
the defaults, visitor tokens that verify only as they were issued, and the page kept with a question."""

from __future__ import annotations

import json
import secrets
import time

import jwt
import pytest

from assist.api.widget import _page
from assist.contracts import InvalidRequest
from assist.settings import Settings, SettingsError, WeakKey, check_strength
from assist.widget.address import UNKNOWN, Addresses
from assist.widget.gate import KeyCache, effective_limits
from assist.widget.origins import normalize
from assist.widget.store.store import Limits, SiteKey
from assist.widget.tokens import (
    BadVisitorToken,
    KeyRing,
    is_visitor_token,
    issue,
    key_id,
    new_visitor_id,
    verify,
)
from tests.support.attacks import record

KEY = "k" * 64
RING = KeyRing(KEY)
TTL = 1800


@pytest.mark.parametrize(
    ("given", "origin"),
    [
        ("https://Docs.Example.com", "https://docs.example.com"),
        ("https://docs.example.com:443/", "https://docs.example.com"),
        ("http://127.0.0.1:18999", "http://127.0.0.1:18999"),
        ("http://localhost:80", "http://localhost"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_an_origin_is_kept_as_a_browser_sends_it(given, origin):
    assert normalize(given) == origin


@pytest.mark.parametrize(
    "bad",
    [
        "docs.example.com",
        "ftp://docs.example.com",
        "https://docs.example.com/guide",
        "https://a.b?x=1",
        "https://user@docs.example.com",
        "https://docs.example.com:99999",
        "https://",
    ],
)
def test_anything_but_scheme_host_and_port_is_refused_with_why(bad):
    with pytest.raises(InvalidRequest, match="origin"):
        normalize(bad)


def scope(peer: str = "10.0.0.5", event: dict | None = None, **headers: str) -> dict:
    """An ASGI scope as uvicorn (or, with `event`, mangum) builds it."""
    out = {"client": (peer, 5000), "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}
    return out | ({"aws.event": event} if event is not None else {})


def adapter_context(source_ip: str) -> str:
    """The x-amzn-request-context header as the Lambda Web Adapter writes it for a function URL's event."""
    return json.dumps(
        {"accountId": "anonymous", "http": {"method": "POST", "sourceIp": source_ip}, "stage": "$default"}
    )


def addresses(**widget: object) -> Addresses:
    return Addresses(Settings().with_(widget=widget).widget)


def test_the_address_is_the_platforms_record_never_what_the_client_wrote():
    forged = {"x_forwarded_for": "198.51.100.1"}
    # locally: the socket's peer; X-Forwarded-For and a client-written request context are ignored
    assert addresses().of(scope(**forged, x_amzn_request_context=adapter_context("198.51.100.2"))) == "10.0.0.5"
    # behind the adapter: the request context's http.sourceIp (the adapter replaces any header of that name)
    behind = addresses(address_from="lambda-web-adapter")
    assert behind.of(scope("127.0.0.1", **forged, x_amzn_request_context=adapter_context("203.0.113.7"))) == (
        "203.0.113.7"
    )
    assert behind.of(scope("127.0.0.1", x_amzn_request_context="null")) == UNKNOWN  # not what the adapter writes
    assert behind.of(scope("127.0.0.1", x_amzn_request_context=adapter_context("not-an-ip"))) == UNKNOWN
    # behind API Gateway (mangum): the event's sourceIp, HTTP API or REST API
    http_api = {"requestContext": {"http": {"sourceIp": "203.0.113.8"}}, "headers": forged}
    rest_api = {"requestContext": {"identity": {"sourceIp": "203.0.113.9"}}}
    assert addresses().of(scope("203.0.113.1", http_api, **forged)) == "203.0.113.8"
    assert addresses().of(scope("203.0.113.1", rest_api, **forged)) == "203.0.113.9"


def test_x_forwarded_for_is_read_only_from_a_named_proxy_and_ipv6_is_grouped_by_its_64():
    proxied = addresses(trusted_proxies=("10.0.0.0/8",))
    assert proxied.of(scope("10.0.0.5", x_forwarded_for="1.2.3.4, 203.0.113.7")) == "203.0.113.7"
    assert proxied.of(scope("10.0.0.5", x_forwarded_for="203.0.113.7, 10.0.0.9")) == "203.0.113.7"
    assert proxied.of(scope("10.0.0.5")) == "10.0.0.5"  # no header: the proxy's own request
    assert proxied.of(scope("198.51.100.4", x_forwarded_for="203.0.113.7")) == "198.51.100.4"  # not the proxy
    assert proxied.of(scope("10.0.0.5", x_forwarded_for="203.0.113.7, junk")) == UNKNOWN
    v6 = addresses()
    assert v6.of(scope("2001:db8:1:2:aaaa::1")) == v6.of(scope("2001:db8:1:2:bbbb::9")) == "2001:db8:1:2::/64"
    assert v6.of(scope("2001:db8:1:3::1")) != v6.of(scope("2001:db8:1:2::1"))
    assert v6.of(scope("::ffff:192.0.2.1")) == "192.0.2.1"
    wider = addresses(ipv6_prefix=56)  # the grouping is a setting (docs/widget.md): a /56 counts as one
    assert wider.of(scope("2001:db8:1:2::1")) == wider.of(scope("2001:db8:1:ff::1")) == "2001:db8:1::/56"
    with pytest.raises(SettingsError, match="WIDGET_IPV6_PREFIX"):
        addresses(ipv6_prefix=200)
    one_56 = [f"2001:db8:1:{i:x}::1" for i in range(100)]  # 100 /64s of one subscriber's /56
    assert len({v6.of(scope(a)) for a in one_56}) == 100
    assert len({wider.of(scope(a)) for a in one_56}) == 1
    record(
        "100 addresses from 100 /64s of one /56 (one subscriber's delegation)",
        "WIDGET_IPV6_PREFIX: 64 by default (docs/widget.md, the trade-off), 56 where one /56 abuses",
        "100 counters at /64 (each its own allowance); 1 counter at /56",
    )
    with pytest.raises(SettingsError, match="WIDGET_TRUSTED_PROXIES"):
        addresses(trusted_proxies=("10.0.0.0/33",))
    assert Settings.from_env({"WIDGET_TRUSTED_PROXIES": "10.0.0.0/8|2001:db8::/32"}).widget.trusted_proxies == (
        "10.0.0.0/8",
        "2001:db8::/32",
    )


def test_a_key_keeps_its_own_limits_and_follows_the_defaults_for_the_rest():
    s = Settings().with_(widget={"visitor_questions": 20, "daily_model_calls": 2000})
    key = SiteKey(key="pk_x", origins=[], created_at="", limits=Limits(visitor_questions=5))
    limits = effective_limits(key, s)
    assert (limits.visitor_questions, limits.daily_model_calls) == (5, 2000)
    assert effective_limits(key, s.with_(widget={"daily_model_calls": 10})).daily_model_calls == 10


def test_a_visitor_token_verifies_only_as_issued():
    visitor = new_visitor_id()
    assert len(visitor) == 25
    now = time.time()
    token, expires = issue(RING, visitor, "pk_x", "https://docs.example.com", 60, now)
    assert is_visitor_token(token)
    assert jwt.get_unverified_header(token)["kid"] == key_id(KEY) != key_id("another key" * 4)
    v = verify(RING, token, TTL, now)
    assert (v.id, v.key, v.origin, v.expires_at) == (visitor, "pk_x", "https://docs.example.com", expires)
    assert v.owns(f"{visitor}.anything")
    assert not v.owns(f"{visitor}x.anything")
    assert not v.owns("someone-else.anything")
    with pytest.raises(BadVisitorToken, match="does not hold"):  # another engine's key: its kid is unknown here
        verify(KeyRing("another key" * 4), token, TTL, now)
    wrong_key = jwt.encode(  # our kid, someone else's key
        jwt.decode(token, KEY, algorithms=["HS256"], issuer="assist-widget"),
        "another key" * 4,
        algorithm="HS256",
        headers={"typ": "assist-visitor+jwt", "kid": key_id(KEY)},
    )
    with pytest.raises(BadVisitorToken, match="invalid"):
        verify(RING, wrong_key, TTL, now)
    expired, _ = issue(RING, visitor, "pk_x", "https://docs.example.com", 60, now - 3600)
    with pytest.raises(BadVisitorToken, match="expired"):
        verify(RING, expired, TTL, now)
    long_lived, _ = issue(RING, visitor, "pk_x", "https://docs.example.com", TTL * 10, now)
    with pytest.raises(BadVisitorToken, match="longer life"):
        verify(RING, long_lived, TTL, now)
    # a token without the visitor header is not one; one that says it is but is signed otherwise does not verify
    user = jwt.encode({"sub": "alice", "exp": int(now) + 60}, KEY, algorithm="HS256")
    assert not is_visitor_token(user)
    assert not is_visitor_token("not a token")
    forged = jwt.encode(
        {"sub": visitor, "exp": int(now) + 60},
        KEY,
        algorithm="HS384",
        headers={"typ": "assist-visitor+jwt", "kid": key_id(KEY)},
    )
    with pytest.raises(BadVisitorToken):
        verify(RING, forged, TTL, now)


def test_the_previous_key_verifies_what_it_signed_up_to_one_token_life_after_the_rotation():
    old, new, rotated = "o" * 48, "n" * 48, 1_000_000.0
    before, _ = issue(KeyRing(old), "v" + "0" * 24, "pk_x", "https://a.example", TTL, rotated - 60)
    ring = KeyRing(new, old, rotated)
    assert verify(ring, before, TTL, rotated + TTL - 61).id == "v" + "0" * 24  # within its life
    with pytest.raises(BadVisitorToken, match="expired"):
        verify(ring, before, TTL, rotated + TTL)  # one token life after the rotation: gone
    # a warm process that has not read the rotated secret yet still signs with the old key: its tokens pass
    late, _ = issue(KeyRing(old), "v" + "1" * 24, "pk_x", "https://a.example", TTL, rotated + 290)
    assert verify(ring, late, TTL, rotated + 300).id == "v" + "1" * 24
    after, _ = issue(KeyRing(old), "v" + "1" * 24, "pk_x", "https://a.example", TTL, rotated + TTL + 5)
    with pytest.raises(BadVisitorToken, match="after its rotation"):  # a token life later, the old key signs nothing
        verify(ring, after, TTL, rotated + TTL + 10)
    fresh, _ = issue(ring, "v" + "2" * 24, "pk_x", "https://a.example", TTL, rotated + 5)
    assert jwt.get_unverified_header(fresh)["kid"] == key_id(new)  # the new key signs
    assert verify(ring, fresh, TTL, rotated + 10).id == "v" + "2" * 24
    with pytest.raises(BadVisitorToken, match="does not hold"):  # once the previous key is dropped, nothing of it
        verify(KeyRing(new), before, TTL, rotated + 10)


def test_a_signing_key_shorter_than_32_bytes_or_of_few_distinct_bytes_stops_start_up_naming_its_variable():
    with pytest.raises(WeakKey, match="the secret x is 5 bytes"):
        check_strength("abcde", "the secret x")
    random = secrets.token_urlsafe(32)
    assert check_strength(random, "x") == random
    for name in ("WIDGET_TOKEN_KEY", "WIDGET_TOKEN_KEY_PREVIOUS"):
        with pytest.raises(SettingsError, match=f"{name} is 31 bytes: .* at least 32"):
            Settings.from_env({name: "a" * 31})
        for weak, distinct in (("a" * 32, 1), ("password" * 8, 7), ("0123456789abcde" * 3, 15)):
            with pytest.raises(WeakKey, match=f"^{name} has {distinct} distinct bytes: .* at least 16"):
                Settings.from_env({name: weak})
    wide = "".join(chr(0xE0 + i) for i in range(16))  # 16 characters, 32 bytes (17 distinct): bytes are counted
    assert Settings.from_env({"WIDGET_TOKEN_KEY": wide}).widget.token_key == wide
    record(
        'a signing key of few distinct bytes (`"a" * 32`, a word repeated) in WIDGET_TOKEN_KEY, '
        "WIDGET_TOKEN_KEY_PREVIOUS or the secret",
        "32 bytes at least, 16 of them distinct",
        "start-up stops (or every token is refused) naming the variable or the secret",
    )


def test_the_page_kept_is_on_the_visitors_site_and_only_its_path():
    site = "https://docs.example.com"
    assert _page(f"{site}/guide/a.html?email=x@y.z#top", site) == f"{site}/guide/a.html"
    assert _page(f"{site}", site) == f"{site}/"
    assert _page("https://evil.example/guide", site) is None
    assert _page(f"{site}/" + "a" * 3000, site) is None
    assert _page(None, site) is None


class CountingStore:
    """The widget store's key listing, counted."""

    def __init__(self, keys: list[SiteKey]) -> None:
        self.keys, self.reads = keys, 0

    def all_keys(self) -> list[SiteKey]:
        self.reads += 1
        return list(self.keys)


def test_made_up_keys_read_no_store_per_request_and_a_new_key_is_seen_within_a_second():
    now = [0.0]
    known = SiteKey(key="pk_known", origins=[], created_at="")
    store = CountingStore([known])
    cache = KeyCache(lambda: store, ttl_s=30.0, clock=lambda: now[0])
    for i in range(1000):  # 1,000 made-up keys over 10 s
        assert cache.get(f"pk_made_up_{i}") is None
        now[0] += 0.01
    assert store.reads <= 11  # the whole set once, then at most once a second for keys not in it
    assert cache.get("pk_known") is known
    store.keys.append(SiteKey(key="pk_new", origins=[], created_at=""))
    now[0] += KeyCache.MISS_REREAD_S
    assert cache.get("pk_new") is not None


def test_behind_cloudfront_the_viewer_is_cloudfronts_header_and_only_from_cloudfront():
    cdn = addresses(address_from="cloudfront", trusted_proxies=("130.176.0.0/16",))
    edge = adapter_context("130.176.9.20")
    forged = {"x_forwarded_for": "198.51.100.1"}
    assert cdn.of(
        scope("127.0.0.1", **forged, x_amzn_request_context=edge, cloudfront_viewer_address="203.0.113.7:46532")
    ) == ("203.0.113.7")
    v6 = cdn.of(scope("127.0.0.1", x_amzn_request_context=edge, cloudfront_viewer_address="2001:db8:1:2::5:443"))
    assert v6 == "2001:db8:1:2::/64"
    assert cdn.of(scope("127.0.0.1", x_amzn_request_context=edge, cloudfront_viewer_address="[2001:db8::9]:443")) == (
        "2001:db8::/64"
    )
    # a header that is not `ip:port`, or none (the origin request policy does not forward it): unknown
    for junk in ("203.0.113.7", "203.0.113.7:99999", "evil:80", "", "203.0.113.7:80, 1.2.3.4:80"):
        assert cdn.of(scope("127.0.0.1", x_amzn_request_context=edge, cloudfront_viewer_address=junk)) == UNKNOWN
    # straight to the function URL, not from CloudFront: the caller's own sourceIp, whatever it wrote
    direct = adapter_context("198.51.100.20")
    assert cdn.of(
        scope("127.0.0.1", **forged, x_amzn_request_context=direct, cloudfront_viewer_address="203.0.113.50:1")
    ) == ("198.51.100.20")
    with pytest.raises(SettingsError, match="needs WIDGET_TRUSTED_PROXIES"):
        addresses(address_from="cloudfront")
    with pytest.raises(SettingsError, match="WIDGET_ADDRESS_FROM=cloudfront"):  # X-Forwarded-For: never read there
        addresses(address_from="lambda-web-adapter", trusted_proxies=("130.176.0.0/16",))
