"""An uncertain answer's near misses (ADR 0102): marked on the wire only when they are near misses, listed by
every way in, never made citations."""

from __future__ import annotations

import msgspec

from assist.api.answers import cited
from assist.ask.answering import with_passages
from assist.ask.recorder import sources_of
from assist.contracts import Chunk, Layer, QueryType, Route, RouteEvent, Slot, Source, UncertainReason, on_wire
from assist.widget.events import for_visitor

CHUNKS = [
    Chunk(id="routing#layers:0", doc_id="routing", title="Routing", heading="Layers", text="Rules first.", score=0.4,
          url="file:///docs/routing.md#layers"),
    Chunk(id="api#ask:1", doc_id="api", title="API", heading="", text="POST /v1/ask.", score=0.2),
]  # fmt: skip


def test_near_misses_are_marked_and_cited_sources_keep_their_wire_form():
    near = msgspec.to_builtins(sources_of(CHUNKS, near_miss=True))
    assert [(s["id"], s["near_miss"], s["url"]) for s in near] == [
        ("routing#layers:0", True, "file:///docs/routing.md#layers"),
        ("api#ask:1", True, ""),
    ]
    plain = msgspec.to_builtins(sources_of(CHUNKS))
    assert all("near_miss" not in s for s in plain)  # a covered answer's sources: the same keys as before
    assert msgspec.json.decode(msgspec.json.encode(near[0]), type=Source).near_miss is True


def test_near_misses_are_no_citations_in_the_text_footer():
    assert cited(sources_of(CHUNKS, near_miss=True)) == ""  # the fixed answer's text lists them already (ADR 0084)
    footer = cited(sources_of(CHUNKS))
    assert footer == (
        "\n\nSources:\n[1] Routing › Layers (routing#layers:0) file:///docs/routing.md#layers"
        "\n[2] API › API (api#ask:1)"
    )


def test_a_visitor_sees_the_near_miss_mark_but_not_the_score():
    near = with_passages(sources_of(CHUNKS, near_miss=True), CHUNKS)
    route = Route(QueryType.RETRIEVAL, Layer.DECLARED, 1.0, "declared", Slot.MAIN)
    seen = for_visitor(RouteEvent(route, near, [], True, UncertainReason.OUT_OF_SCOPE))
    assert seen is not None
    name, payload = on_wire(seen)
    assert (name, payload["uncertain"], payload["type"]) == ("route", True, "RETRIEVAL")
    assert "reason" not in payload  # the route's own reason is the trace's internals
    assert [(s["id"], s["near_miss"], s["passage"]) for s in payload["sources"]] == [
        ("routing#layers:0", True, "Rules first."),
        ("api#ask:1", True, "POST /v1/ask."),
    ]
    assert all("score" not in s for s in payload["sources"])
