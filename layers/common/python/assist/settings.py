"""The one place that reads the environment.

Every other module receives a `Settings` (or the section it needs) as an argument, so tests build one
explicitly and nothing depends on process-global state.

`Settings` is one frozen msgspec struct of sections, one per component (`settings.ollama.host`,
`settings.index.uri`, `settings.retrieve.top_k`…). msgspec parses the values (ADR 0075); the environment
variable of a field is its section's prefix plus the field's name in upper case (`Ollama`'s prefix is
`OLLAMA_`, so `timeout_s` reads `OLLAMA_TIMEOUT_S`), or the name given with `msgspec.field(name=...)` where
a variable predates its section (`Export.threshold` reads `CLASSIFIER_EXPORT_THRESHOLD`).

Adding a setting is one line in its section, a default and a type that says how the value is parsed:

    think: bool = False  # in `Ollama`: OLLAMA_THINK, true/false (also 1/0, yes/no, on/off)

`int`, `float`, `str`, `bool`, `X | None`, `Literal[...]` (case-insensitive) and `tuple[str, ...]`
(`|`-separated, trimmed, lower-cased) are understood; a value that does not parse stops start-up with a
`SettingsError` naming the variable. Then document the variable in docs/configuration.md and README.md
(tests/unit/test_settings.py holds both to every variable). A field set in-process, never from the
environment, goes into its section's `not_from_env`; a secret into its `secret` (left out of `repr`).
Overrides, in tests and tools: `settings.with_(ollama={"host": url}, index={"uri": path})`.
"""

from __future__ import annotations

import os
import tempfile
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec

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
_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})


class SettingsError(AssistError, ValueError):
    """An environment variable holds a value we cannot use."""


#: a visitor-token signing key's least length: HS256's own; a shorter key can be searched offline from any token,
#: and tokens are free to get (ADR 0093)
MIN_KEY_BYTES = 32
#: a key of random bytes has about as many distinct ones as its length allows (32 base64 characters: ~25 on
#: average, fewer than 16 about never); "aaaa…" or a repeated word has a handful
MIN_DISTINCT_BYTES = 16


class WeakKey(SettingsError):
    """A signing key shorter than MIN_KEY_BYTES, or with fewer than MIN_DISTINCT_BYTES distinct bytes; the message
    names where it came from."""


def check_strength(key: str, source: str) -> str:
    """The key, when at least MIN_KEY_BYTES long and not made of a few repeated bytes; a WeakKey naming `source`
    (the variable, the secret) otherwise."""
    raw = key.encode()
    make = "(make one: openssl rand -base64 48)"
    if len(raw) < MIN_KEY_BYTES:
        raise WeakKey(
            f"{source} is {len(raw)} bytes: a visitor-token signing key must be at least {MIN_KEY_BYTES} random "
            f"bytes, or anyone can recover it from a token and sign their own {make}"
        )
    if (distinct := len(set(raw))) < MIN_DISTINCT_BYTES:
        raise WeakKey(
            f"{source} has {distinct} distinct bytes: a visitor-token signing key must be random, with at least "
            f"{MIN_DISTINCT_BYTES} distinct bytes; a repeated pattern is guessed from a token {make}"
        )
    return key


def _prefixed(prefix: str) -> Callable[[str], str]:
    """The variable of each field: the section's prefix and the field's name in upper case."""
    return lambda name: prefix + name.upper()


class Section(msgspec.Struct, frozen=True, kw_only=True):
    """One component's settings. Subclasses name their variables with `rename=_prefixed("PREFIX_")`."""

    #: fields set in-process (derived from the environment, or static keys for an emulator): never read
    not_from_env: ClassVar[frozenset[str]] = frozenset()
    #: fields left out of `repr`, so they never reach a log line
    secret: ClassVar[frozenset[str]] = frozenset()

    def __repr__(self) -> str:
        shown = (f"{f}={getattr(self, f)!r}" for f in self.__struct_fields__ if f not in self.secret)
        return f"{type(self).__name__}({', '.join(shown)})"


#: a `think` setting: a boolean or a level, for the models that take one (ADR 0078)
Think = Literal["false", "true", "low", "medium", "high"]


