"""LanceDB and Arrow for the index's own modules, imported by the first index operation of a process and never at
import (ADR 0104): a function that never opens the index (classify, export) pays nothing for them. The filters on
`doc_id` are built here, as LanceDB expressions (LanceDB quotes the values, not us)."""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any


@cache
def lancedb() -> ModuleType:
    """lancedb, with its filter expressions (`lancedb.expr`) loaded."""
    # deferred, ADR 0104: 1.4 s on the retrieve function's first call (lancedb and its namespace client's models)
    import lancedb.expr

    return lancedb


@cache
def arrow() -> ModuleType:
    """pyarrow, for the schemas of the tables the index writes."""
    # deferred, ADR 0104: pyarrow 0.08 s, paid only by a process that writes a table
    import pyarrow

    return pyarrow


def doc_ids_in(doc_ids: list[str]) -> Any:
    """`doc_id IN (…)`."""
    return lancedb().expr.col("doc_id").isin(doc_ids)


def doc_id_is(doc_id: str) -> Any:
    """`doc_id = …`."""
    expr = lancedb().expr
    return expr.col("doc_id") == expr.lit(doc_id)
