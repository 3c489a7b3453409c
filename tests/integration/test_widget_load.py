"""Widget visitors asking at once through 4 app processes (the answer container, uvicorn) sharing one store: the
moto server's DynamoDB tables, then one embedded SQLite file. The lean version of `assist bench widget`
(20 visitors × 50 questions, limit 20; its figures are in docs/widget.md): each visitor gets exactly its limit,
every other request is a 429 with Retry-After, no turn is lost or duplicated, the counters are exact."""

from __future__ import annotations

import pytest

from assist_dev.bench import widget

pytestmark = pytest.mark.integration


def test_concurrent_visitors_through_four_processes_get_exactly_their_limit_on_both_stores(moto_url, docs_index):
    result = widget.run(
        visitors=6,
        questions=7,
        limit=3,
        processes=4,
        stores=("dynamodb", "file"),
        endpoint=moto_url,
        index=docs_index.index.uri,
        workers=42,
    )
    for store in ("dynamodb", "file"):
        r = result[store]
        assert r["statuses"] == {"200": 6 * 3, "429 visitor_limit": 6 * 4}, (store, r)
        assert r["answered_per_visitor"] == [3], (store, r)
        assert r["exact"], (store, r)
        assert r["refused_without_retry_after"] == 0, (store, r)
        assert (r["lost"], r["duplicated"], r["turn_gaps"]) == (0, 0, 0), (store, r)
        assert r["counters_exact"], (store, r["counters_wrong"])