class Ollama(Section, frozen=True, kw_only=True, rename=_prefixed("OLLAMA_")):
    host: str = "http://127.0.0.1:11434"
    host_conversational: str | None = None  # the light slot may live on another host
    model_name: str = "qwen3:1.7b"
    model_name_conversational: str | None = None  # unset: the light slot uses main
    model_name_classifier: str | None = None  # unset: the LLM classifier uses the main model
    timeout_s: float = 60.0
    connect_timeout_s: float = 2.0
    warm_up: bool = False  # load both slot models when a container starts
    api_key: str | None = None  # bearer token for a proxy in front of Ollama
    # True only when OLLAMA_HOST was set: the LLM classifier layer runs only then, so an
    # engine without Ollama never waits on a connection refused at every ambiguous message.
    host_explicit: bool = False
    # what each call asks of the model (ADRs 0077–0079): the window (options.num_ctx, never above the model's
    # trained length), the answer's output limit (options.num_predict) and thinking (sent only to a model with
    # the `thinking` capability); per slot, the light one's defaulting to its own
    num_ctx: int = 8192
    num_ctx_conversational: int = 0  # 0: = OLLAMA_NUM_CTX
    num_predict: int = 1024
    num_predict_conversational: int = 512
    think: Think = "false"
    think_conversational: Think = "false"
    rewrite_think: Think = msgspec.field(default="false", name="REWRITE_THINK")  # the search-query calls
    # a tokenizer.json counting prompt tokens; "": the qwen3 one beside the embedding model (ADR 0079)
    prompt_tokenizer: str = msgspec.field(default="", name="PROMPT_TOKENIZER")

    not_from_env: ClassVar[frozenset[str]] = frozenset({"host_explicit"})
    secret: ClassVar[frozenset[str]] = frozenset({"api_key"})

    @property
    def light_num_ctx(self) -> int:
        return self.num_ctx_conversational or self.num_ctx

    def num_ctx_for(self, host: str, model: str) -> int:
        """The window for a call to `model` on `host`: the slot's that serves it there, so the classifier and the
        search-query calls never ask a loaded model for another window (Ollama reloads it for that: ADR 0079)."""
        light, main = (self.light_host, self.light_model), (self.host, self.model_name)
        return self.light_num_ctx if (host, model) == light != main else self.num_ctx

    @property
    def light_model(self) -> str:
        return self.model_name_conversational or self.model_name

    @property
    def light_host(self) -> str:
        return self.host_conversational or self.host

    @property
    def classifier_model(self) -> str:
        return self.model_name_classifier or self.model_name


class Classifier(Section, frozen=True, kw_only=True, rename=_prefixed("CLASSIFIER_")):
    confidence_threshold: float = 0.85
    model_path: str | None = DEFAULT_CLASSIFIER_MODEL  # None (or "none"): no embedding layer
    reload_s: float = 60.0  # a registry's `current` pointer is checked at most this often
    llm_timeout_s: float = 5.0  # the LLM classifier's whole budget, retry included
    llm_think: Think = "false"  # the LLM classifier's call: a label needs no reasoning (ADR 0078)
    platform_prefixes: tuple[str, ...] = msgspec.field(default=DEFAULT_PLATFORM_PREFIXES, name="PLATFORM_PREFIXES")

    @property
    def registry(self) -> str | None:
        """The model registry's root when CLASSIFIER_MODEL_PATH is `<root>/current`: the classify path follows it."""
        path = self.model_path or ""
        if path == REGISTRY_POINTER:
            return "."
        if path.endswith("/" + REGISTRY_POINTER):
            return path[: -len(REGISTRY_POINTER) - 1] or "/"
        return None


class Export(Section, frozen=True, kw_only=True, rename=_prefixed("EXPORT_")):
    """The label export (classified turns as training data)."""

    threshold: int = msgspec.field(default=500, name="CLASSIFIER_EXPORT_THRESHOLD")  # new sessions per export
    dir: str = msgspec.field(default=".assist/labels", name="CLASSIFIER_EXPORT_DIR")
    settle_s: float = 60.0  # entries younger than this wait for the next export (index lag)
    hash_key: str = "assist-local-export-key"  # HMAC key of session hashes
    hash_key_secret: str | None = None  # a Secrets Manager secret holding the key, read at run time (ADR 0065)
    hash_key_cache_s: float = 300.0  # the secret's value is kept this long in a warm process

    secret: ClassVar[frozenset[str]] = frozenset({"hash_key"})


