"""The HTTP routes of the classify, retrieve and export functions (the answer function serves `create_app`).

A function's route is its state machine task over HTTP: /v1/classify takes an ask request
and returns the turn after classification (it takes the session's next turn number, as the
state machine's first task does); /v1/retrieve takes that turn and returns it with the
retrieved chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from litestar import Litestar, post
from litestar.exceptions import HTTPException
from litestar.status_codes import HTTP_501_NOT_IMPLEMENTED

from assist.api.app import service
from assist.contracts import AskRequest, TurnState
from assist.serverless import tasks

if TYPE_CHECKING:
    from assist.ask.engine import Engine


def classify_app(engine: Engine) -> Litestar:
    @post("/v1/classify", sync_to_thread=True, status_code=200, summary="Start a turn and decide its type")
    def classify(data: AskRequest) -> TurnState:
        return tasks.classify_turn(engine, data)

    return service([classify], title="Assistance engine: classify")


def retrieve_app(engine: Engine) -> Litestar:
    @post("/v1/retrieve", sync_to_thread=True, status_code=200, summary="Search the docs for a classified turn")
    def retrieve(data: TurnState) -> TurnState:
        return tasks.retrieve_turn(engine, data)

    return service([retrieve], title="Assistance engine: retrieve")


def export_app() -> Litestar:
    @post("/v1/export", status_code=200, summary="Export labeled turns (not implemented yet: 501)")
    async def export() -> dict[str, str]:
        raise HTTPException(status_code=HTTP_501_NOT_IMPLEMENTED, detail=tasks.EXPORT_PENDING)

    return service([export], title="Assistance engine: export")
