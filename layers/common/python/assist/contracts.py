"""Typed contracts between the stages and at the HTTP boundary (docs/architecture.md, docs/api.md).

msgspec structs: validated on decode, cheap to encode, and small enough to import in every
function without a cold-start cost. Every value set a stage decides and another compares — the
deciding layer, the retrieval confidence, the query kind, the degraded and uncertain reasons — is a
`StrEnum` here, once (ADR 0072): a member encodes as its plain string, so the wire is unchanged.
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

import msgspec
from msgspec import UNSET, UnsetType

from assist.errors import AssistError

if TYPE_CHECKING:
    from assist.settings import Settings

SESSION_ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"
FEEDBACK_COMMENT_CHARS = 2000
#: a request, encoded, leaves Step Functions' 256 KB payload limit half free for the turn it becomes
#: (route, history, chunks, trace); not a setting, since the state machine's limit is not one
REQUEST_BYTES = 128 * 1024
#: a scope value: a product or version name as a sources file and a page's address give it ("" = not set)
SCOPE_VALUE_PATTERN = r"^([A-Za-z0-9][A-Za-z0-9._-]{0,63})?$"
ScopeValue = Annotated[str, msgspec.Meta(pattern=SCOPE_VALUE_PATTERN)]


class QueryType(StrEnum):
    RETRIEVAL = "RETRIEVAL"
    CODE_GENERATION = "CODE_GENERATION"
    CONVERSATIONAL = "CONVERSATIONAL"
    PLATFORM = "PLATFORM"

    @property
    def needs_retrieval(self) -> bool:
        return self in (QueryType.RETRIEVAL, QueryType.CODE_GENERATION)

    @property
    def model_slot(self) -> Slot:
        return Slot.MAIN if self.needs_retrieval else Slot.LIGHT


class Slot(StrEnum):
    """The model slot a turn is answered by (docs/answering.md): `main` for documentation and code, `light` for
    conversation and account data."""

    MAIN = "main"
    LIGHT = "light"

    @property
    def order(self) -> list[Slot]:
        """The slots that may answer, in turn: a light slot that cannot falls back to main (`slot_fallback`)."""
        return [self] if self is Slot.MAIN else [self, Slot.MAIN]


class AnsweredBy(StrEnum):
    """Who wrote a turn's answer (the `generate` stage): a model slot, or no model at all."""

    MAIN = "main"
    LIGHT = "light"
    EXTRACTIVE = "extractive"  # no model could: the passages (or the conversation, the account data) quoted
    NOT_COVERED = "not_covered"  # the documentation does not cover it (ADR 0055): the fixed answer, no model asked


class AnsweredFrom(StrEnum):
    """What an answer written without a model quotes (the web chat's and the widget's notice say so)."""

    PASSAGES = "passages"
    MANIFEST = "manifest"
    CONVERSATION = "conversation"
    ACCOUNT_DATA = "account_data"


class QueryBy(StrEnum):
    """Who wrote the search query of a `rewrite` or `translate` stage."""

    LLM = "llm"
    HISTORY = "history"  # rewritten from the intent history, without a model
    NONE = "none"  # not translated: the model gave nothing


class CorpusKind(StrEnum):
    """What a question about the corpus itself asks (ADR 0042)."""

    ENUMERATE = "enumerate"
    COUNT = "count"
    EXISTENCE = "existence"
    DOCUMENT = "document"


class FoundBy(StrEnum):
    """How a corpus question's named documents were found."""

    NONE = ""  # none named
    IDENTIFIER = "identifier"
    TITLE = "title"


class Layer(StrEnum):
    """The routing layer that decided a turn's type (docs/routing.md)."""

    UNKNOWN = ""  # an intent history entry that does not say (a routing row's history, a turn stored before)
    DECLARED = "declared"  # the caller's `query_type`
    RULES = "rules"
    EMBEDDING = "embedding"
    LLM = "llm"
    FALLBACK = "fallback"  # no layer was sure: the history's type, else RETRIEVAL
    DEFAULT = "default"