class Embed(Section, frozen=True, kw_only=True, rename=_prefixed("EMBED_")):
    embedder: str = msgspec.field(
        default="minilm", name="EMBEDDER"
    )  # "minilm", "minilm-int8" (local ONNX) or "ollama:<model>"
    model_dir: str = ".assist/models/all-MiniLM-L6-v2"
    # ONNX Runtime's threads per process; 0: its own choice (the cores it sees). A build's N local workers take
    # the CPUs this process may use, divided among them (ADR 0120)
    threads: int = 0


class Index(Section, frozen=True, kw_only=True, rename=_prefixed("INDEX_")):
    uri: str = ".assist/index"
    table: str = "chunks"
    language: str = "en"  # the docs' language: a question in another gets a translated full-text query
    # published index versions (ADR 0067): readers re-read the live pointer this often; the gate's relevance set
    refresh_s: float = 60.0
    # an index on S3 is read from a local copy of its published version (ADR 0095): "copy", or "s3" to read S3
    # directly (an index too big for the disk); the copy's directory and the function's ephemeral storage
    # (template `EphemeralStorageMB`), which a copy must fit; unset dir: the system's temporary directory (/tmp)
    read: Literal["copy", "s3"] = "copy"
    copy_dir: str = ""
    ephemeral_mb: int = 512
    gate_queries: str = ""  # queries.jsonl ({_id, text}); with the qrels, `--publish` runs the gate
    gate_qrels: str = ""  # qrels TSV (query-id, corpus-id = the index's document ids, score)
    gate_margin: float = 0.02  # a version whose nDCG@10 is below the live one's by more is refused
    vector_index_rows: int = 20_000  # from this many chunks on, vector search uses an IVF index (ADR 0020)
    # a build's shards hold at most this many chunks (ADR 0120): one worker's share, about 50 s of one core
    shard_chunks: int = 512
    build_concurrency: int = 10  # the index state machine's workers at once (its Distributed Map's MaxConcurrency)
    fts_options: tuple[str, ...] = ("stem", "remove_stop_words", "ascii_folding")  # FTS tokenizer (ADR 0020)

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    @property
    def copies(self) -> Path:
        """Where local copies of published versions go (ADR 0095): Lambda's ephemeral storage is /tmp."""
        return Path(self.copy_dir) if self.copy_dir else Path(tempfile.gettempdir()) / "assist-index"


class Retrieve(Section, frozen=True, kw_only=True, rename=_prefixed("RETRIEVE_")):
    top_k: int = 5
    timeout_s: float = 5.0  # past this the answer goes on without passages (`index_timeout`)
    # the first search of a process also copies or opens the index: its budget, within the request's deadline
    # (past it: `index_loading`)
    cold_timeout_s: float = 25.0
    embed_timeout_ms: float = 300.0  # past this the search is full-text only (`embedder_timeout`)
    similarity_floor: float = 0.2  # vector-only candidates less similar than this are dropped
    agreement_bonus: float = 0.2  # fused score × (1 + bonus) for a chunk every strategy found
    semantic_weight: float = 0.5  # vector's share against relaxed full text in the fusion (ADR 0039)
    exact_weight: float = 0.2  # the exact full-text list's weight on top (ADR 0039)
    hub_damping: float = 0.5  # a document referencing the whole corpus keeps 1 − this of its score
    mmr_lambda: float = 1.0  # MMR relevance/diversity trade-off; 1 = fused order (measured best)
    corpus_chars: int = 12_000  # corpus questions: manifest lines given to the model, at most (ADR 0042)
    document_chars: int = 16_000  # a named document's text given whole up to this (ADR 0042)


