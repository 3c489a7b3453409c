"""Each function's HTTP app: the answer function serves the whole ask API (`api/app.py`'s `create_app`); the
classify, retrieve, export and sync functions one route each, the serverless layer's, since each route is its
function's task (`tasks.py`) over HTTP.

A function's route is its state machine task over HTTP: /v1/classify takes an ask request
and returns the turn after classification (it takes the session's next turn number, as the
state machine's first task does); /v1/retrieve takes that turn and returns it with the
retrieved chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Litestar, Request, post

from assist.api.app import create_app, service
from assist.api.identity import caller
from assist.build.event import BuildEvent
from assist.contracts import AskRequest, TurnState
from assist.serverless import tasks

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.ask.engine import Engine
    from assist.settings import Settings


class ExportRequest(msgspec.Struct, forbid_unknown_fields=True):
    force: bool = False  # export even below CLASSIFIER_EXPORT_THRESHOLD new sessions


def answer_app(engine: Engine, ask_via: Callable[[Any, str], Any] | None) -> Litestar:
    """The ask API; `ask_via`: the state machine that runs /v1/ask (the Ask function), or None (in process)."""
    return create_app(engine, ask_via=ask_via)


def classify_app(engine: Engine) -> Litestar:
    @post("/v1/classify", sync_to_thread=True, status_code=200, summary="Start a turn and decide its type")
    def classify(data: AskRequest, request: Request) -> TurnState:
        return tasks.classify_turn(engine, data, caller(request, engine.settings))

    return service([classify], engine.settings, title="Assistance engine: classify")


def retrieve_app(engine: Engine) -> Litestar:
    @post("/v1/retrieve", sync_to_thread=True, status_code=200, summary="Search the docs for a classified turn")
    def retrieve(data: TurnState) -> TurnState:
        return tasks.retrieve_turn(engine, data)

    return service([retrieve], engine.settings, title="Assistance engine: retrieve")


def export_app(settings: Settings) -> Litestar:
    @post("/v1/export", sync_to_thread=True, status_code=200, summary="Export new labeled turns (incremental)")
    def export(data: ExportRequest) -> dict[str, Any]:
        return msgspec.to_builtins(tasks.export(settings, tasks.ExportEvent(source="http", force=data.force)))

    return service([export], settings, title="Assistance engine: export")


class SyncRequest(msgspec.Struct, forbid_unknown_fields=True):
    sources_file: str = ""  # overrides SOURCES_FILE (a path, or s3://bucket/key)


def sync_app(settings: Settings) -> Litestar:
    @post("/v1/sync", sync_to_thread=True, status_code=200, summary="Bring the index in line with the sources file")
    def sync(data: SyncRequest) -> dict[str, Any]:
        return msgspec.to_builtins(tasks.sync(settings, BuildEvent(source="http", sources_file=data.sources_file)))

    return service([sync], settings, title="Assistance engine: sync")