class Confidence(StrEnum):
    """How sure the search is of its passages (docs/retrieval.md), strongest first."""

    VERY_HIGH = "very_high"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    SPECULATIVE = "speculative"
    NONE = "none"

    @property
    def weak(self) -> bool:
        """Too little to call the documentation's answer found (the insights page's gaps, the verdict's data)."""
        return self in (Confidence.LOW, Confidence.NONE)

    @property
    def loose(self) -> bool:
        """Found only by a fallback phase (typos forgiven, partial words)."""
        return self in (Confidence.LOW, Confidence.SPECULATIVE)


class QueryKind(StrEnum):
    """Which kind of search a query is (`retrieve/analysis.py`); `hybrid` when no analysis ran."""

    EXACT_QUOTE = "exact_quote"
    IDENTIFIER = "identifier"
    ENTITY = "entity"
    FACTUAL = "factual"
    CONCEPTUAL = "conceptual"
    EXPLORATORY = "exploratory"
    HYBRID = "hybrid"


class Degraded(StrEnum):
    """Why an answer is not what the engine was configured to give (docs/api.md, "The degraded list").
    A new reason is one member here and one row in that table."""

    LLM_UNAVAILABLE = "llm_unavailable"
    LLM_TIMEOUT = "llm_timeout"
    DEADLINE = "deadline"
    SLOT_FALLBACK = "slot_fallback"
    EMBEDDER_TIMEOUT = "embedder_timeout"
    EMBEDDER_UNAVAILABLE = "embedder_unavailable"
    INDEX_UNAVAILABLE = "index_unavailable"
    INDEX_TIMEOUT = "index_timeout"
    INDEX_LOADING = "index_loading"  # the first search of an index still being copied or opened missed its budget
    CORPUS_UNAVAILABLE = "corpus_unavailable"
    CLIENT_DISCONNECTED = "client_disconnected"
    RETRIEVE_FAILED = "retrieve_failed"
    CLASSIFY_FAILED = "classify_failed"
    ANSWER_FAILED = "answer_failed"
    CONTEXT_TRIMMED = "context_trimmed"  # the prompt left passages or turns out to fit the window (ADR 0079)
    CONTEXT_OVERFLOW = "context_overflow"  # the host cut a prompt longer than the window it was sent with
    ANSWER_TRUNCATED = "answer_truncated"  # the answer reached its output limit (num_predict)
    MODEL_MISSING = "model_missing"  # a host does not have the model a slot names (`ollama pull` it)
    BUDGET = "budget"  # a widget site key's daily model budget is spent: no model asked (ADR 0090)

    @property
    def without_model(self) -> bool:
        """The answer was written without a model."""
        return self in (Degraded.LLM_UNAVAILABLE, Degraded.LLM_TIMEOUT, Degraded.DEADLINE, Degraded.BUDGET)

    @property
    def without_index(self) -> bool:
        """The index could not be searched: nothing is known of what the documentation holds."""
        return self in (Degraded.INDEX_UNAVAILABLE, Degraded.INDEX_TIMEOUT, Degraded.INDEX_LOADING)


class UncertainReason(StrEnum):
    """Why the documentation does not cover a question (ADR 0055)."""

    NO_RELEVANT_PASSAGE = "no_relevant_passage"
    LOW_RETRIEVAL_CONFIDENCE = "low_retrieval_confidence"
    OUT_OF_SCOPE = "out_of_scope"
    MODEL_NOT_COVERED = "model_not_covered"  # the model said its sources do not answer (ADR 0083)