class Uncertain(Section, frozen=True, kw_only=True, rename=_prefixed("UNCERTAIN_")):
    """A RETRIEVAL question is out of scope (no model call) when similarity + centrality weight × centrality
    + coverage weight × coverage − absent weight × absent − named weight × named is below the threshold
    (ADR 0055; the defaults are fitted on three development corpora, each also left out of the fit: ADR 0082).
    An index calibrated when it was built (ADR 0096) brings its own threshold for these weights."""

    threshold: float = 0.3645
    centrality_weight: float = 1.5
    coverage_weight: float = 0.0
    absent_weight: float = 0.25
    named_weight: float = 0.7
    #: compute the threshold from the corpus when it is indexed, and judge by it (ADR 0096); off: the threshold above
    calibrate: bool = True
    calibration_target: float = 0.05  # the answerable false-flag rate the calibrated threshold aims at …
    calibration_confidence: float = 0.9  # … held with this probability over the probes drawn


class Sources(Section, frozen=True, kw_only=True, rename=_prefixed("SOURCES_")):
    """Docs sites, OpenAPI, repositories, PDF (ADR 0058–0060)."""

    file: str = ""  # a YAML list of sources for one index (`assist index --sources`, the sync function)
    # where a folder's files are published (`{path}` or a prefix); "": each file's path in the folder (ADR 0112)
    docs_base_url: str = msgspec.field(default="", name="DOCS_BASE_URL")


class Crawl(Section, frozen=True, kw_only=True, rename=_prefixed("CRAWL_")):
    concurrency: int = 4  # requests in flight to one site at once
    delay_s: float = 0.1  # each request slot waits this long before its next request (unless robots asks more)
    max_pages: int = 2000  # a site with more pages than this is refused, not cut short
    max_page_bytes: int = 2_000_000  # a page, spec or file larger than this is refused
    timeout_s: float = 20.0  # per request
    user_agent: str = "assist-docs-indexer/0.1"


class Aws(Section, frozen=True, kw_only=True, rename=_prefixed("AWS_")):
    endpoint_url: str | None = None
    region: str = "us-east-1"  # AWS_REGION, else AWS_DEFAULT_REGION
    bucket: str = msgspec.field(default="assist-data", name="BUCKET")
    # static keys for an emulator (moto), only with endpoint_url. Real credentials come from boto3's (and
    # LanceDB's) default chain, which also reads AWS_SESSION_TOKEN, profiles, and the container/instance
    # endpoints, and refreshes them (ADR 0048).
    emulator_access_key_id: str | None = None
    emulator_secret_access_key: str | None = None
    # True when the environment names AWS (any of AWS_SIGNALS): SESSION_STORE=auto then means DynamoDB
    configured: bool = False

    not_from_env: ClassVar[frozenset[str]] = frozenset(
        {"emulator_access_key_id", "emulator_secret_access_key", "configured"}
    )
    secret: ClassVar[frozenset[str]] = frozenset({"emulator_access_key_id", "emulator_secret_access_key"})

    @property
    def emulator_keys(self) -> dict[str, str]:
        """The emulator's static keys, for boto3 and LanceDB; empty unless an endpoint is named and keys set
        (then every client passes them explicitly; otherwise each library's default chain finds them)."""
        if not (self.endpoint_url and self.emulator_access_key_id and self.emulator_secret_access_key):
            return {}
        return {
            "aws_access_key_id": self.emulator_access_key_id,
            "aws_secret_access_key": self.emulator_secret_access_key,
        }


class Sessions(Section, frozen=True, kw_only=True, rename=_prefixed("SESSION_")):
    """Sessions and intent history: DynamoDB tables, or one SQLite file (ADR 0044)."""

    table: str = msgspec.field(default="assist-sessions", name="SESSIONS_TABLE")
    intent_history_table: str = msgspec.field(default="assist-intent-history", name="INTENT_HISTORY_TABLE")
    store: Literal["auto", "dynamodb", "file"] = "auto"  # auto: DynamoDB when AWS is configured
    store_file: str = ".assist/sessions.sqlite3"
    ttl_days: int = 30


class Idempotency(Section, frozen=True, kw_only=True, rename=_prefixed("IDEMPOTENCY_")):
    """Idempotency-Key (ADR 0049): answers remembered per caller, route and key."""

    table: str = "assist-idempotency"  # DynamoDB; the embedded store keeps them in its own file
    ttl_s: int = 3600  # a key is remembered this long after its answer
    wait_s: float = 25.0  # a retry arriving while the first request runs waits this long for it
    lock_s: float = 150.0  # a claim whose request died is free again after this (> every timeout)


