"""`assist index … --publish` and `assist index --rollback`: a new index version built beside the live one,
judged on a relevance set before it goes live, and a pointer flipped (ADR 0067).

The gate is `assist eval retrieval`'s evaluation (our adaptive retriever, documents ranked by their best
chunk, nDCG@10) on `INDEX_GATE_QUERIES` / `INDEX_GATE_QRELS`, whose corpus ids are the index's document
ids. A version scoring below the live one by more than `INDEX_GATE_MARGIN` is refused: it stays built
under `versions/` for inspection, and the pointer does not move.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from assist.errors import AssistError
from assist.index import pointer
from assist.index.lock import writer_lease
from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)


class NothingToRollBack(AssistError, ValueError):
    """No earlier live version to go back to (or not the one named)."""


def new_version() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def publish(specs: list[Any], settings: Settings, embedder: Embedder, s3: Any = None, progress: bool = False) -> dict:
    """Build `specs` as a new version, gate it, flip the pointer; the report says what was decided and why."""
    from assist.sources.sync import sync_sources

    root = settings.index.uri
    version = new_version()
    built = sync_sources(
        specs, settings.with_(index={"uri": pointer.version_uri(root, version)}), embedder, progress, s3
    )
    gate = judge(settings, embedder, root, version, s3)
    report = {
        "version": version,
        "index": built["index"],
        "docs": built["docs"],
        "chunks": built["chunks"],
        "gate": gate,
    }
    if gate.get("refused"):
        log.warning("index.publish_refused", version=version, **gate)
        return {**report, "published": False}
    with writer_lease(root, s3):
        current = pointer.read(root, s3)
        if current:
            previous = [current["version"], *current.get("previous", [])]
        else:  # the first publish: an index built in place before is what a rollback returns to
            previous = [None] if _built_in_place(settings) else []
        pointer.write(root, {"version": version, "previous": previous, "published_at": _now()}, s3)
    log.info("index.published", version=version, replaced=previous[0] if previous else None, docs=built["docs"])
    return {**report, "published": True, "replaced": previous[0] if previous else None}


def rollback(settings: Settings, s3: Any = None, to: str | None = None) -> dict:
    """Point back at the previous live version (or at `to`, an earlier live version)."""
    root = settings.index.uri
    with writer_lease(root, s3):
        current = pointer.read(root, s3)
        previous = list(current.get("previous", [])) if current else []
        target = to or (previous[0] if previous else None)
        if not previous or target not in previous:
            known = ", ".join(v or "(unpublished)" for v in previous) or "none"
            named = f" {target}" if target else ""
            raise NothingToRollBack(f"no earlier live version{named} at {root} (earlier versions: {known})")
        rest = previous[previous.index(target) + 1 :]
        pointer.write(root, {"version": target, "previous": rest, "published_at": _now()}, s3)
    log.info("index.rolled_back", version=target, replaced=current["version"])
    return {"version": target, "replaced": current["version"], "previous": rest}


def _built_in_place(settings: Settings) -> bool:
    from assist.index.store import connect

    return settings.index.table in connect(settings.index.uri, settings.storage_options()).table_names()


def judge(settings: Settings, embedder: Embedder, root: str, version: str, s3: Any = None) -> dict[str, Any]:
    """The gate's figures: the candidate's and the live version's nDCG@10; `refused` when it falls short."""
    if not (settings.index.gate_queries and settings.index.gate_qrels):
        return {"ran": False, "why": "no relevance set (INDEX_GATE_QUERIES, INDEX_GATE_QRELS)"}
    candidate = score(settings.with_(index={"uri": pointer.version_uri(root, version)}), embedder)
    try:
        live = score(settings.with_(index={"uri": pointer.live_uri(root, s3)}), embedder)
    except AssistError:  # nothing live yet: the first version is judged by nothing
        live = None
    margin = settings.index.gate_margin
    refused = live is not None and candidate < live - margin
    return {"ran": True, "ndcg@10": candidate, "live_ndcg@10": live, "margin": margin, "refused": refused}


def score(settings: Settings, embedder: Embedder) -> float:
    """nDCG@10 of the index at `settings.index.uri` on the gate's relevance set."""
    from assist.index.store import connect, open_table
    from assist.retrieve import beir
    from assist.retrieve.evaluate import DEPTH, best_chunk_order, ndcg, searcher
    from assist.retrieve.manifest import load
    from assist.retrieve.search import SearchOptions

    judged, asked = beir.read_judged(settings.index.gate_queries, settings.index.gate_qrels)
    db = connect(settings.index.uri, settings.storage_options())
    search = searcher(
        "adaptive",
        open_table(settings, embedder, db),
        embedder,
        SearchOptions.from_settings(settings),
        DEPTH,
        catalog=lambda: load(db, settings.index.uri, settings.index.table),  # identifiers, as readers rank
    )
    total = sum(ndcg(best_chunk_order(search(text)), judged[q], 10) for q, text in asked.items())
    return round(total / len(asked), 4)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
