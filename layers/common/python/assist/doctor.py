"""What an operator checks first (ADR 0080): for every use of a model — the two answer slots, the LLM classifier,
the search-query calls — is its host reachable, is the model there, what can it do (capabilities, trained
context), and what each call will ask of it (the window, the output limit, `think`); then the embedder and the
index. `assist doctor` prints it (exit 1 when something a question needs is missing); `GET /healthz?deep=1`
returns it to an admin.

Cheap by design: one `/api/version` and one `/api/show` per host and model, read afresh (a model pulled since
the last look is seen), each bounded by the connect timeout and `FACTS_TIMEOUT_S`; the index is opened, not
searched, and the embedder's files are checked, not run, unless an engine already holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
from msgspec import UNSET, UnsetType

from assist.answer.budget import prompt_tokenizer_file
from assist.aws.clients import index_s3
from assist.classify.llm import NUM_PREDICT
from assist.embed.files import MODEL_FILE
from assist.embed.files import TOKENIZER_FILE as EMBED_TOKENIZER
from assist.index import calibration, pointer
from assist.index.local_copy import LocalCopies, Reading
from assist.index.manifest import read as read_manifest
from assist.index.store import connect
from assist.ollama_client import FACTS_TIMEOUT_S, ModelFacts, bearer, forget_facts, model_facts
from assist.query.rewrite import QUERY_TOKENS

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.settings import Settings


@dataclass(frozen=True)
class Use:
    """One way the engine calls a model: which, where, and with what."""

    use: str
    host: str
    model: str
    think: str  # the setting
    num_ctx: int  # the setting (before the model's trained length caps it)
    num_predict: int
    active: bool = True  # the classifier's layer runs only when OLLAMA_HOST is set


class ModelCheck(msgspec.Struct):
    """One use of a model as `assist doctor` reports it: the use, what the host says of its model, and what its
    calls will send (`think` and `num_ctx` as sent, after the model's facts)."""

    use: str
    host: str
    model: str
    think: str | bool  # "omitted": the call sends none
    num_ctx: int
    num_predict: int
    active: bool
    reachable: bool
    version: str | None
    present: bool | None
    capabilities: list[str]
    context_length: int | None
    ok: bool
    problem: str | None


class EmbedderCheck(msgspec.Struct):
    """The embedder: the one an engine holds, or whether its files are in place (unset fields: not looked at)."""

    name: str
    ok: bool
    dim: int | UnsetType = UNSET
    dir: str | UnsetType = UNSET
    prompt_tokenizer: bool | UnsetType = UNSET  # the file answers count their prompt with
    note: str | UnsetType = UNSET
    problem: str | UnsetType = UNSET


class IndexCheck(msgspec.Struct):
    """The live index: where, whether it opens, its passages, documents and calibration, and on S3 how the
    functions read it (`reader`, ADR 0095)."""

    uri: str
    ok: bool
    state: str  # not built, ready, unreadable
    chunks: int | UnsetType = UNSET
    documents: int | UnsetType | None = UNSET
    # the verdict's threshold for this version (ADR 0096); None: built before calibration, or with it off
    calibration: dict[str, Any] | UnsetType | None = UNSET
    reader: Reading | UnsetType = UNSET
    note: str | UnsetType = UNSET
    problem: str | UnsetType = UNSET


class Report(msgspec.Struct):
    """What `assist doctor` prints and `/healthz?deep=1` returns; `ok` when nothing a question needs is missing."""

    ok: bool
    models: list[ModelCheck]
    embedder: EmbedderCheck
    index: IndexCheck


def uses(settings: Settings) -> list[Use]:
    o = settings.ollama
    main, light = (o.host, o.model_name), (o.light_host, o.light_model)
    classifier = (o.host, o.classifier_model)
    return [
        Use("answer:main", *main, o.think, o.num_ctx_for(*main), o.num_predict),
        Use("answer:light", *light, o.think_conversational, o.num_ctx_for(*light), o.num_predict_conversational),
        Use(
            "classifier",
            *classifier,
            settings.classifier.llm_think,
            o.num_ctx_for(*classifier),
            NUM_PREDICT,
            active=o.host_explicit,
        ),
        Use("rewrite", *light, o.rewrite_think, o.num_ctx_for(*light), QUERY_TOKENS),
    ]


def row(use: Use, facts: ModelFacts, version: str | None) -> ModelCheck:
    """What `assist doctor` says of one use: the facts, and what its calls will send."""
    think = facts.think(use.think)
    problem = None
    if use.active:
        if facts.present is None:
            problem = f"host unreachable: {facts.error}"
        elif not facts.present:
            problem = f"model {use.model!r} is not on {use.host}: `ollama pull {use.model}` there"
    return ModelCheck(
        use.use, use.host, use.model, "omitted" if think is None else think, facts.window(use.num_ctx),
        use.num_predict, use.active, facts.present is not None, version, facts.present, list(facts.capabilities),
        facts.context_length, problem is None, problem,
    )  # fmt: skip


def host_version(host: str, connect_timeout_s: float, api_key: str | None) -> str | None:
    """`/api/version`: thinking by default from 0.12.4, `think: false` to any model from 0.12.5 (ADR 0078)."""
    timeout = httpx.Timeout(FACTS_TIMEOUT_S, connect=min(connect_timeout_s, FACTS_TIMEOUT_S))
    try:
        reply = httpx.get(host.rstrip("/") + "/api/version", timeout=timeout, headers=bearer(api_key))
        return str(reply.json().get("version") or "") or None
    except (httpx.HTTPError, OSError, ValueError):
        return None


def models(settings: Settings) -> list[ModelCheck]:
    forget_facts()  # afresh: what the host says now, not what this process learned before
    connect = settings.ollama.connect_timeout_s
    versions: dict[str, str | None] = {}
    rows = []
    for use in uses(settings):
        if use.host not in versions:
            versions[use.host] = host_version(use.host, connect, settings.ollama.api_key)
        facts = model_facts(use.host, use.model, FACTS_TIMEOUT_S, connect, settings.ollama.api_key)
        rows.append(row(use, facts, versions[use.host]))
    return rows


def embedder_state(settings: Settings, loaded: Callable[[], Any] | None = None) -> EmbedderCheck:
    """The embedder an engine already holds (`loaded`), else whether its files are where they should be."""
    if loaded is not None:
        try:
            e = loaded()
            return EmbedderCheck(e.id, True, dim=e.dim)
        except Exception as exc:  # the embedder failing to load is exactly what this reports
            return EmbedderCheck(settings.embed.embedder, False, problem=f"{type(exc).__name__}: {exc}"[:300])
    if settings.embed.embedder != "minilm":
        return EmbedderCheck(settings.embed.embedder, True, note="an Ollama embedding model, asked at the first search")

    root = Path(settings.embed.model_dir)
    missing = [f for f in (MODEL_FILE, EMBED_TOKENIZER) if not (root / f).is_file()]
    return EmbedderCheck(
        "minilm",
        not missing,
        dir=str(root),
        prompt_tokenizer=prompt_tokenizer_file(settings) is not None,
        problem=f"missing {missing}: run `assist model export` (make setup does)" if missing else UNSET,
    )


def index_state(settings: Settings) -> IndexCheck:
    """The live index's location, its passages and documents; a missing local index is not a failure (the
    first `assist ask` builds it), an unreadable one is."""
    uri = settings.index.uri
    if not settings.index.is_s3 and not Path(uri).exists():
        return IndexCheck(uri, True, "not built", note="`assist index docs` (or the first ask) builds it")
    try:
        live = pointer.live_uri(uri, index_s3(settings))
        db = connect(live, settings.storage_options())
        table = db.open_table(settings.index.table)
        entries = read_manifest(db, settings.index.table)
        calibrated = calibration.read(db, settings.index.table)
        return IndexCheck(
            live,
            True,
            "ready",
            chunks=table.count_rows(),
            documents=len(entries) if entries is not None else None,
            calibration=calibrated.summary() if calibrated else None,
            reader=reader(settings, live) if settings.index.is_s3 else UNSET,
        )
    except Exception as exc:  # any index failure is what this reports
        return IndexCheck(uri, False, "unreadable", problem=f"{type(exc).__name__}: {exc}"[:300])


def reader(settings: Settings, live: str) -> Reading:
    """How the functions read an index on S3: a local copy of the live version, or S3 itself and why (ADR 0095)."""
    if settings.index.read == "s3":
        return Reading("s3", why="INDEX_READ=s3")
    return LocalCopies(settings, index_s3(settings)).plan(live)


def doctor(settings: Settings, embedder: Callable[[], Any] | None = None) -> Report:
    """Every model use, the embedder and the index, checked (the embedder an engine holds, when given)."""
    rows = models(settings)
    emb, idx = embedder_state(settings, embedder), index_state(settings)
    return Report(all(r.ok for r in rows) and emb.ok and idx.ok, rows, emb, idx)
