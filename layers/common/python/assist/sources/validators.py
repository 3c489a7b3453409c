"""What the last sync learnt about each fetched URL (ETag, Last-Modified, sitemap lastmod, the page's
hash and links), kept beside the chunk table (`<INDEX_TABLE>_fetched`, same database, local or S3) and
written under the same writer lease, so the next sync can ask "changed since?" instead of fetching."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa


def table_name(index_table: str) -> str:
    return f"{index_table}_fetched"


def read(db: Any, index_table: str) -> dict[str, dict[str, Any]]:
    name = table_name(index_table)
    if name not in db.table_names():
        return {}
    rows = db.open_table(name).to_arrow().to_pylist()
    return {r["url"]: json.loads(r["data"]) for r in rows}


def write(db: Any, index_table: str, validators: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]]) -> None:
    """Replace the table's rows with these (only when they differ: an unchanged sync writes nothing)."""
    if validators == before:
        return
    rows = [{"url": u, "data": json.dumps(v, sort_keys=True)} for u, v in sorted(validators.items())]
    schema = pa.schema([("url", pa.string()), ("data", pa.string())])
    db.create_table(table_name(index_table), data=rows, schema=schema, mode="overwrite")
