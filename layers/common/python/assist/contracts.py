"""Typed contracts between the stages and at the HTTP boundary (DESIGN.md §3).

msgspec structs: validated on decode, cheap to encode, and small enough to import in every
function without a cold-start cost.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from assist.errors import AssistError

if TYPE_CHECKING:
    from assist.settings import Settings

SESSION_ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"
FEEDBACK_COMMENT_CHARS = 2000
#: a request, encoded, leaves Step Functions' 256 KB payload limit half free for the turn it becomes
#: (route, history, chunks, trace); not a setting, since the state machine's limit is not one
REQUEST_BYTES = 128 * 1024


class QueryType(StrEnum):
    RETRIEVAL = "RETRIEVAL"
    CODE_GENERATION = "CODE_GENERATION"
    CONVERSATIONAL = "CONVERSATIONAL"
    PLATFORM = "PLATFORM"

    @property
    def needs_retrieval(self) -> bool:
        return self in (QueryType.RETRIEVAL, QueryType.CODE_GENERATION)

    @property
    def model_slot(self) -> str:
        return "main" if self.needs_retrieval else "light"


class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    session_id: Annotated[str, msgspec.Meta(pattern=SESSION_ID_PATTERN)]
    message: Annotated[str, msgspec.Meta(min_length=1)]
    query_type: QueryType | None = None
    extra_context: str | None = None
    user_info: dict[str, Any] | None = None
    editor_content: str | None = None
    #: answer with the model even when the docs seem not to cover the question (the verdict is still recorded)
    force_answer: bool = False


class IntentEntry(msgspec.Struct):
    """One classified turn as the classifier sees it later: type and a 60-char topic."""

    type: QueryType
    topic: str
    layer: str = ""
    confidence: float = 0.0


class Route(msgspec.Struct):
    type: QueryType
    layer: str  # declared | rules | embedding | llm | fallback | default
    confidence: float
    reason: str
    model_slot: str
    model: str = ""
    retrieval_query: str | None = None
    #: the retrieval query in the index's language (a question in another language): see Engine._search
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


class CorpusMatch(msgspec.Struct, omit_defaults=True):
    """A question about the corpus itself (ADR 0042), as it travels between stages: ids, never text —
    the answer stage renders the manifest lines and fetches the named documents."""

    kind: str  # enumerate | count | existence | document
    subject: str = ""  # the identifier prefix or type asked about (`adr`), "" for all documents
    total: int = 0  # documents in the corpus
    matched: int = 0  # documents matching the subject (what a count answers)
    entries: list[str] = msgspec.field(default_factory=list)  # ids of the manifest entries given, in order
    documents: list[str] = msgspec.field(default_factory=list)  # named documents, given whole and first
    found_by: str = ""  # identifier | title: how the named documents were found
    mentioned: list[str] = msgspec.field(default_factory=list)  # identifiers in the question, as written
    missing: list[str] = msgspec.field(default_factory=list)  # ... of which no document has


class RetrievalResult(msgspec.Struct):
    chunks: list[Chunk]
    confidence: str  # very_high | high | medium | low | speculative | none
    query_kind: str = "hybrid"
    weights: dict[str, float] = msgspec.field(default_factory=dict)
    degraded: list[str] = msgspec.field(default_factory=list)
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


class Source(msgspec.Struct):
    id: str
    doc_id: str
    title: str
    heading: str
    score: float
    url: str = ""  # the page and section a reader can follow (ADR 0059)


class Stage(msgspec.Struct):
    name: str
    ms: float
    detail: dict[str, Any] = msgspec.field(default_factory=dict)


class Answer(msgspec.Struct):
    answer: str
    sources: list[Source]
    route: Route
    retrieval: dict[str, Any] | None
    degraded: list[str]
    trace: dict[str, Any]
    #: the session's turn number this answer was stored under (feedback names it)
    turn: int = 0
    #: the documentation does not cover the question (ADR 0055): the answer says so, no model was asked
    uncertain: bool = False
    #: why: no_relevant_passage | low_retrieval_confidence | out_of_scope (None when not uncertain)
    uncertain_reason: str | None = None


def to_builtins(obj: Any) -> Any:
    return msgspec.to_builtins(obj)


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
    degraded: list[str]
    created_at: str
    feedback: Feedback | None = None


class TranscriptIntent(msgspec.Struct):
    turn: int
    type: QueryType
    topic: str
    layer: str
    confidence: float


class Transcript(msgspec.Struct):
    """A session as its owner may read it back (no owner, no request ids)."""

    session_id: str
    turns: list[TranscriptTurn]
    intents: list[TranscriptIntent]


class InvalidRequest(AssistError, ValueError):
    """The request is well-formed JSON of the right shape but breaks a documented limit."""

    status = 400


def check_ask(req: AskRequest, settings: Settings) -> None:
    """Limits that depend on settings (the struct checks shape, types, patterns and enums), in characters
    for the texts and in encoded bytes for `user_info` and the whole request — checked before any work starts."""
    if not req.message.strip():
        raise InvalidRequest("message is blank: send the question text")
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
    whether the key's daily model budget still covers it (False: answered without a model, `budget`)."""

    key: str
    page: str | None = None
    models: bool = True


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
    uncertain_reason: str | None = None  # the retrieve stage's verdict (ADR 0055): None when the docs cover it
    deadline: float | None = None  # epoch seconds: every stage spends from the request's one budget (assist.deadline)
    site: Site | None = None  # a widget visitor's question: its site key and page, and whether a model may answer
    stages: list[dict[str, Any]] = msgspec.field(default_factory=list)
    degraded: list[str] = msgspec.field(default_factory=list)
