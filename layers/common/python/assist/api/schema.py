"""The OpenAPI schema describes the wire as it was before the stages' contracts were typed (ADR 0072, 0099).

The stages (one struct each under the `Stage` header), `Trace`, `RetrievalInfo` and the value sets (`Layer`,
`Confidence`, `QueryKind`, `Degraded`, `UncertainReason`, `Slot`, `CorpusKind`, `FoundBy`) are structs and enums in
the code, and their JSON is what it always was: objects and plain strings. The schema keeps saying exactly that:
tests/unit/test_openapi_schema.py holds it to the one recorded in tests/snapshots/openapi.json, which it may only
add to, so a client generated from it keeps working."""

from __future__ import annotations

from typing import Any

from litestar.openapi.spec import Schema
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

from assist.contracts import (
    AnyStage,
    Confidence,
    CorpusKind,
    Degraded,
    Execution,
    FoundBy,
    Layer,
    QueryKind,
    RetrievalInfo,
    Slot,
    Trace,
    UncertainReason,
    VerdictSignals,
)

#: each typed contract → the annotation its JSON was described by before
WIRE: dict[Any, Any] = {
    Trace: dict[str, Any],
    AnyStage: dict[str, Any],  # one struct per stage (ADR 0099): an object, as before
    RetrievalInfo: dict[str, Any],
    Execution: dict[str, Any],
    VerdictSignals: dict[str, Any],
    Layer: str,
    Confidence: str,
    QueryKind: str,
    Degraded: str,
    UncertainReason: str,
    Slot: str,
    CorpusKind: str,
    FoundBy: str,
}


class WireSchema(OpenAPISchemaPlugin):
    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return field_definition.annotation in WIRE

    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: Any) -> Schema:
        return schema_creator.for_field_definition(FieldDefinition.from_annotation(WIRE[field_definition.annotation]))
