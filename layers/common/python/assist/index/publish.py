"""`assist index … --publish` and `assist index --rollback`: a new index version built beside the live one,
judged on a relevance set before it goes live, and a pointer flipped (ADR 0067).

The gate is `assist eval retrieval`'s evaluation (our adaptive retriever, documents ranked by their best
chunk, nDCG@10: `offline/retrieve/evaluate.gate_score`) on `INDEX_GATE_QUERIES` / `INDEX_GATE_QRELS`, whose corpus ids
are the index's document ids. A version scoring below the live one by more than `INDEX_GATE_MARGIN` is refused:
it stays built under `versions/` for inspection, and the pointer does not move.

This module is the index layer's: the build (`sources/sync.py`) and the score (`retrieve/`) sit above it, so
the caller hands both in (`Build`, `Score`) and the index never imports them (ADR 0071).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from assist.errors import AssistError
from assist.index import pointer
from assist.index.lock import writer_lease
from assist.index.store import connect
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
#: builds the sources into the index `settings.index.uri` names; returns its report (`index`, `docs`, `chunks`)
Build = Callable[["Settings"], dict[str, Any]]
#: nDCG@10 of the index `settings.index.uri` names, on the gate's relevance set
Score = Callable[["Settings"], float]


class NothingToRollBack(AssistError, ValueError):
    """No earlier live version to go back to (or not the one named)."""


def new_version() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def publish(settings: Settings, build: Build, score: Score, s3: Any = None) -> dict:
    """`build` a new version, gate it with `score`, flip the pointer; the report says what was decided and why."""
    root = settings.index.uri
    version = new_version()
    built = build(settings.with_(index={"uri": pointer.version_uri(root, version)}))
    gate = judge(settings, score, root, version, s3)
    report = {
        "version": version,
        "index": built["index"],
        "docs": built["docs"],
        "chunks": built["chunks"],
        "calibration": built.get("calibration"),  # the verdict's threshold for this version (ADR 0096)
        "gate": gate,
    }
    if gate.get("refused"):
        log.warning("index.publish_refused", version=version, **gate)
        return {**report, "published": False}
    with writer_lease(root, s3):
        current = pointer.read(root, s3)
        # the first publish: an index built in place before is what a rollback returns to
        previous = [current.version, *current.previous] if current else [None] if _built_in_place(settings) else []
        pointer.write(root, pointer.Pointer(version, previous, _now()), s3)
    log.info("index.published", version=version, replaced=previous[0] if previous else None, docs=built["docs"])
    return {**report, "published": True, "replaced": previous[0] if previous else None}


def rollback(settings: Settings, s3: Any = None, to: str | None = None) -> dict:
    """Point back at the previous live version (or at `to`, an earlier live version)."""
    root = settings.index.uri
    with writer_lease(root, s3):
        current = pointer.read(root, s3)
        previous = list(current.previous) if current else []
        target = to or (previous[0] if previous else None)
        if not previous or target not in previous:
            known = ", ".join(v or "(unpublished)" for v in previous) or "none"
            named = f" {target}" if target else ""
            raise NothingToRollBack(f"no earlier live version{named} at {root} (earlier versions: {known})")
        rest = previous[previous.index(target) + 1 :]
        pointer.write(root, pointer.Pointer(target, rest, _now()), s3)
    log.info("index.rolled_back", version=target, replaced=current.version)
    return {"version": target, "replaced": current.version, "previous": rest}


def _built_in_place(settings: Settings) -> bool:
    return settings.index.table in connect(settings.index.uri, settings.storage_options()).table_names()


def judge(settings: Settings, score: Score, root: str, version: str, s3: Any = None) -> dict[str, Any]:
    """The gate's figures: the candidate's and the live version's nDCG@10; `refused` when it falls short."""
    if not (settings.index.gate_queries and settings.index.gate_qrels):
        return {"ran": False, "why": "no relevance set (INDEX_GATE_QUERIES, INDEX_GATE_QRELS)"}
    candidate = score(settings.with_(index={"uri": pointer.version_uri(root, version)}))
    try:
        live = score(settings.with_(index={"uri": pointer.live_uri(root, s3)}))
    except AssistError:  # nothing live yet: the first version is judged by nothing
        live = None
    margin = settings.index.gate_margin
    refused = live is not None and candidate < live - margin
    return {"ran": True, "ndcg@10": candidate, "live_ndcg@10": live, "margin": margin, "refused": refused}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
