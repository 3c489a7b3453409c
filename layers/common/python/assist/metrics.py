"""CloudWatch metrics as embedded metric format (EMF) records in the logs (ADR 0064).

Each record is built by Powertools' Metrics utility (`EphemeralMetrics`: nothing kept between records)
and written as one structlog event, `metrics.emf`, whose JSON line is a valid EMF document (`_aws` at
the top): in Lambda CloudWatch turns it into metrics with no API call and no permission; on the local
stack and in `assist ask --json` the same line is in the logs, where a test can read it.

Namespace `Assist`, dimension `service=assist` on every metric, so the alarms' totals have one series:
- per turn: `Turns`, `LatencyMs`, `ModelTokens` by (type, layer) and by service alone; `Degraded` by reason;
- per export: `ExportedRecords`; per index build: `IndexDocuments`.
"""

from __future__ import annotations

from typing import Any

from assist.contracts import AnyStage, Degraded, GenerateStage
from assist.logs import METRICS_EVENT, get_logger

log = get_logger(__name__)
NAMESPACE = "Assist"
SERVICE = "assist"


def _record(values: dict[str, tuple[float, str]], dimensions: dict[str, str], totals: bool = False) -> dict[str, Any]:
    """One EMF record: `values` name → (value, unit); `totals` adds the service-only dimension set."""
    # deferred, ADR 0104: Powertools' metrics, 0.01 s, and not in the classify and retrieve images
    from aws_lambda_powertools.metrics import EphemeralMetrics

    metrics = EphemeralMetrics(namespace=NAMESPACE, service=SERVICE)
    for name, value in dimensions.items():
        metrics.add_dimension(name=name, value=value)
    if totals:
        metrics.add_dimensions(service=SERVICE)
    for name, (value, unit) in values.items():
        metrics.add_metric(name=name, unit=unit, value=value)
    record = dict(metrics.serialize_metric_set())
    log.info(METRICS_EVENT, **record)
    return record


def turn(query_type: str, layer: str, degraded: list[Degraded], latency_ms: float, model_tokens: int) -> None:
    values = {"Turns": (1, "Count"), "LatencyMs": (latency_ms, "Milliseconds"), "ModelTokens": (model_tokens, "Count")}
    _record(values, {"type": query_type, "layer": layer}, totals=True)
    for reason in dict.fromkeys(degraded):
        _record({"Degraded": (1, "Count")}, {"reason": reason})


def exported(records: int) -> None:
    _record({"ExportedRecords": (records, "Count")}, {})


def indexed(documents: int) -> None:
    _record({"IndexDocuments": (documents, "Count")}, {})


def tokens(stages: list[AnyStage]) -> int:
    """Prompt and completion tokens of the turn's model calls (Ollama's `prompt_eval_count`, `eval_count`)."""
    return sum(
        int(v)
        for st in stages
        if isinstance(st, GenerateStage)
        for k, v in st.usage.items()
        if k in ("prompt_eval_count", "eval_count") and isinstance(v, int | float)
    )
