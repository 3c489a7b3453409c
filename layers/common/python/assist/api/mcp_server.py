"""The MCP server (official `mcp` SDK): the docs as tools for coding agents — `search_docs`,
`get_document`, `list_documents` and `ask` — over stdio (`assist mcp`) and streamable HTTP at
`/mcp` (the local stack, the answer container). Translation only: the tools call the retriever
and the engine (`ask` answers as /v1/ask does); see docs/ways-in.md and ADR 0047.

Over HTTP the server is stateless and answers plain JSON (no MCP session, no SSE): any instance
of a short-lived function can serve any call, and a buffering proxy passes it unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from assist.api.answers import cited, engine_fields
from assist.api.identity import OWNER_SCOPE_KEY
from assist.contracts import Answer, AskRequest, InvalidRequest, Scope
from assist.errors import AssistError, problem
from assist.index import lance
from assist.index.manifest import in_scope
from assist.index.scope import parse as parse_scope
from assist.index.scope import scoped
from assist.retrieve.documents import list_documents as listing
from assist.retrieve.documents import whole_document

if TYPE_CHECKING:
    from assist.ask.engine import Engine

MAX_K = 20
DOCUMENT_BUDGET_CHARS = 60_000  # a long document is cut at a passage boundary past this, and says so

INSTRUCTIONS = (
    "Documentation assistant for a developer platform. search_docs is fast and stores nothing: use it to find "
    "passages you will read and reason over yourself. ask runs the whole assistant (classification, retrieval, "
    "a language model) and returns a written, cited answer; it remembers a conversation by session_id. "
    "get_document and list_documents read whole documents and the list of them."
)
SEARCH_DOCS = (
    "Search the platform's documentation; returns the k best passages (id, doc_id, 'title › heading', text, "
    "score, url: the page to link) and the retrieval's confidence (very_high … none). Use it when you want the "
    "source text itself: to find where something is documented, quote it, or gather context before writing code. "
    "Fast (no language model), stores nothing. A passage's doc_id opens the whole document with get_document. "
    "Low or none confidence means the docs may not cover it: try other words (see suggestions) before concluding."
)
GET_DOCUMENT = (
    "Read one whole document by its doc_id (from search_docs or list_documents) or an identifier it is cited by "
    "(e.g. ADR-12, resolved as search_docs resolves it): its sections in order, each "
    "with its heading and text. Use it after search_docs when a passage lacks the surrounding context. Very long "
    "documents are cut at a section boundary (truncated: true)."
)
LIST_DOCUMENTS = (
    "List the documents in the documentation corpus: doc_id and title, with type, label (e.g. ADR.12) and key "
    "front-matter fields such as status when the corpus manifest has them, optionally only those whose doc_id, "
    "title or type contains `filter` (case-insensitive). Use it to see what exists, to count documents, or to "
    "find a doc_id "
    "by name; use search_docs to find documents by what they say."
)
#: every tool's optional scope (ADR 0121)
ScopeArg = Annotated[
    str | None, Field(description="product=NAME,version=V (either or both): only that part of the documentation")
]
ASK = (
    "Ask the documentation assistant and get a finished answer in prose, with its sources cited as [1], [2] "
    "and listed, plus the route it took (type, which layer decided, confidence) and anything degraded. Use it "
    "for a direct answer or explanation rather than raw passages, for follow-up questions (pass back the "
    "session_id of the previous answer: the assistant remembers the conversation) and for code written from the "
    "docs. Slower than search_docs (a language model writes the answer) and each call is a stored turn."
)


# 98 lines: the MCP tools are closures over the engine, registered on one server whose SDK reads their signatures
def build_server(
    engine: Engine, run_ask: Callable[[AskRequest, str], Answer] | None = None, owner: str = "anonymous"
) -> MCPServer:
    """`run_ask(request, owner)` answers `ask` (default: the engine in-process); `owner` is the caller
    where the transport names none (stdio)."""
    settings = engine.settings
    answer_with = run_ask or (lambda req, who: engine.ask(req, owner=who))
    server = MCPServer("assist", instructions=INSTRUCTIONS, version="1.0.0", log_level="WARNING")

    @server.tool(description=SEARCH_DOCS)
    def search_docs(
        query: Annotated[str, Field(min_length=1, description="what to look for, in words or an identifier")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many passages")] = 5,
        scope: ScopeArg = None,
    ) -> dict[str, Any]:
        _check_text("query", query, settings.api.max_message_chars)
        within = _scope(scope)
        result = _index_call(lambda: engine.retriever().search(query, k=k, scope=within))
        out = {
            "confidence": result.confidence,
            "query_kind": result.query_kind,
            "passages": [
                {
                    "id": c.id,
                    "doc_id": c.doc_id,
                    "title": f"{c.title} › {c.heading}" if c.heading and c.heading != c.title else c.title,
                    "text": c.text,
                    "score": c.score,
                    "url": c.url,
                }
                for c in result.chunks
            ],
            "degraded": result.degraded,
        }
        return out | {k: v for k, v in (("note", result.note), ("suggestions", result.suggestions)) if v}

    @server.tool(description=GET_DOCUMENT)
    def get_document(
        doc_id: Annotated[
            str, Field(min_length=1, description="a doc_id (e.g. from search_docs) or an identifier such as ADR-12")
        ],
        scope: ScopeArg = None,
    ) -> dict[str, Any]:
        retriever = engine.retriever()
        table = scoped(retriever.table, _scope(scope))
        # an identifier names the document the ranking puts first for it (the one Manifest, ADR 0062)
        doc_id = _index_call(lambda: retriever.catalog().document(doc_id)) or doc_id
        chunks = _index_call(lambda: whole_document(table, doc_id, DOCUMENT_BUDGET_CHARS))
        if not chunks:
            where = f"the scope {scope}" if scope else "the index"
            raise ToolError(f"no document {doc_id!r} in {where}: list_documents shows the doc_ids")
        # count_rows takes SQL text only: the expression renders it, quoting the id
        total = _index_call(lambda: table.count_rows(lance.doc_id_is(doc_id).to_sql()))
        return {
            "doc_id": doc_id,
            "title": chunks[0].title,
            "sections": [{"id": c.id, "heading": c.heading, "text": c.text, "url": c.url} for c in chunks],
            "truncated": len(chunks) < total,
        }

    @server.tool(description=LIST_DOCUMENTS)
    def list_documents(
        filter: Annotated[
            str | None, Field(description="keep documents whose doc_id, title or type contains this")
        ] = None,
        scope: ScopeArg = None,
    ) -> dict[str, Any]:
        within = _scope(scope)
        entries = engine.manifest()
        entries = in_scope(entries, within) if entries is not None else None
        docs = _index_call(lambda: listing(scoped(engine.retriever().table, within), filter or "", entries))
        return {"count": len(docs), "documents": docs}

    @server.tool(description=ASK)
    def ask(
        message: Annotated[str, Field(min_length=1, description="the question or request, in the user's words")],
        ctx: Context,
        session_id: Annotated[
            str | None, Field(description="continue this conversation (from a previous answer); omit to start one")
        ] = None,
        scope: ScopeArg = None,
    ) -> dict[str, Any]:
        session = session_id or f"mcp-{uuid.uuid4().hex}"
        within = _scope(scope)
        try:
            body = {"session_id": session, "message": message, "scope": msgspec.to_builtins(within)}
            req = msgspec.convert(body, AskRequest)
            answer = answer_with(req, _owner(ctx, owner))
        except msgspec.ValidationError as exc:
            raise ToolError(f"session_id must be 1-128 of letters, digits and _ . : - ({exc})") from exc
        except AssistError as exc:
            raise ToolError(problem(exc)["detail"]) from exc
        return {
            "answer": answer.answer + cited(answer.sources),
            **msgspec.to_builtins(engine_fields(answer, session, trace=False)),
        }

    return server


def _scope(text: str | None) -> Scope | None:
    try:
        return parse_scope(text) if text else None
    except InvalidRequest as exc:
        raise ToolError(str(exc)) from exc


def _owner(ctx: Context, default: str) -> str:
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    return scope.get(OWNER_SCOPE_KEY, default)


def _check_text(name: str, text: str, limit: int) -> None:
    if not text.strip():
        raise ToolError(f"{name} is blank")
    if len(text) > limit:
        raise ToolError(f"{name} is {len(text)} characters; the limit is {limit}")


def _index_call(call: Callable[[], Any]) -> Any:
    """An index failure is the tool's error, said plainly (the server stays up)."""
    try:
        return call()
    except Exception as exc:
        raise ToolError(f"the documentation index is unavailable: {type(exc).__name__}") from exc


def session_manager(server: MCPServer, local: bool) -> Any:
    """The streamable HTTP transport's session manager (stateless, JSON replies); its `run()` must be
    entered before it serves. On loopback the SDK checks Host and Origin (DNS rebinding); elsewhere
    the caller is authenticated before /mcp."""
    # Built for its session manager: the manager's handler is served at /mcp by our app, not Starlette's.
    server.streamable_http_app(stateless_http=True, json_response=True, host="127.0.0.1" if local else "0.0.0.0")  # noqa: S104 - not a bind
    return server.session_manager
