"""Where moto's DynamoDB parts from DynamoDB in ways the local stack cannot live with, and the fixes.

- **Concurrency.** moto's TransactWriteItems copies the tables it touches without a lock, so a
  concurrent write fails with "dictionary changed size during iteration" (an HTTP 500, seen in
  `assist bench load`): the emulator serves one DynamoDB request at a time.
- **Cost that grows with the table.** moto's Query sorts and filters every item of the table,
  and its TransactWriteItems deep-copies every table it touches (its rollback copy). DynamoDB
  does neither: a Query reads one partition, a transaction costs its items. In moto both grow
  with the table — from 0 to 1,200 sessions a Query went from 4.7 to 13.9 ms and a transaction
  from 4.8 to 11.4 ms (from 9 to 91 ms at 1,000 items with the deep copy) — so a benchmark would
  measure its own length (ADR 0036). Here a base-table Query reads its partition, and the
  rollback copy holds the partitions the transaction touches (items an Update changes in place
  are copied; moto's own rollback then restores exactly the state before).

- **Work repeated on every request.** To route a request, moto's server lists its own package
  directory (57 `stat` calls for a DynamoDB request) and matches the host against the services'
  URL patterns, then lists the handler class's methods with `inspect.getmembers`. None of these
  answers changes while the process runs, so each is computed once: a Query 5.6 → 4.3 ms, a
  transaction 7.9 → 6.6 ms, client side, in a one-off script (ADR 0037).

The cost fixes rely on the first: they run one DynamoDB call at a time.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import threading
from typing import Any

_installed = threading.Lock()


def patch_dynamodb() -> None:
    """Install the fixes (once per process)."""
    # deferred, ADR 0071: moto 0.5 s
    from moto.dynamodb.responses import DynamoHandler

    with _installed:
        if getattr(DynamoHandler.call_action, "patched", False):
            return
        _one_call_at_a_time(DynamoHandler)
        _partition_queries()
        _transaction_snapshots_of_touched_partitions()
        _routing_computed_once()


def _routing_computed_once() -> None:
    # deferred, ADR 0071: moto 0.5 s
    from moto import backends
    from moto.core import responses
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    responses.method_names_from_class = functools.cache(responses.method_names_from_class)
    DomainDispatcherApplication.get_backend_for_host = functools.lru_cache(maxsize=256)(  # type: ignore[method-assign]
        DomainDispatcherApplication.get_backend_for_host
    )


def _one_call_at_a_time(handler: Any) -> None:
    lock = threading.RLock()
    unlocked = handler.call_action

    def call_action(self: Any) -> Any:
        with lock:
            return unlocked(self)

    call_action.patched = True  # type: ignore[attr-defined]
    handler.call_action = call_action


def _partition(table: Any, hash_key: Any) -> list[Any]:
    part = table.items.get(hash_key)  # a defaultdict: .get inserts nothing
    if part is None:
        return []
    return list(part.values()) if isinstance(part, dict) else [part]


def _partition_queries() -> None:
    # deferred, ADR 0071: moto 0.5 s
    from moto.dynamodb.models.table import Table

    query = Table.query

    def partition_query(self: Table, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        if index_name is not None or hash_key is None:
            return query(self, hash_key, *args, **kwargs)
        items = _partition(self, hash_key)
        self.all_items = lambda: items  # the base-table branch filters all_items() by hash key, then sorts
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = partition_query  # type: ignore[method-assign]


def _transaction_snapshots_of_touched_partitions() -> None:
    # deferred, ADR 0071: moto 0.5 s
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    transact = DynamoDBBackend.transact_write_items
    touched: dict[str, list[Any]] = {}  # table name -> hash keys the running transaction writes
    updated: set[int] = set()  # ids of the items it updates in place

    def kept(item: Any) -> Any:
        return copy.deepcopy(item) if id(item) in updated else item

    def snapshot(table: Table, memo: dict[int, Any]) -> Table:
        twin = copy.copy(table)
        twin.items = table.items.copy()  # the partitions themselves are shared...
        for h in touched.get(table.name, []):
            if (part := table.items.get(h)) is not None:  # ...except those this transaction writes
                twin.items[h] = {r: kept(i) for r, i in part.items()} if isinstance(part, dict) else kept(part)
        return twin

    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        for entry in transact_items:
            kind, op = next(iter(entry.items()))
            table = self.tables.get(op.get("TableName"))
            key = op.get("Key") or op.get("Item") or {}
            if table is None or table.hash_key_attr not in key:
                continue  # moto's own code reports it
            touched.setdefault(table.name, []).append(DynamoType(key[table.hash_key_attr]))
            if kind == "Update":
                with contextlib.suppress(Exception):  # a malformed key: likewise
                    updated.add(id(self.get_item(op["TableName"], op["Key"])))
        Table.__deepcopy__ = snapshot  # type: ignore[attr-defined]
        try:
            return transact(self, transact_items)
        finally:
            del Table.__deepcopy__  # type: ignore[attr-defined]
            touched.clear()
            updated.clear()

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
