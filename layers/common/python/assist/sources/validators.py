"""What the last sync learnt about each fetched URL (ETag, Last-Modified, sitemap lastmod, the page's
hash and links), kept beside the chunk table (`<INDEX_TABLE>_fetched`, same database, local or S3) and
written under the same writer lease, so the next sync can ask "changed since?" instead of fetching."""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa


class Fetched(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a sync learnt about one URL it read: the HTTP validators the next sync asks "changed since?" with,
    the sitemap's lastmod, the page's content hash and the on-host links it found (to follow without fetching)."""

    etag: str = ""
    last_modified: str = msgspec.field(default="", name="last-modified")
    lastmod: str = ""
    hash: str = ""
    links: list[str] = msgspec.field(default_factory=list)

    def http(self) -> dict[str, str]:
        """The validators as the fetcher sends them (`Fetcher.get`)."""
        return {k: v for k, v in (("etag", self.etag), ("last-modified", self.last_modified)) if v}


#: url → what the last sync learnt about it
Validators = dict[str, Fetched]


def table_name(index_table: str) -> str:
    return f"{index_table}_fetched"


def read(db: Any, index_table: str) -> Validators:
    name = table_name(index_table)
    if name not in db.table_names():
        return {}
    rows = db.open_table(name).to_arrow().to_pylist()
    return {r["url"]: msgspec.json.decode(r["data"], type=Fetched) for r in rows}


def write(db: Any, index_table: str, validators: Validators, before: Validators) -> None:
    """Replace the table's rows with these (only when they differ: an unchanged sync writes nothing)."""
    if validators == before:
        return
    rows = [{"url": u, "data": msgspec.json.encode(v).decode()} for u, v in sorted(validators.items())]
    schema = pa.schema([("url", pa.string()), ("data", pa.string())])
    db.create_table(table_name(index_table), data=rows, schema=schema, mode="overwrite")