class Scope(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """The part of a documentation set a question is asked in (ADR 0121): a product, a version, or both. A value
    left "" is every one; a passage whose source sets no value is in every scope (a shared glossary)."""

    product: ScopeValue = ""
    version: ScopeValue = ""

    def __bool__(self) -> bool:
        return bool(self.product or self.version)

    def label(self) -> str:
        """`cli 2.1`, `cli`, `2.1`: how an answer names it."""
        return " ".join(v for v in (self.product, self.version) if v)


class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    session_id: Annotated[str, msgspec.Meta(pattern=SESSION_ID_PATTERN)]
    message: Annotated[str, msgspec.Meta(min_length=1)]
    query_type: QueryType | None = None
    extra_context: str | None = None
    user_info: dict[str, object] | None = None  # the platform's JSON about the user, passed on as given
    editor_content: str | None = None
    #: answer with the model even when the docs seem not to cover the question (the verdict is still recorded)
    force_answer: bool = False
    #: search only this part of the documentation (ADR 0121); a session remembers the last one it was given
    scope: Scope | None = None


class IntentEntry(msgspec.Struct):
    """One classified turn as the classifier sees it later: type and a 60-char topic."""

    type: QueryType
    topic: str
    layer: Layer = Layer.UNKNOWN
    confidence: float = 0.0


class Route(msgspec.Struct):
    type: QueryType
    layer: Layer
    confidence: float
    reason: str
    model_slot: Slot
    model: str = ""
    retrieval_query: str | None = None
    #: the retrieval query in the index's language (a question in another language): see Retriever.search
    lexical_query: str | None = None


class Chunk(msgspec.Struct):
    id: str
    doc_id: str
    title: str
    heading: str
    text: str
    score: float
    found_by: list[str] = msgspec.field(default_factory=list)
    agreement: int = 0
    url: str = ""  # the page and section a reader can follow (ADR 0059)
    #: the product and version its source gives it (ADR 0121); absent for a passage in every scope
    scope: Scope | UnsetType = UNSET

    @property
    def topic(self) -> str:
        """Its section as a reader names it (`title › heading`): a near miss's topic and its link's key (ADR 0055)."""
        return f"{self.title} › {self.heading}" if self.heading and self.heading != self.title else self.title


class CorpusMatch(msgspec.Struct, omit_defaults=True):
    """A question about the corpus itself (ADR 0042), as it travels between stages: ids, never text —
    the answer stage renders the manifest lines and fetches the named documents."""

    kind: CorpusKind
    subject: str = ""  # the identifier prefix or type asked about (`adr`), "" for all documents
    total: int = 0  # documents in the corpus
    matched: int = 0  # documents matching the subject (what a count answers)
    entries: list[str] = msgspec.field(default_factory=list)  # ids of the manifest entries given, in order
    documents: list[str] = msgspec.field(default_factory=list)  # named documents, given whole and first
    found_by: FoundBy = FoundBy.NONE  # how the named documents were found
    mentioned: list[str] = msgspec.field(default_factory=list)  # identifiers in the question, as written
    missing: list[str] = msgspec.field(default_factory=list)  # ... of which no document has


class RetrievalResult(msgspec.Struct):
    chunks: list[Chunk]
    confidence: Confidence
    query_kind: QueryKind = QueryKind.HYBRID
    weights: dict[str, float] = msgspec.field(default_factory=dict)
    degraded: list[Degraded] = msgspec.field(default_factory=list)
    #: hits per strategy that ran (`fts_exact`, `fts_relaxed`, `vector`, and fallback ones)
    strategies: dict[str, int] = msgspec.field(default_factory=dict)
    #: why the confidence is what it is, when a fallback phase or nothing answered
    note: str = ""
    #: topics to try instead, on a true miss (`confidence: none`)
    suggestions: list[str] = msgspec.field(default_factory=list)
    #: the best cosine similarity of any passage to the query, before the floor (None: no vector search ran)
    similarity: float | None = None
    #: the query's cosine to the mean of all passages: how near the corpus's subject it is (None: no vector search)
    centrality: float | None = None

    @classmethod
    def failed(cls, reason: Degraded) -> RetrievalResult:
        """A search that could not run (the index too slow or unavailable): no passages, and why."""
        return cls(chunks=[], confidence=Confidence.NONE, degraded=[reason])


class Source(msgspec.Struct):
    id: str
    doc_id: str
    title: str
    heading: str
    score: float
    url: str = ""  # the page and section a reader can follow (ADR 0059)
    #: a passage found for a question the docs seem not to cover, listed but not cited (ADR 0102); absent otherwise
    near_miss: bool | UnsetType = UNSET


class VerdictSignals(msgspec.Struct):
    """Does the documentation cover the question (ADR 0055), and the signals it was judged by (the `retrieve`
    stage's `verdict`): only the signals that were measured are present."""

    uncertain: bool
    unknown: list[str] | UnsetType = UNSET  # the question's terms the corpus never mentions
    reason: UncertainReason | UnsetType = UNSET
    similarity: float | UnsetType = UNSET
    centrality: float | UnsetType = UNSET
    coverage: float | UnsetType = UNSET
    absent: float | UnsetType = UNSET
    named: float | UnsetType = UNSET
    score: float | UnsetType = UNSET
    #: the threshold the score was held to: the index's calibrated one (ADR 0096) or the configured one
    threshold: float | UnsetType = UNSET
    forced: bool | UnsetType = UNSET  # uncertain, and answered anyway (`force_answer`)


class Asked(msgspec.Struct):
    """What a model call asked for (ADR 0078): thinking, the window and the output limit."""

    think: bool | str | None
    num_ctx: int
    num_predict: int


class PromptFit(msgspec.Struct):
    """A prompt against its budget (ADR 0079): its tokens, the limit, the window and output limit it was built for,
    the tokenizer that counted; what was left out to fit (passage ids, counts of document chunks and turns)."""

    tokens: int
    limit: int
    num_ctx: int
    num_predict: int
    tokenizer: str
    dropped: dict[str, list[str] | int] | UnsetType = UNSET


class Stage(msgspec.Struct, tag_field="name", kw_only=True):
    """The header of one stage of a turn in the trace (docs/api.md, "The trace object"): its `name` (the tag that
    says which stage's detail follows), milliseconds, the degraded reasons it added to the turn's, and whether
    its own work was skipped (no model asked: the turn's `degraded` or uncertain reason says why). Each stage's
    detail is a subclass below (ADR 0099); every field of it is in the JSON, `null` where the stage decided
    nothing of it, so the keys a client read before keep their meaning."""

    ms: float = 0.0
    degraded: list[Degraded] = msgspec.field(default_factory=list)
    skipped: bool = False

    @property
    def name(self) -> str:
        return self.__struct_config__.tag  # type: ignore[return-value]


class HistoryStage(Stage, tag="history", kw_only=True):
    entries: int = 0  # the intent history's turns read


class ClassifyStage(Stage, tag="classify", kw_only=True):
    type: QueryType | None = None
    layer: Layer | None = None
    confidence: float = 0.0  # the deciding layer's


class RewriteStage(Stage, tag="rewrite", kw_only=True):
    """The search query, rewritten from a message that leans on the history."""

    by: QueryBy = QueryBy.HISTORY
    query: str = ""


class TranslateStage(Stage, tag="translate", kw_only=True):
    """The search query in the index's language, for the full-text side (ADR 0038)."""

    source_language: str = msgspec.field(default="", name="from")
    to: str = ""
    by: QueryBy = QueryBy.NONE
    query: str | None = None  # None: the model gave no translation


class RetrieveStage(Stage, tag="retrieve", kw_only=True):
    n: int = 0
    confidence: Confidence = Confidence.NONE  # the search's
    query_kind: QueryKind = QueryKind.HYBRID
    strategies: dict[str, int] = msgspec.field(default_factory=dict)
    verdict: VerdictSignals | None = None  # does the documentation cover it (ADR 0055); None: not judged


class CorpusStage(Stage, tag="corpus", kw_only=True):
    """A question about the corpus itself (ADR 0042); the answer stage adds the budgets it used."""

    kind: CorpusKind = CorpusKind.ENUMERATE
    subject: str = ""
    matched: int = 0
    entries: int = 0  # manifest entries given
    documents: list[str] = msgspec.field(default_factory=list)
    found_by: FoundBy = FoundBy.NONE
    missing_ids: list[str] = msgspec.field(default_factory=list, name="missing")  # identifiers no document has
    corpus_chars: int | None = None  # None: the answer stage has not read the manifest (or could not)
    document_chunks: int | None = None
    document_chars: int | None = None


class MemoryStage(Stage, tag="memory", kw_only=True):
    turns: int = 0
    sources: int = 0


class GenerateStage(Stage, tag="generate", kw_only=True):
    slot: Slot | None = None  # None: no model was to be asked (the documentation does not cover it)
    model: str | None = None  # None: no model answered
    answered_by: AnsweredBy | None = None  # None: the reader left before the answer was done
    answered_from: AnsweredFrom | None = None  # what an answer without a model quotes
    lang: str | None = None  # the language an answer without a model was written in (its notice's)
    model_ms: float | None = None
    usage: dict[str, int | str] = msgspec.field(default_factory=dict)  # Ollama's token counts, durations, done_reason
    prompt: PromptFit | None = None
    asked: Asked | None = None
    forced: bool = False  # the model answered a question judged uncertain (`force_answer`)
    missing_models: list[str] = msgspec.field(default_factory=list, name="missing")  # models a host lacks
    verdict: UncertainReason | None = None  # the model's own (ADR 0083)


class PersistStage(Stage, tag="persist", kw_only=True):
    turn: int = 0
    written: bool = False


#: a stage of the trace, told apart by its `name`
AnyStage = Union[  # noqa: UP007 (a typing.Union: api/schema.py's plugin keys it by its name)
    HistoryStage,
    ClassifyStage,
    RewriteStage,
    TranslateStage,
    RetrieveStage,
    CorpusStage,
    MemoryStage,
    GenerateStage,
    PersistStage,
]


class Execution(msgspec.Struct):
    """The ask state machine execution that answered (`states`: on the local stack, those visited)."""

    arn: str
    states: list[str] | UnsetType = UNSET


class Trace(msgspec.Struct):
    request_id: str
    total_ms: float
    stages: list[AnyStage]
    history: list[str]  # the intent history the classifier saw, `[TYPE] "topic"`
    execution: Execution | UnsetType = UNSET
    error: str | UnsetType = UNSET  # the failed state machine step's error, in its degraded answer


class RetrievalInfo(msgspec.Struct):
    """What an answer says of its search (the passages themselves are its `sources`)."""

    confidence: Confidence
    query_kind: QueryKind
    weights: dict[str, float]
    n: int
    strategies: dict[str, int]
    note: str | UnsetType = UNSET
    suggestions: list[str] | UnsetType = UNSET

    @classmethod
    def of(cls, r: RetrievalResult) -> RetrievalInfo:
        return cls(
            confidence=r.confidence,
            query_kind=r.query_kind,
            weights=r.weights,
            n=len(r.chunks),
            strategies=r.strategies,
            note=r.note or UNSET,
            suggestions=r.suggestions or UNSET,
        )


class Answer(msgspec.Struct):
    answer: str
    sources: list[Source]
    route: Route
    retrieval: RetrievalInfo | None
    degraded: list[Degraded]
    trace: Trace
    #: the session's turn number this answer was stored under (feedback names it)
    turn: int = 0
    #: the documentation does not cover the question (ADR 0055): the answer says so, no model was asked
    uncertain: bool = False
    #: why (None when not uncertain)
    uncertain_reason: UncertainReason | None = None


def to_builtins(obj: Any) -> Any:
    return msgspec.to_builtins(obj)


# -- the answer's events (ADR 0105) -------------------------------------------------------------------------------
# One generator yields them (ask/answering.py): the stream (`/v1/ask/stream`, the OpenAI stream) renders each as it
# comes, `Engine.answer` keeps the `DoneEvent`'s answer. On the wire an event is its `name` and one JSON object:
# the fields, with those of its `inline` field spread first (docs/api.md, "Streaming").


class PassageSource(Source):
    """A source with the passage it stands for: what the answer is built from, for a reader to see."""

    passage: str | UnsetType = UNSET  # unset in a replayed answer's route event (its record keeps no passages)


class Event(msgspec.Struct):
    name: ClassVar[str]
    inline: ClassVar[str | None] = None  # the field whose keys the wire spreads into the event's own


class RouteEvent(Event):
    """The route, at once, before the model is read: the sources the model will see, and the turn's verdict."""

    name: ClassVar[str] = "route"
    inline: ClassVar[str | None] = "route"
    route: Route
    sources: list[PassageSource]
    degraded: list[Degraded]
    uncertain: bool | UnsetType = UNSET  # unset in a replayed answer's route event, as recorded
    uncertain_reason: UncertainReason | UnsetType | None = UNSET


class TokenEvent(Event):
    """A piece of the answer's text, in order: the pieces joined are the answer."""

    name: ClassVar[str] = "token"
    text: str


class ThinkingEvent(Event):
    """A piece of the model's own reasoning (a slot that thinks), shown apart from the answer."""

    name: ClassVar[str] = "thinking"
    text: str


class DoneEvent(Event):
    """The turn, written: its whole answer, and the model's figures."""

    name: ClassVar[str] = "done"
    inline: ClassVar[str | None] = "answer"
    answer: Answer
    usage: dict[str, int | str] | UnsetType = UNSET  # unset when replayed from a record made by /v1/ask


class ErrorEvent(Event):
    """The stream failed after its status line was sent (`detail`: what a caller may read)."""

    name: ClassVar[str] = "error"
    detail: str


#: what the answer stage yields, in order: route, thinking and tokens, done
AnswerEvent = RouteEvent | TokenEvent | ThinkingEvent | DoneEvent


def on_wire(event: Event) -> tuple[str, dict[str, Any]]:
    """The event's name and its JSON object, as every stream carries it."""
    fields = msgspec.to_builtins(event)
    if event.inline is None:
        return event.name, fields
    return event.name, {**fields.pop(event.inline), **fields}


class FeedbackRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A person's verdict on one answer: thumbs up or down, and optionally the type it should have had."""

    rating: Literal["up", "down"]
    type: QueryType | None = None
    comment: Annotated[str, msgspec.Meta(max_length=FEEDBACK_COMMENT_CHARS)] | None = None


class Feedback(msgspec.Struct, omit_defaults=True):
    """Feedback as stored on the turn and shown in its transcript."""

    rating: str
    at: str
    type: QueryType | None  # the type the person says the question was (None: they did not say)
    comment: str | None = None


class TranscriptTurn(msgspec.Struct):
    turn: int
    message: str
    answer: str
    type: QueryType
    sources: list[str]
    degraded: list[Degraded]
    created_at: str
    feedback: Feedback | None = None


class TranscriptIntent(msgspec.Struct):
    """A stored intent-history entry, as the store reads it back and a transcript shows it."""

    turn: int
    type: QueryType
    topic: str
    layer: Layer
    confidence: float


class Transcript(msgspec.Struct):
    """A session as its owner may read it back (no owner, no request ids)."""

    session_id: str
    turns: list[TranscriptTurn]
    intents: list[TranscriptIntent]


class InvalidRequest(AssistError, ValueError):
    """The request is well-formed JSON of the right shape but breaks a documented limit."""

    status = 400


#: what shows nothing: controls, format characters (U+200B, U+FEFF, U+2060…), separators, marks with no base,
#: unassigned and private code points
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"})
#: letters and symbols drawn as blanks (Hangul fillers, the braille blank)
BLANK_CHARACTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(text: str) -> bool:
    """Whether `text` shows anything: a message of only zero-width or blank characters asks nothing."""
    return any(c not in BLANK_CHARACTERS and unicodedata.category(c) not in INVISIBLE_CATEGORIES for c in text)


def check_ask(req: AskRequest, settings: Settings) -> None:
    """Limits that depend on settings (the struct checks shape, types, patterns and enums), in characters
    for the texts and in encoded bytes for `user_info` and the whole request — checked before any work starts."""
    if not visible(req.message):
        raise InvalidRequest("message is blank (no visible character): send the question text")
    for name, limit in (
        ("message", settings.api.max_message_chars),
        ("extra_context", settings.api.max_extra_context_chars),
        ("editor_content", settings.api.max_editor_content_chars),
    ):
        text = getattr(req, name)
        if text is not None and len(text) > limit:
            raise InvalidRequest(f"{name} is {len(text)} characters; the limit is {limit}")
    if req.user_info is not None and (n := len(msgspec.json.encode(req.user_info))) > settings.api.max_user_info_bytes:
        raise InvalidRequest(f"user_info is {n} bytes as JSON; the limit is {settings.api.max_user_info_bytes}")
    if (n := len(msgspec.json.encode(req))) > REQUEST_BYTES:
        raise InvalidRequest(
            f"the request is {n // 1024} KB encoded; the limit is {REQUEST_BYTES // 1024} KB: "
            "shorten editor_content, extra_context or user_info"
        )


class Exchange(msgspec.Struct):
    """An earlier turn of the session, as a CONVERSATIONAL answer remembers it."""

    message: str
    answer: str
    sources: list[str] = msgspec.field(default_factory=list)


class Site(msgspec.Struct, omit_defaults=True):
    """Where a widget visitor's question comes from (docs/widget.md): the site key, the page it was asked on, and
    whether its turn may still ask a model: False once a model call found the key's daily budget spent (each call
    counts, ADR 0092); the turn then asks none, its answer extractive with `budget`."""

    key: str
    page: str | None = None
    models: bool = True
    #: the scope the turn searches: the key's fixed scope, narrowed by the visitor's own (ADR 0121)
    scope: Scope | None = None


class TurnState(msgspec.Struct):
    """A turn between stages: what Classify hands to Retrieve and Answer (and Step Functions carries).

    Chunks are trimmed before they travel, so the payload stays far below 256 KB.
    """

    request: AskRequest
    request_id: str
    started_at: float
    owner: str = "anonymous"
    history: list[IntentEntry] = msgspec.field(default_factory=list)
    conversation: list[Exchange] = msgspec.field(default_factory=list)  # kept for CONVERSATIONAL turns only
    memory: list[Chunk] | None = None  # CONVERSATIONAL: the passages cited in `conversation`, once looked up
    turn: int = 0
    route: Route | None = None
    retrieval: RetrievalResult | None = None
    corpus: CorpusMatch | None = None  # a question about the corpus itself
    uncertain_reason: UncertainReason | None = None  # the retrieve stage's verdict (ADR 0055): None when covered
    deadline: float | None = None  # epoch seconds: every stage spends from the request's one budget (assist.deadline)
    site: Site | None = None  # a widget visitor's question: its site key and page, and whether a model may answer
    #: what the turn searches (ADR 0121): the request's scope, else the one its session was last given
    scope: Scope | None = None
    #: a scoped question its scope does not cover: passages of another scope that do, linked, never cited
    elsewhere: list[Chunk] = msgspec.field(default_factory=list)
    stages: list[AnyStage] = msgspec.field(default_factory=list)
    degraded: list[Degraded] = msgspec.field(default_factory=list)

    @property
    def budget_spent(self) -> bool:
        """A widget site key's daily model budget is spent: the turn asks no model anything (ADR 0090)."""
        return self.site is not None and not self.site.models
