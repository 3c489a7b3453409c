"""Document identifiers in one normal form, so `ADR-8`, `ADR.0008`, `adr 008` and `adr_8` are one key.

A key is `<prefix>-<number>[<letter>]`: the prefix lower-case (letters only), the number without
zero padding, an optional one-letter suffix kept (`ADR.22D`, a decision's approval record, is not
`ADR.22`). Pure string work: the index records each document's keys, a question's mentions are
looked up among them (a mention no document has is simply not found, so generating one too many
is cheap).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from assist.index.frontmatter import text_field

_ID = r"([A-Za-z]{2,12})(?:\s?[._\-]\s?|\s|_)?0*(\d{1,6})([A-Za-z])?"
_TOKEN = re.compile(rf"^{_ID}$")
# in free text: not glued to a word or a path before it, not a version (`1.2.3`) after it
_MENTION = re.compile(rf"(?<![\w.]){_ID}(?![\w]|\.\d)")
_LEADING = re.compile(rf"^\W*{_ID}(?![\w])")
# a title or heading cites its document's own id only as a label set apart: `ADR-0012: Use CIM`,
# `PCP.17 — Data is owned`; `HIV-1 infection of T cells` opens with a name, not with an id
_TITLED = re.compile(rf"^\W*{_ID}\s*(?:[:|—–]|\s-\s|\.\s|$)")
_NUMBERED_STEM = re.compile(r"^0*(\d{1,6})([A-Za-z])?(?:[-_. ]|$)")
# folder or type names → the identifier prefix their documents are usually cited with
_ALIASES = {
    "adrs": "adr",
    "decision": "adr",
    "decisions": "adr",
    "architecture-decisions": "adr",
    "decision-records": "adr",
    "principles": "principle",
    "principio": "principle",
    "principios": "principle",
}


def _key(prefix: str, number: str, suffix: str | None = None) -> str:
    return f"{prefix.lower()}-{int(number)}{(suffix or '').lower()}"


def normalize(token: str) -> str | None:
    """`ADR.0008` → `adr-8`; None for anything that is not one letters-then-digits identifier."""
    m = _TOKEN.match(token.strip())
    return _key(*m.groups()) if m else None


def mentions(text: str) -> list[str]:
    """Identifier mentions in free text, normalized, in order of appearance, without repeats. Any
    2–12 letters followed (directly or after one separator) by digits count: `ADR-008`, `adr 0008`,
    `PCP.22D`, `principio 17`, also `http2` → `http-2` — the caller keeps only keys a document has."""
    out: list[str] = []
    for m in _MENTION.finditer(text):
        key = _key(*m.groups())
        if key not in out:
            out.append(key)
        alias = _ALIASES.get(m.group(1).lower())
        if alias and (alt := _key(alias, m.group(2), m.group(3))) not in out:
            out.append(alt)
    return out


def prefixes(name: str) -> list[str]:
    """Identifier prefixes a folder or type name stands for: `decisions` → [`decision`, `adr`]."""
    word = re.sub(r"[^a-z]+", "-", name.lower()).strip("-")
    if not word or not word.replace("-", "").isalpha():
        return []
    singular = word[:-1] if word.endswith("s") and len(word) > 3 else word
    out = [singular.replace("-", "")] if len(singular) >= 2 else []
    if (alias := _ALIASES.get(word)) and alias not in out:
        out.append(alias)
    return out


def document_identifiers(doc_id: str, path: str, meta: dict[str, Any], first_heading: str) -> list[str]:
    """Every key a document can be cited by: its path and file stem, an id-like stem (`ADR-008-short-…`
    → `adr-8`; `0012-use-cim` with the folder or type prefix → `adr-12`), front-matter `id` and
    `nav_order` (`ADR.12`), and an identifier leading its title or first heading (`# ADR-0012: Use
    CIM`). Ids merely mentioned further into a title are not the document's own (an approval record
    titled 'Approval of ADR.12' is not ADR.12)."""
    parts = doc_id.split("/")
    stem = parts[-1]
    kinds: list[str] = []
    for name in (text_field(meta, "type"), text_field(meta, "category"), text_field(meta, "parent"), *parts[-2:-1]):
        kinds += [p for p in prefixes(name) if p not in kinds]
    out: list[str] = [doc_id.lower()]
    if stem.lower() not in out:
        out.append(stem.lower())
    leading = [_LEADING.match(stem)]
    if num := _NUMBERED_STEM.match(stem) or leading[0]:  # `0012-…`, `ADR-008-…`: the number under each kind
        out += [_key(k, *num.groups()[-2:]) for k in kinds]
    for name in ("id", "nav_order", "identifier"):
        value = text_field(meta, name)
        if not value:
            continue
        if num := _NUMBERED_STEM.match(value):
            out += [_key(k, *num.groups()) for k in kinds]
        else:
            leading.append(_TOKEN.match(value) or _LEADING.match(value))
    leading += [_TITLED.match(text_field(meta, "title")), _TITLED.match(first_heading)]
    out += [_key(*m.groups()) for m in leading if m]
    if path:  # a file named apart from its id (a single-file index)
        out.append(Path(path).stem.lower())
    return list(dict.fromkeys(k for k in out if k))
