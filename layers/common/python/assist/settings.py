"""The one place that reads the environment.

Every other module receives a `Settings` (or the values it needs) as an argument, so tests
build one explicitly and nothing depends on process-global state.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from assist.errors import AssistError

DEFAULT_PLATFORM_PREFIXES = ("you are a direct and concise assistant",)
#: the routing classifier trained from data/routing/seed.jsonl and shipped with the repository; an absolute
#: path, so `assist` finds it from any working directory of a checkout (deployments set CLASSIFIER_MODEL_PATH)
SHIPPED_CLASSIFIER_MODEL = "data/models/routing-classifier.json"
DEFAULT_CLASSIFIER_MODEL = str(Path(__file__).resolve().parents[4] / SHIPPED_CLASSIFIER_MODEL)
#: CLASSIFIER_MODEL_PATH values that switch the embedding layer off
NO_MODEL = frozenset({"none", "off"})
#: the last part of a CLASSIFIER_MODEL_PATH that names a model registry's pointer rather than an artifact
REGISTRY_POINTER = "current"
#: fields computed from the environment rather than read from a variable of their own
DERIVED = ("in_cloud", "ollama_host_explicit", "aws_configured")
#: fields never read from the environment: static keys for an emulator, set in-process by the local stack and
#: the tests. Real credentials come from boto3's (and LanceDB's) default chain, which also reads
#: AWS_SESSION_TOKEN, profiles, and the container/instance endpoints, and refreshes them (ADR 0048).
NOT_FROM_ENV = ("emulator_access_key_id", "emulator_secret_access_key")
#: SESSION_STORE values; `auto` picks DynamoDB when AWS is configured (ADR 0044)
SESSION_STORES = ("auto", "dynamodb", "file")
#: variables that say "this process talks to AWS": with any of them set, SESSION_STORE=auto means DynamoDB
AWS_SIGNALS = (
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "SESSIONS_TABLE",
    "INTENT_HISTORY_TABLE",
)


class SettingsError(AssistError, ValueError):
    """An environment variable holds a value we cannot use."""


def _env_name(name: str) -> str:
    return name.upper()


@dataclass(frozen=True)
class Settings:
    # --- LLM (Ollama) -------------------------------------------------------------
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_host_conversational: str | None = None  # the light slot may live on another host
    ollama_model_name: str = "qwen3:1.7b"
    ollama_model_name_conversational: str | None = None  # unset: the light slot uses main
    ollama_timeout_s: float = 60.0
    ollama_connect_timeout_s: float = 2.0
    ollama_warm_up: bool = False  # load both slot models when a container starts
    ollama_api_key: str | None = field(default=None, repr=False)  # bearer token for a proxy in front of Ollama
    # True only when OLLAMA_HOST was set: the LLM classifier layer runs only then, so an
    # engine without Ollama never waits on a connection refused at every ambiguous message.
    ollama_host_explicit: bool = field(default=False)

    # --- Classification -----------------------------------------------------------
    classifier_confidence_threshold: float = 0.85
    classifier_model_path: str | None = DEFAULT_CLASSIFIER_MODEL  # None (or "none"): no embedding layer
    classifier_reload_s: float = 60.0  # a registry's `current` pointer is checked at most this often
    ollama_model_name_classifier: str | None = None  # unset: the LLM classifier uses the main model
    classifier_llm_timeout_s: float = 5.0  # the LLM classifier's whole budget, retry included
    classifier_export_threshold: int = 500
    classifier_export_dir: str = ".assist/labels"
    export_settle_s: float = 60.0  # entries younger than this wait for the next export (index lag)
    export_hash_key: str = field(default="assist-local-export-key", repr=False)  # HMAC key of session hashes
    export_hash_key_secret: str | None = None  # a Secrets Manager secret holding the key, read at run time (ADR 0065)
    export_hash_key_cache_s: float = 300.0  # the secret's value is kept this long in a warm process
    platform_prefixes: tuple[str, ...] = DEFAULT_PLATFORM_PREFIXES

    # --- Retrieval ----------------------------------------------------------------
    index_uri: str = ".assist/index"
    index_table: str = "chunks"
    embedder: str = "minilm"  # "minilm" (local ONNX) or "ollama:<model>"
    embed_model_dir: str = ".assist/models/all-MiniLM-L6-v2"
    retrieve_top_k: int = 5
    retrieve_timeout_s: float = 5.0  # past this the answer goes on without passages (`index_timeout`)
    retrieve_embed_timeout_ms: float = 300.0  # past this the search is full-text only (`embedder_timeout`)
    retrieve_similarity_floor: float = 0.2  # vector-only candidates less similar than this are dropped
    retrieve_agreement_bonus: float = 0.2  # fused score × (1 + bonus) for a chunk every strategy found
    retrieve_semantic_weight: float = 0.5  # vector's share against relaxed full text in the fusion (ADR 0039)
    retrieve_exact_weight: float = 0.2  # the exact full-text list's weight on top (ADR 0039)
    index_language: str = "en"  # the docs' language: a question in another gets a translated full-text query
    retrieve_hub_damping: float = 0.5  # a document referencing the whole corpus keeps 1 − this of its score
    retrieve_mmr_lambda: float = 1.0  # MMR relevance/diversity trade-off; 1 = fused order (measured best)
    retrieve_corpus_chars: int = 12_000  # corpus questions: manifest lines given to the model, at most (ADR 0042)
    retrieve_document_chars: int = 16_000  # a named document's text given whole up to this (ADR 0042)
    #: a RETRIEVAL question is out of scope (no model call) when similarity + centrality weight × centrality
    #: + coverage weight × coverage is below the threshold (ADR 0055)
    uncertain_threshold: float = 0.65
    uncertain_centrality_weight: float = 1.0
    uncertain_coverage_weight: float = 0.3
    # published index versions (ADR 0067): readers re-read the live pointer this often; the gate's relevance set
    index_refresh_s: float = 60.0
    index_gate_queries: str = ""  # queries.jsonl ({_id, text}); with the qrels, `--publish` runs the gate
    index_gate_qrels: str = ""  # qrels TSV (query-id, corpus-id = the index's document ids, score)
    index_gate_margin: float = 0.02  # a version whose nDCG@10 is below the live one's by more is refused
    index_vector_index_rows: int = 20_000  # from this many chunks on, vector search uses an IVF index (ADR 0020)
    index_fts_options: tuple[str, ...] = ("stem", "remove_stop_words", "ascii_folding")  # FTS tokenizer (ADR 0020)

    # --- Sources (docs sites, OpenAPI, repositories, PDF: ADR 0058–0060) -------------
    sources_file: str = ""  # a YAML list of sources for one index (`assist index --sources`, the sync function)
    docs_base_url: str = ""  # where a folder's files are published (`{path}` or a prefix); "": file:// URLs
    crawl_concurrency: int = 4  # requests in flight to one site at once
    crawl_delay_s: float = 0.1  # each request slot waits this long before its next request (unless robots asks more)
    crawl_max_pages: int = 2000  # a site with more pages than this is refused, not cut short
    crawl_max_page_bytes: int = 2_000_000  # a page, spec or file larger than this is refused
    crawl_timeout_s: float = 20.0  # per request
    crawl_user_agent: str = "assist-docs-indexer/0.1"

    # --- Storage (DynamoDB, S3) ---------------------------------------------------
    sessions_table: str = "assist-sessions"
    intent_history_table: str = "assist-intent-history"
    bucket: str = "assist-data"
    aws_endpoint_url: str | None = None
    aws_region: str = "us-east-1"
    # static keys for an emulator (moto), only with aws_endpoint_url; never read from the environment
    emulator_access_key_id: str | None = field(default=None, repr=False)
    emulator_secret_access_key: str | None = field(default=None, repr=False)
    session_ttl_days: int = 30
    # where sessions and intent history live: auto | dynamodb | file (one SQLite file, ADR 0044)
    session_store: str = "auto"
    session_store_file: str = ".assist/sessions.sqlite3"
    # True when the environment names AWS (any of AWS_SIGNALS): `auto` then means DynamoDB
    aws_configured: bool = field(default=False)

    # --- API ----------------------------------------------------------------------
    ask_state_machine_arn: str | None = None  # set: POST /v1/ask runs the ask state machine (the Ask function)
    local_mode: bool = False  # set by `assist local up`: accepts the X-Assist-User dev header
    trusted_identity_header: str | None = None  # a container behind an authenticating proxy
    max_message_chars: int = 8000
    max_extra_context_chars: int = 16000
    insights_scope: str = "assist/admin"  # the token scope GET /insights requires (ADR 0066)
    insights_max_entries: int = 50_000  # the insights page reads at most this many history entries (newest days first)
    max_editor_content_chars: int = 32000
    max_user_info_bytes: int = 8192  # user_info encoded as JSON
    max_body_bytes: int = 1_048_576  # any request body, as sent, before it is decoded (ADR 0043)
    api_deadline_s: float = 28.0  # a request's whole budget, every stage included (API Gateway closes at 30 s)
    # verified identity (ADR 0050): with JWT_JWKS_URL set, the caller is the `sub` of a verified bearer token
    jwt_jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # Idempotency-Key (ADR 0049): answers remembered per caller, route and key
    idempotency_table: str = "assist-idempotency"  # DynamoDB; the embedded store keeps them in its own file
    idempotency_ttl_s: int = 3600  # a key is remembered this long after its answer
    idempotency_wait_s: float = 25.0  # a retry arriving while the first request runs waits this long for it
    idempotency_lock_s: float = 150.0  # a claim whose request died is free again after this (> every timeout)

    # --- The widget: site keys, visitor tokens, abuse limits (docs/widget.md, ADRs 0087-0091) -------------
    widget_table: str = "assist-widget"  # DynamoDB: site keys and counters (the embedded store keeps them in its file)
    # the HMAC key of visitor tokens; unset: WIDGET_TOKEN_KEY_SECRET's, else one made once and kept in the widget table
    widget_token_key: str | None = field(default=None, repr=False)
    widget_token_key_secret: str | None = None  # a Secrets Manager secret holding it, read at run time (cached)
    widget_token_ttl_s: int = 1800  # a visitor token's life; the widget renews it (same visitor) before it ends
    widget_key_cache_s: float = 30.0  # a process re-reads a site key this often: a revoked key stops within it
    widget_stream_url: str = ""  # where the widget streams answers when not from widget.js's origin (AWS: the URL)
    widget_forwarded_hops: int = 0  # proxies in front that append to X-Forwarded-For (0: the socket's address)
    # each site key's limits unless it sets its own (`assist keys create --visitor-questions …`)
    widget_visitor_questions: int = 20  # questions per visitor per window
    widget_visitor_window_s: int = 600
    widget_key_rate_per_s: float = 2.0  # a key's steady rate of questions, all its visitors together
    widget_key_burst: int = 30  # questions a key may get at once above that rate
    widget_ip_requests: int = 120  # questions and visitor tokens per source address per window
    widget_ip_window_s: int = 600
    widget_daily_model_calls: int = 2000  # questions a key gets answered by a model per UTC day; then extractive
    # `assist keys …` against a running engine (the local stack's URL, or the API's with an admin token)
    assist_url: str = ""
    assist_token: str | None = field(default=None, repr=False)

    # --- Logs ---------------------------------------------------------------------
    log_level: str = "INFO"
    log_format: str = "auto"  # auto | json | console
    in_cloud: bool = field(default=False)

    @property
    def light_model(self) -> str:
        return self.ollama_model_name_conversational or self.ollama_model_name

    @property
    def classifier_llm_model(self) -> str:
        return self.ollama_model_name_classifier or self.ollama_model_name

    @property
    def light_host(self) -> str:
        return self.ollama_host_conversational or self.ollama_host

    @property
    def classifier_registry(self) -> str | None:
        """The model registry's root when CLASSIFIER_MODEL_PATH is `<root>/current`: the classify path follows it."""
        path = self.classifier_model_path or ""
        if path == REGISTRY_POINTER:
            return "."
        if path.endswith("/" + REGISTRY_POINTER):
            return path[: -len(REGISTRY_POINTER) - 1] or "/"
        return None

    @property
    def session_backend(self) -> str:
        """`dynamodb` or `file`: SESSION_STORE, or for `auto` DynamoDB whenever AWS is configured (an
        endpoint, credentials, a region, a table name, or running in Lambda), else the embedded file."""
        if self.session_store != "auto":
            return self.session_store
        aws = self.aws_configured or self.aws_endpoint_url
        return "dynamodb" if aws else "file"

    @property
    def index_is_s3(self) -> bool:
        return self.index_uri.startswith("s3://")

    @property
    def emulator_keys(self) -> dict[str, str]:
        """The emulator's static keys, for boto3 and LanceDB; empty unless an endpoint is named and keys set
        (then every client passes them explicitly; otherwise each library's default chain finds them)."""
        if not (self.aws_endpoint_url and self.emulator_access_key_id and self.emulator_secret_access_key):
            return {}
        return {
            "aws_access_key_id": self.emulator_access_key_id,
            "aws_secret_access_key": self.emulator_secret_access_key,
        }

    def storage_options(self) -> dict[str, str]:
        """LanceDB/object_store options for an `s3://` index; empty for a local one. No credentials unless an
        emulator's: LanceDB's own default chain reads the environment (AWS_SESSION_TOKEN included), the
        container and instance endpoints, and refreshes what expires, as boto3 does."""
        if not self.index_is_s3:
            return {}
        opts = {"region": self.aws_region}
        if self.aws_endpoint_url:
            opts.update(endpoint=self.aws_endpoint_url, allow_http="true")
        return opts | self.emulator_keys

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in DERIVED or f.name in NOT_FROM_ENV:
                continue
            raw = env.get(_env_name(f.name))
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(f.name, f.type, raw)
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region and "aws_region" not in values:
            values["aws_region"] = region
        values["in_cloud"] = bool(env.get("AWS_LAMBDA_FUNCTION_NAME") or env.get("ASSIST_IN_CONTAINER"))
        values["ollama_host_explicit"] = "ollama_host" in values
        values["aws_configured"] = any(env.get(name) for name in AWS_SIGNALS)
        store = values["session_store"] = str(values.get("session_store", "auto")).strip().lower()
        if store not in SESSION_STORES:
            raise SettingsError(f"SESSION_STORE={store!r}: use one of {'|'.join(SESSION_STORES)}")
        unset = [f"JWT_{n}" for n in ("JWKS_URL", "ISSUER", "AUDIENCE") if not values.get(f"jwt_{n.lower()}")]
        if 0 < len(unset) < 3:  # a token checked without its issuer or audience would accept any app's tokens
            raise SettingsError(f"verified identity needs JWT_JWKS_URL, JWT_ISSUER and JWT_AUDIENCE: {unset} unset")
        if str(values.get("classifier_model_path", "")).lower() in NO_MODEL:
            values["classifier_model_path"] = None
        return cls(**values)

    def env_lines(self) -> dict[str, str]:
        """The variables another process needs to reach the same stack."""
        out = {
            "AWS_ENDPOINT_URL": self.aws_endpoint_url or "",
            "AWS_REGION": self.aws_region,
            "AWS_ACCESS_KEY_ID": self.emulator_access_key_id or "",
            "AWS_SECRET_ACCESS_KEY": self.emulator_secret_access_key or "",
            "BUCKET": self.bucket,
            "SESSIONS_TABLE": self.sessions_table,
            "INTENT_HISTORY_TABLE": self.intent_history_table,
            "IDEMPOTENCY_TABLE": self.idempotency_table,
            "WIDGET_TABLE": self.widget_table,
            "INDEX_URI": self.index_uri,
            "EMBED_MODEL_DIR": str(Path(self.embed_model_dir).resolve()),
            "CLASSIFIER_EXPORT_DIR": self.classifier_export_dir,
            "LOCAL_MODE": "true" if self.local_mode else "",
            "SESSION_STORE": "dynamodb" if self.aws_endpoint_url else "",
        }
        return {k: v for k, v in out.items() if v}


def _parse(name: str, typ: Any, raw: str) -> Any:
    t = str(typ)
    try:
        if "tuple" in t:
            return tuple(p.strip().lower() for p in raw.split("|") if p.strip())
        if t.startswith("float"):
            return float(raw)
        if t.startswith("int"):
            return int(raw)
        if t.startswith("bool"):
            return raw.strip().lower() in {"1", "true", "yes", "on"}
    except ValueError as exc:
        raise SettingsError(f"{_env_name(name)}={raw!r}: expected {t}") from exc
    return raw
