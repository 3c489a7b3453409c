"""The widget's pure rules: origins as browsers send them, the source address behind proxies, a key's limits over
the defaults, visitor tokens that verify only as they were issued, and the page kept with a question."""

from __future__ import annotations

import time

import jwt
import pytest

from assist.api.widget import _page
from assist.contracts import InvalidRequest
from assist.settings import Settings
from assist.widget.gate import Effective, client_ip
from assist.widget.origins import normalize
from assist.widget.store.store import Limits, SiteKey
from assist.widget.tokens import BadVisitorToken, is_visitor_token, issue, new_visitor_id, verify

KEY = "k" * 64


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


def test_the_source_address_is_the_one_the_trusted_proxy_wrote():
    assert client_ip("10.0.0.5", "1.2.3.4, 203.0.113.7", hops=0) == "10.0.0.5"  # no proxy: the socket
    assert client_ip("10.0.0.5", "1.2.3.4, 203.0.113.7", hops=1) == "203.0.113.7"  # what a client wrote is ignored
    assert client_ip("10.0.0.5", "203.0.113.7, 10.0.0.9", hops=2) == "203.0.113.7"
    assert client_ip("10.0.0.5", None, hops=1) == "10.0.0.5"  # no header: not behind the proxy after all


def test_a_key_keeps_its_own_limits_and_follows_the_defaults_for_the_rest():
    s = Settings().with_(widget={"visitor_questions": 20, "daily_model_calls": 2000})
    key = SiteKey(key="pk_x", origins=[], created_at="", limits=Limits(visitor_questions=5))
    limits = Effective.of(key, s)
    assert (limits.visitor_questions, limits.daily_model_calls) == (5, 2000)
    assert Effective.of(key, s.with_(widget={"daily_model_calls": 10})).daily_model_calls == 10


def test_a_visitor_token_verifies_only_as_issued():
    visitor = new_visitor_id()
    assert len(visitor) == 25
    token, expires = issue(KEY, visitor, "pk_x", "https://docs.example.com", 60, time.time())
    assert is_visitor_token(token)
    v = verify(KEY, token)
    assert (v.id, v.key, v.origin, v.expires_at) == (visitor, "pk_x", "https://docs.example.com", expires)
    assert v.owns(f"{visitor}.anything")
    assert not v.owns(f"{visitor}x.anything")
    assert not v.owns("someone-else.anything")
    with pytest.raises(BadVisitorToken, match="invalid"):
        verify("another key" * 4, token)
    expired, _ = issue(KEY, visitor, "pk_x", "https://docs.example.com", 60, time.time() - 3600)
    with pytest.raises(BadVisitorToken, match="expired"):
        verify(KEY, expired)
    # a token without the visitor header is not one; one that says it is but is signed otherwise does not verify
    user = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, KEY, algorithm="HS256")
    assert not is_visitor_token(user)
    assert not is_visitor_token("not a token")
    forged = jwt.encode(
        {"sub": visitor, "exp": int(time.time()) + 60}, KEY, algorithm="HS384", headers={"typ": "assist-visitor+jwt"}
    )
    with pytest.raises(BadVisitorToken):
        verify(KEY, forged)


def test_the_page_kept_is_on_the_visitors_site_and_only_its_path():
    site = "https://docs.example.com"
    assert _page(f"{site}/guide/a.html?email=x@y.z#top", site) == f"{site}/guide/a.html"
    assert _page(f"{site}", site) == f"{site}/"
    assert _page("https://evil.example/guide", site) is None
    assert _page(f"{site}/" + "a" * 3000, site) is None
    assert _page(None, site) is None