class Api(Section, frozen=True, kw_only=True, rename=_prefixed("")):
    ask_state_machine_arn: str | None = None  # set: POST /v1/ask runs the ask state machine (the Ask function)
    local_mode: bool = False  # set by `assist local up`: accepts the X-Assist-User dev header
    trusted_identity_header: str | None = None  # a container behind an authenticating proxy
    max_message_chars: int = 8000
    max_extra_context_chars: int = 16000
    max_editor_content_chars: int = 32000
    max_user_info_bytes: int = 8192  # user_info encoded as JSON
    max_body_bytes: int = 1_048_576  # any request body, as sent, before it is decoded (ADR 0043)
    # a request's whole budget, every stage included (API Gateway closes at 30 s)
    deadline_s: float = msgspec.field(default=28.0, name="API_DEADLINE_S")


class Jwt(Section, frozen=True, kw_only=True, rename=_prefixed("JWT_")):
    """Verified identity (ADR 0050): with JWT_JWKS_URL set, the caller is the `sub` of a verified bearer token."""

    jwks_url: str | None = None
    issuer: str | None = None
    audience: str | None = None


class Insights(Section, frozen=True, kw_only=True, rename=_prefixed("INSIGHTS_")):
    scope: str = "assist/admin"  # the token scope GET /insights requires (ADR 0066)
    max_entries: int = 50_000  # the insights page reads at most this many history entries (newest days first)


class VisitorLimits(msgspec.Struct, frozen=True, kw_only=True, rename=_prefixed("WIDGET_")):
    """The widget's limits, named here once (ADR 0106): the deployment's defaults (the `Widget` section's
    WIDGET_* variables), each site key's own (`widget/store/store.Limits`, unset where the key did not choose),
    the limits in force (`widget/gate.effective_limits`) and `assist keys create`'s options are these fields."""

    visitor_questions: int = 20  # questions per visitor per window
    visitor_window_s: int = 600
    key_rate_per_s: float = 2.0  # a key's steady rate of questions, all its visitors together
    key_burst: int = 30  # questions a key may get at once above that rate
    ip_requests: int = 120  # requests per source address per window: tokens, questions, history, feedback
    ip_window_s: int = 600
    new_visitors: int = 20  # new visitor ids an address gets per address window
    daily_model_calls: int = 2000  # model calls (any stage's) a key's visitors make per UTC day; then none


class Widget(Section, VisitorLimits, frozen=True, kw_only=True, rename=_prefixed("WIDGET_")):
    """The embeddable widget: site keys, visitor tokens, abuse limits (docs/widget.md, ADRs 0087-0091); each site
    key's limits default to the `VisitorLimits` this section inherits, unless the key sets its own."""

    table: str = "assist-widget"  # DynamoDB: site keys and counters (the embedded store keeps them in its file)
    # the HMAC key of visitor tokens (32 bytes at least); unset: WIDGET_TOKEN_KEY_SECRET's, else one made once and
    # kept beside the embedded store's file or in a secret named after the widget table (widget/signing.py)
    token_key: str | None = None
    token_key_previous: str | None = None  # the key it replaced: verifies for one token life after start-up
    token_key_secret: str | None = None  # a Secrets Manager secret holding it (AWSPREVIOUS verifies too)
    token_key_cache_s: float = 300.0  # the key is read again this often: a rotation reaches a warm process
    token_ttl_s: int = 1800  # a visitor token's life; the widget renews it (same visitor) before it ends
    key_cache_s: float = 30.0  # a process re-reads a site key this often: a revoked key stops within it
    stream_url: str = ""  # where the widget streams answers when not from widget.js's origin (AWS: the URL)
    # where a request's address is read (ADRs 0092, 0117): "socket" (the peer; behind mangum, the event's sourceIp),
    # "lambda-web-adapter" (the x-amzn-request-context header the adapter sets, `http.sourceIp`): only a process
    # behind the adapter may trust that header, a client can send one too; "cloudfront": as the adapter's, then,
    # when that address is one of `trusted_proxies` (CloudFront's), the CloudFront-Viewer-Address header
    address_from: Literal["socket", "lambda-web-adapter", "cloudfront"] = "socket"
    # proxies (CIDRs): in socket mode those whose X-Forwarded-For entries are trusted (empty: never read); with
    # cloudfront, CloudFront's origin-facing ranges, whose CloudFront-Viewer-Address is believed
    trusted_proxies: tuple[str, ...] = ()
    ipv6_prefix: int = 64  # an IPv6 address counts by this prefix: the block one subscriber may pick addresses in

    secret: ClassVar[frozenset[str]] = frozenset({"token_key", "token_key_previous"})


