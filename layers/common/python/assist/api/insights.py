"""GET /insights: the insights page (docs/insights.md), served by the local stack and the answer container."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar import MediaType, Request, get

from assist.api.admin import require_admin
from assist.api.identity import caller
from assist.insights.render import build
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.ask.engine import Engine

log = get_logger(__name__)


def insights_routes(engine: Engine) -> list[Any]:
    settings = engine.settings

    @get(
        "/insights",
        sync_to_thread=True,
        media_type=MediaType.HTML,
        summary="Questions per type and day, deciding layers, retrieval confidence, degraded reasons, doc gaps",
    )
    def insights(request: Request, days: int = 7) -> str:
        caller(request, settings)  # someone identified, as on every route
        require_admin(request, settings)  # and an admin: the page shows every user's questions
        return build(settings, engine.store(), engine.embedder, days, calibration())[0]

    def calibration() -> dict[str, Any] | None:
        """The searched index version's verdict calibration (ADR 0096); an index that cannot be opened has none
        to show, and the page says so rather than failing. The Ask function in AWS hands turns to the state
        machine and may not read the index (least privilege): there `assist doctor` shows it."""
        if settings.api.ask_state_machine_arn:
            return None
        try:
            c = engine.retriever().calibration()
        except Exception as exc:  # the page is about the history; the index's state is doctor's to report
            log.warning("insights.no_calibration", error=f"{type(exc).__name__}: {str(exc)[:200]}")
            return None
        return c.summary() if c else None

    return [insights]
