"""structlog set-up: JSON lines in Lambda and containers, a readable console locally.

Events have stable names (`classify.decided`, `retrieve.fused`, ...) and flat fields, so a
log query can rely on them.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import Enum

from assist.settings import Settings

if "rich" in sys.modules:
    import structlog
else:
    # structlog.dev imports rich's console and traceback when rich is installed (litestar brings it) to render
    # tracebacks, which `format_exc_info` below renders first: 0.3 s of every cold start for nothing (ADR 0095)
    sys.modules["rich"] = None  # type: ignore[assignment]  # `import rich` fails: structlog goes without
    import structlog

    del sys.modules["rich"]  # whoever needs rich later imports it as usual

_configured = False
#: the event that carries a metric record (EMF, `metrics.py`): for CloudWatch's log parser, never for a person
METRICS_EVENT = "metrics.emf"
_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("assist_logs_quiet", default=False)


def _drop_when_quiet(logger: object, method: str, event: dict[str, object]) -> dict[str, object]:
    if _quiet.get() and method in ("debug", "info"):
        raise structlog.DropEvent
    return event


@contextmanager
def quiet() -> Iterator[None]:
    """Debug and info events inside the block are dropped; warnings and errors still go out. For batches of
    internal work (the calibration's few hundred probe searches) whose per-item events would bury the ones a
    reader of the log looks for, and fill a pipe nobody reads yet (a parent process waiting for readiness)."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def _drop_metrics(logger: object, method: str, event: dict[str, object]) -> dict[str, object]:
    if event.get("event") == METRICS_EVENT:
        raise structlog.DropEvent
    return event


def _enum_values(logger: object, method: str, event: dict[str, object]) -> dict[str, object]:
    """`degraded=['llm_unavailable']`, not the enum's repr, on the console as in JSON."""
    for key, value in event.items():
        if isinstance(value, Enum):
            event[key] = value.value
        elif isinstance(value, list | tuple) and any(isinstance(v, Enum) for v in value):
            event[key] = [v.value if isinstance(v, Enum) else v for v in value]
    return event


def level_for(named: str, as_json: bool, terminal: bool) -> int:
    """LOG_LEVEL when set; unset, WARNING for a person at a terminal (the answer, not the engine's events),
    INFO where a machine reads the log (JSON, a file, a pipe)."""
    if named:
        level = logging.getLevelName(named.upper())
        return level if isinstance(level, int) else logging.INFO
    return logging.WARNING if terminal and not as_json else logging.INFO


def configure(settings: Settings, force: bool = False) -> None:
    global _configured
    if _configured and not force:
        return
    fmt = settings.logs.format
    terminal = sys.stderr.isatty()
    as_json = fmt == "json" or (fmt == "auto" and (settings.logs.in_cloud or not terminal))
    level = level_for(settings.logs.level, as_json, terminal)
    renderer = structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            _drop_when_quiet,
            *([] if as_json else [_drop_metrics]),  # EMF records are JSON lines for CloudWatch, not console text
            _enum_values,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    # One INFO line per HTTP call to Ollama or AWS drowns the engine's own events.
    for noisy in ("httpx", "httpx2", "botocore", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _configured = True


def bound(**fields: object) -> AbstractContextManager[object]:
    """Fields every event inside the block carries (the function, the request id)."""
    return structlog.contextvars.bound_contextvars(**fields)


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    return structlog.get_logger(name)
