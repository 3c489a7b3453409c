"""Scopes (ADR 0121): which product and version of the documentation a passage belongs to, how a source says so,
and the filter a scoped search runs under.

A source in the sources file may carry `scope: {product: cli, version: "2.1"}` and patterns that read a value from
each page's address (`version_from: "/v(\\d+)/"`: the first group is the value). Every chunk row holds its scope in
two typed string columns, `product` and `version`; "" is every one, so a source without a scope (a shared glossary)
is in every scope. A scoped search is the same search with one LanceDB prefilter on those columns, for full-text and
vector queries alike (`ScopedTable`).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from assist.contracts import SCOPE_VALUE_PATTERN, InvalidRequest, Scope
from assist.index import lance

#: the scope's dimensions: each one a column of the chunk table and a field of `Scope`
KEYS = ("product", "version")
_VALUE = re.compile(SCOPE_VALUE_PATTERN)


class ScopeRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """A source's scope: fixed values, and patterns read from each page's address where a value is not fixed."""

    fixed: Scope = Scope()
    patterns: dict[str, str] = msgspec.field(default_factory=dict)  # key → regex whose first group is the value

    def of(self, address: str) -> Scope:
        """The scope of the page at `address` (its URL, or for a file without one its path in the folder)."""
        values = msgspec.structs.asdict(self.fixed)
        where = address if "://" in address or address.startswith("/") else "/" + address
        for key, pattern in self.patterns.items():
            if not values[key] and (m := re.search(pattern, where)):
                values[key] = (m.group(1) if m.groups() else m.group(0)).strip("/")
        return checked(values, f"the scope read from {address}")


def rule(scope: dict[str, str], patterns: dict[str, str], where: str) -> ScopeRule:
    """A sources file's `scope` mapping and `<key>_from` patterns as a rule; a ValueError names what is wrong."""
    for key, pattern in patterns.items():
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{where}: {key}_from {pattern!r} is not a regular expression: {exc}") from None
    return ScopeRule(checked(scope, where), {k: p for k, p in patterns.items() if p})


def checked(values: dict[str, Any], where: str) -> Scope:
    """A mapping as a `Scope`: known keys, values of letters, digits, `.`, `_` and `-` (numbers taken as text)."""
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise InvalidRequest(f"{where}: unknown scope key {unknown[0]!r}; use {' and '.join(KEYS)}")
    text = {k: str(v) for k, v in values.items() if v is not None}
    for k, v in text.items():
        if not _VALUE.match(v):
            raise InvalidRequest(f"{where}: scope {k}={v!r}: letters, digits, '.', '_' or '-', at most 64")
    return Scope(**text)


def parse(text: str) -> Scope:
    """`product=cli,version=2.1` (the CLI's `--scope`) as a `Scope`."""
    pairs = [p.split("=", 1) for p in text.split(",") if p.strip()]
    if any(len(p) != 2 for p in pairs):
        raise InvalidRequest(f"scope {text!r}: write it as product=NAME,version=V")
    return checked({k.strip(): v.strip() for k, v in pairs}, "--scope")


def narrowed(fixed: Scope | None, asked: Scope | None) -> Scope | None:
    """The scope a question searches when a site key fixes `fixed` and the visitor asks `asked`: the key's values,
    with the visitor's where the key leaves a dimension open. None when a value the visitor asks is not the key's."""
    if not fixed:
        return asked
    if asked and any((want := getattr(asked, k)) and getattr(fixed, k) not in ("", want) for k in KEYS):
        return None
    return Scope(**{k: getattr(fixed, k) or (getattr(asked, k) if asked else "") for k in KEYS})


def row_scope(row: dict[str, Any]) -> Scope:
    return Scope(**{k: row.get(k) or "" for k in KEYS})


def contains(asked: Scope | None, passage: Scope) -> bool:
    """Whether a passage of scope `passage` may answer a question asked in `asked` (None: every scope)."""
    if not asked:
        return True
    return all(not (want := getattr(asked, k)) or getattr(passage, k) in ("", want) for k in KEYS)


def where(asked: Scope) -> Any:
    """The prefilter of a scoped search: each dimension asked is its value or "" (a passage in every scope)."""
    col, lit = lance.lancedb().expr.col, lance.lancedb().expr.lit
    expr = None
    for key in KEYS:
        if want := getattr(asked, key):
            part = (col(key) == lit(want)) | (col(key) == lit(""))
            expr = part if expr is None else expr & part
    return expr


def key(scope: Scope) -> str:
    """How the manifest counts and a report name a scope: `cli/2.1`, `cli/*`, `*/2.1`, `*/*` (every scope)."""
    return f"{scope.product or '*'}/{scope.version or '*'}"


class ScopedTable:
    """The chunk table as a scoped question sees it: every query it starts carries the scope's prefilter (the
    strategies, lookups by document and by id), so no stage that reads passages can step outside it. Everything
    else (row ids, schema, counts) is the table's."""

    def __init__(self, table: Any, scope: Scope) -> None:
        self._table, self.scope, self._where = table, scope, where(scope)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._table.search(*args, **kwargs).where(self._where, prefilter=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def scoped(table: Any, scope: Scope | None) -> Any:
    """The table, filtered to `scope` when one is asked."""
    return ScopedTable(table, scope) if scope else table