class Remote(Section, frozen=True, kw_only=True, rename=_prefixed("ASSIST_")):
    """`assist keys …` against a running engine (the local stack's URL, or the API's with an admin token)."""

    url: str = ""
    token: str | None = None

    secret: ClassVar[frozenset[str]] = frozenset({"token"})


class Logs(Section, frozen=True, kw_only=True, rename=_prefixed("LOG_")):
    # unset: WARNING at a terminal, INFO where a machine reads the log (`logs.level_for`); `assist -v` sets INFO
    level: str = ""
    format: Literal["auto", "json", "console"] = "auto"
    # True when AWS_LAMBDA_FUNCTION_NAME or ASSIST_IN_CONTAINER is set
    in_cloud: bool = False

    not_from_env: ClassVar[frozenset[str]] = frozenset({"in_cloud"})


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    ollama: Ollama = msgspec.field(default_factory=Ollama)
    classifier: Classifier = msgspec.field(default_factory=Classifier)
    export: Export = msgspec.field(default_factory=Export)
    embed: Embed = msgspec.field(default_factory=Embed)
    index: Index = msgspec.field(default_factory=Index)
    retrieve: Retrieve = msgspec.field(default_factory=Retrieve)
    uncertain: Uncertain = msgspec.field(default_factory=Uncertain)
    sources: Sources = msgspec.field(default_factory=Sources)
    crawl: Crawl = msgspec.field(default_factory=Crawl)
    aws: Aws = msgspec.field(default_factory=Aws)
    sessions: Sessions = msgspec.field(default_factory=Sessions)
    idempotency: Idempotency = msgspec.field(default_factory=Idempotency)
    api: Api = msgspec.field(default_factory=Api)
    jwt: Jwt = msgspec.field(default_factory=Jwt)
    insights: Insights = msgspec.field(default_factory=Insights)
    widget: Widget = msgspec.field(default_factory=Widget)
    remote: Remote = msgspec.field(default_factory=Remote)
    logs: Logs = msgspec.field(default_factory=Logs)

    @property
    def session_backend(self) -> str:
        """`dynamodb` or `file`: SESSION_STORE, or for `auto` DynamoDB whenever AWS is configured (an
        endpoint, credentials, a region, a table name, or running in Lambda), else the embedded file."""
        if self.sessions.store != "auto":
            return self.sessions.store
        aws = self.aws.configured or self.aws.endpoint_url
        return "dynamodb" if aws else "file"

    def storage_options(self) -> dict[str, str]:
        """LanceDB/object_store options for an `s3://` index; empty for a local one. No credentials unless an
        emulator's: LanceDB's own default chain reads the environment (AWS_SESSION_TOKEN included), the
        container and instance endpoints, and refreshes what expires, as boto3 does."""
        if not self.index.is_s3:
            return {}
        opts = {"region": self.aws.region}
        if self.aws.endpoint_url:
            opts.update(endpoint=self.aws.endpoint_url, allow_http="true")
        return opts | self.aws.emulator_keys

    def with_(self, **sections: Section | Mapping[str, Any]) -> Settings:
        """A copy with some fields changed: `with_(index={"uri": path}, logs={"level": "WARNING"})`, each section
        given as its changed fields (an unknown field is a TypeError) or as a whole section."""
        changed = {
            name: change if isinstance(change, Section) else msgspec.structs.replace(getattr(self, name), **change)
            for name, change in sections.items()
        }
        return msgspec.structs.replace(self, **changed)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        s = cls(**{f.name: _read(f.type, env) for f in msgspec.structs.fields(cls)})
        changes: dict[str, dict[str, Any]] = {
            "ollama": {"host_explicit": bool(env.get("OLLAMA_HOST"))},
            "aws": {"configured": any(env.get(name) for name in AWS_SIGNALS)},
            "logs": {"in_cloud": bool(env.get("AWS_LAMBDA_FUNCTION_NAME") or env.get("ASSIST_IN_CONTAINER"))},
        }
        if not env.get("AWS_REGION") and env.get("AWS_DEFAULT_REGION"):
            changes["aws"]["region"] = env["AWS_DEFAULT_REGION"]
        if str(s.classifier.model_path).lower() in NO_MODEL:
            changes["classifier"] = {"model_path": None}
        unset = [name for name in ("JWT_JWKS_URL", "JWT_ISSUER", "JWT_AUDIENCE") if not env.get(name)]
        if 0 < len(unset) < 3:  # a token checked without its issuer or audience would accept any app's tokens
            raise SettingsError(f"verified identity needs JWT_JWKS_URL, JWT_ISSUER and JWT_AUDIENCE: {unset} unset")
        for name in ("WIDGET_TOKEN_KEY", "WIDGET_TOKEN_KEY_PREVIOUS"):
            if value := env.get(name):
                check_strength(value, name)
        return s.with_(**changes)

    def env_lines(self) -> dict[str, str]:
        """The variables another process needs to reach the same stack."""
        out = {
            "AWS_ENDPOINT_URL": self.aws.endpoint_url or "",
            "AWS_REGION": self.aws.region,
            "AWS_ACCESS_KEY_ID": self.aws.emulator_access_key_id or "",
            "AWS_SECRET_ACCESS_KEY": self.aws.emulator_secret_access_key or "",
            "BUCKET": self.aws.bucket,
            "SESSIONS_TABLE": self.sessions.table,
            "INTENT_HISTORY_TABLE": self.sessions.intent_history_table,
            "IDEMPOTENCY_TABLE": self.idempotency.table,
            "WIDGET_TABLE": self.widget.table,
            "INDEX_URI": self.index.uri,
            "EMBED_MODEL_DIR": str(Path(self.embed.model_dir).resolve()),
            "CLASSIFIER_EXPORT_DIR": self.export.dir,
            "LOCAL_MODE": "true" if self.api.local_mode else "",
            "SESSION_STORE": "dynamodb" if self.aws.endpoint_url else "",
        }
        return {k: v for k, v in out.items() if v}


