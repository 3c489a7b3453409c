"""`assist keys create|list|revoke|deny-visitor`: the widget's site keys and denied visitors (docs/widget.md).

With ASSIST_URL set (the local stack's `assist local env` sets it; or the HTTP API's URL in AWS, with an admin
token in ASSIST_TOKEN) the command calls the engine's admin routes, so the key lands in the store that engine
reads, whatever this shell's environment says. Without it, it writes the store SESSION_STORE names (the
embedded file, or DynamoDB as the AWS variables say)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from assist.commands import HELP
from assist.commands.common import emit, settings
from assist.errors import AssistError
from assist.index.scope import parse as parse_scope
from assist.settings import VisitorLimits
from assist.widget import keys
from assist.widget.store.backends import open_widget_store

if TYPE_CHECKING:
    from assist.settings import Settings

LIMITS = {f.name: f.type for f in msgspec.structs.fields(VisitorLimits)}  # option → its type


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help=HELP["keys"])
    keys = p.add_subparsers(dest="keys_cmd", required=True)
    c = keys.add_parser("create", help="a new site key (pk_…) for the pages of the given origins")
    c.add_argument(
        "--origin",
        action="append",
        required=True,
        help="scheme://host[:port] of a site that may embed the widget (repeat for several)",
    )
    c.add_argument("--name", default="", help="a name for people (the site, the team)")
    c.add_argument("--scope", metavar="product=NAME,version=V", help="its visitors search only this part of the docs")
    for name, kind in LIMITS.items():
        c.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            help=f"this key's own {name} (default: the WIDGET_{name.upper()} setting)",
        )
    c.add_argument("--json", action="store_true", help="one JSON object on stdout")
    c.set_defaults(func=run_create)
    ls = keys.add_parser("list", help="every site key, with the limits in force")
    ls.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ls.set_defaults(func=run_list)
    r = keys.add_parser("revoke", help="revoke a key: its visitors are refused within WIDGET_KEY_CACHE_S")
    r.add_argument("key", help="the pk_… key")
    r.add_argument("--json", action="store_true", help="one JSON object on stdout")
    r.set_defaults(func=run_revoke)
    d = keys.add_parser("deny-visitor", help="refuse one visitor id: its tokens stop within WIDGET_KEY_CACHE_S")
    d.add_argument("visitor", help="the visitor id (v…: the start of its session ids, `visitor` in its logs)")
    d.add_argument("--json", action="store_true", help="one JSON object on stdout")
    d.set_defaults(func=run_deny_visitor)


def run_create(args: argparse.Namespace) -> int:
    limits = {name: value for name in LIMITS if (value := getattr(args, name)) is not None}
    body: dict[str, Any] = {"origins": args.origin, "name": args.name, "limits": limits}
    if args.scope:
        body["scope"] = msgspec.to_builtins(parse_scope(args.scope))
    s = settings()
    key = _call(s, "POST", "/v1/admin/keys", body, lambda store: _create(s, store, body))
    _show(key, args.json, "created")
    if not args.json:
        base = s.remote.url.rstrip("/") or "https://<the engine>"
        print(f'add to the site\'s pages: <script src="{base}/widget.js" data-key="{key["key"]}" defer></script>')
    return 0


def run_list(args: argparse.Namespace) -> int:
    s = settings()
    found = _call(s, "GET", "/v1/admin/keys", None, lambda store: _list(s, store))
    if args.json:
        emit(found)
        return 0
    for k in found["keys"]:
        state = "active" if k["active"] else f"revoked {k['revoked_at']}"
        print(f"{k['key']}  {state}  {' '.join(k['origins'])}  {k.get('name', '')}".rstrip())
    if not found["keys"]:
        print("no site keys yet: assist keys create --origin https://docs.example.com")
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    s = settings()
    key = _call(s, "DELETE", f"/v1/admin/keys/{args.key}", None, lambda store: _revoke(s, store, args.key))
    _show(key, args.json, "revoked")
    return 0


def run_deny_visitor(args: argparse.Namespace) -> int:
    s = settings()
    body = {"visitor": args.visitor}
    denied = _call(s, "POST", "/v1/admin/denied-visitors", body, lambda store: _deny(store, body))
    if args.json:
        emit(denied)
    else:
        print(f"denied visitor {denied['visitor']} (since {denied['denied_at']})")
    return 0


def _deny(store: Any, body: dict[str, Any]) -> dict[str, Any]:
    return keys.deny(store, msgspec.convert(body, keys.DeniedVisitor))


def _create(s: Settings, store: Any, body: dict[str, Any]) -> dict[str, Any]:
    return keys.view(keys.create(store, msgspec.convert(body, keys.NewKey)), s)


def _list(s: Settings, store: Any) -> dict[str, Any]:
    return {"keys": [keys.view(k, s) for k in store.all_keys()]}


def _revoke(s: Settings, store: Any, key: str) -> dict[str, Any]:
    return keys.view(keys.revoke(store, key), s)


def _call(s: Settings, method: str, path: str, body: dict[str, Any] | None, local: Any) -> dict[str, Any]:
    """Through the engine at ASSIST_URL, or on this environment's store."""
    if not s.remote.url:
        return dict(local(open_widget_store(s)))

    headers = {"authorization": f"Bearer {s.remote.token}"} if s.remote.token else {}
    url = s.remote.url.rstrip("/") + path
    try:
        response = httpx.request(method, url, json=body, headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        raise AssistError(f"cannot reach the engine at ASSIST_URL={s.remote.url}: {exc}") from exc
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        hint = " (set ASSIST_TOKEN to a token with the admin scope)" if response.status_code in (401, 403) else ""
        raise AssistError(f"{method} {url}: HTTP {response.status_code}: {str(detail)[:300]}{hint}")
    return dict(response.json())


def _show(key: dict[str, Any], as_json: bool, verb: str) -> None:
    if as_json:
        emit(key)
    else:
        print(f"{verb} {key['key']} for {' '.join(key['origins'])}")