def variables() -> dict[str, str]:
    """Every variable `Settings.from_env` reads, with the field it sets: {"OLLAMA_HOST": "ollama.host", …}."""
    return {
        f.encode_name: f"{section.name}.{f.name}"
        for section in msgspec.structs.fields(Settings)
        for f in msgspec.structs.fields(section.type)
        if f.name not in section.type.not_from_env
    }


def _read(section: type[Section], env: Mapping[str, str]) -> Section:
    """One section from the environment: each variable that is set and not empty, parsed by its field's type."""
    values = {}
    for f in msgspec.structs.fields(section):
        raw = env.get(f.encode_name)
        if raw is None or raw == "" or f.name in section.not_from_env:
            continue
        try:
            values[f.name] = msgspec.convert(_shape(raw, f.type), f.type, strict=False)
        except (msgspec.ValidationError, ValueError) as exc:
            raise SettingsError(f"{f.encode_name}={raw!r}: expected {_describe(f.type)}") from exc
    return section(**values)


def _shape(raw: str, typ: Any) -> Any:
    """What msgspec's lax conversion takes for a variable's text: lists split on `|`, flags and choices
    trimmed and lower-cased, the words yes/no/on/off as flags."""
    if typing.get_origin(typ) is tuple:
        return [p.strip().lower() for p in raw.split("|") if p.strip()]
    if typ is bool:
        word = raw.strip().lower()
        if word not in _TRUE | _FALSE:
            raise ValueError(word)
        return word in _TRUE
    if typing.get_origin(typ) is Literal:
        return raw.strip().lower()
    return raw


def _describe(typ: Any) -> str:
    if typ is bool:
        return "true or false (1/0, yes/no, on/off)"
    if typing.get_origin(typ) is Literal:
        return "one of " + "|".join(typing.get_args(typ))
    names = [getattr(t, "__name__", str(t)) for t in (typing.get_args(typ) or (typ,)) if t is not type(None)]
    return " or ".join(names)
