"""An OpenAPI spec, a git repository (Markdown, MDX, reST and code) and a PDF, indexed from one sources
file into a real LanceDB index: an operation is found by a question about its purpose, a code function
by a CODE_GENERATION request that needs it, and every answer's sources carry their URL."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from assist.ask.build import build_engine
from assist.aws.clients import client
from assist.build.run import sync_sources
from assist.contracts import AskRequest, QueryType
from assist.embed.base import Embedder
from assist.index.store import connect
from assist.settings import Settings
from assist.sources.resolve import load_file
from assist.sources.spec import SourceError, SourceSpec
from tests.support.pdf import one_page_pdf

pytestmark = pytest.mark.integration

SPEC = """
openapi: 3.0.3
info: {title: Billing API, version: "1.0"}
paths:
  /subscriptions/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}, description: The subscription id}
    delete:
      operationId: cancelSubscription
      summary: Cancel a subscription
      description: Stops renewal at the end of the current billing period; nothing is refunded.
      parameters:
        - {name: immediately, in: query, schema: {type: boolean}, description: End it now instead}
      responses:
        "200":
          description: The cancelled subscription
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Subscription"}
              example: {id: sub_1, status: cancelled}
  /invoices:
    get:
      operationId: listInvoices
      summary: List invoices
      description: Every invoice of the account, newest first, paginated by cursor.
      responses:
        "200": {description: A page of invoices}
    post:
      operationId: createInvoice
      summary: Create a draft invoice
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [customer]
              properties:
                customer: {type: string, description: The customer to bill}
                lines: {type: array, items: {$ref: "#/components/schemas/Line"}}
      responses:
        "201": {description: The draft invoice}
components:
  schemas:
    Subscription:
      type: object
      properties:
        id: {type: string}
        status: {type: string, enum: [active, cancelled, past_due]}
    Line:
      type: object
      properties:
        amount: {type: integer, description: In cents}
"""

CLIENT_PY = '''
"""A small client for the billing API."""

import hashlib
import hmac


def verify_webhook_signature(payload: bytes, header: str, secret: str) -> bool:
    """Check a webhook's HMAC-SHA256 signature header against the shared secret."""
    expected = hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256="))


def paginate(fetch, cursor=None):
    """Yield every item of a cursor-paginated listing."""
    while True:
        page = fetch(cursor)
        yield from page["items"]
        cursor = page.get("next")
        if not cursor:
            return
'''

RETRY_JS = """
export async function withRetry(call, attempts = 3) {
  for (let i = 0; i < attempts; i++) {
    try { return await call(); } catch (err) { await new Promise((r) => setTimeout(r, 2 ** i * 100)); }
  }
  throw new Error("gave up");
}
"""


def make_repo(root: Path) -> Path:
    (root / "sdk").mkdir(parents=True)
    (root / "sdk/client.py").write_text(CLIENT_PY)
    (root / "sdk/retry.js").write_text(RETRY_JS)
    (root / "guide.mdx").write_text(
        'import Tabs from "@theme/Tabs";\n\n# Webhooks\n\n<Tabs groupId="lang">\n'
        "Webhook deliveries are signed; verify them before trusting the payload.\n</Tabs>\n"
    )
    (root / "setup.rst").write_text("Setup\n=====\n\nInstall the SDK.\n\nProxies\n-------\n\nSet HTTPS_PROXY first.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00")  # not a source file: never read
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root


@pytest.fixture(scope="module")
def indexed(base_settings: Settings, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    tmp_path = tmp_path_factory.mktemp("kinds")
    (tmp_path / "billing.yaml").write_text(SPEC)
    make_repo(tmp_path / "repo")
    (tmp_path / "handbook.pdf").write_bytes(one_page_pdf("Refund policy: refunds are issued within 14 days."))
    (tmp_path / "sources.yaml").write_text(
        textwrap.dedent("""
        sources:
          - location: billing.yaml
            base_url: https://api.example.com/reference
            prefix: api/
          - location: repo
            base_url: https://github.com/acme/sdk/blob/main/{path}
          - handbook.pdf
        """)
    )
    s = base_settings.with_(index={"uri": str(tmp_path / "index")})
    result = sync_sources(load_file(tmp_path / "sources.yaml"), s, embedder, progress=False)
    assert [x["kind"] for x in result["sources"]] == ["openapi", "repo", "pdf"]
    return s


def test_operations_are_found_by_their_purpose(indexed: Settings, embedder: Embedder):
    from assist.retrieve.search import Retriever

    table = connect(indexed.index.uri).open_table(indexed.index.table)
    retriever = Retriever(table, embedder)
    for question, doc_id in [
        ("how do I stop a customer's plan from renewing?", "api/operations/cancelSubscription"),
        ("get all the bills of my account", "api/operations/listInvoices"),
    ]:
        top = retriever.search(question, k=3).chunks
        assert top[0].doc_id == doc_id, (question, [c.doc_id for c in top])
    top = retriever.search("how do I stop a customer's plan from renewing?", k=1).chunks[0]
    assert top.url == "https://api.example.com/reference#operation/cancelSubscription"
    assert "`DELETE /subscriptions/{id}`" in top.text or "immediately" in top.text


def test_code_generation_cites_the_function_it_needs(indexed: Settings, session_id: str):
    engine = build_engine(indexed, client("dynamodb", indexed))
    answer = engine.ask(
        AskRequest(
            session_id=session_id,
            message="Write a Flask handler that checks the HMAC signature of an incoming webhook before using it",
            query_type=QueryType.CODE_GENERATION,
        )
    )
    assert answer.route.type is QueryType.CODE_GENERATION
    assert answer.sources, answer
    assert all(s.url for s in answer.sources)
    top = answer.sources[0]
    assert (top.doc_id, top.heading) == ("sdk/client.py", "def verify_webhook_signature")
    assert top.url.startswith("https://github.com/acme/sdk/blob/main/sdk/client.py#L")


def test_repo_files_mdx_rst_and_pdf_keep_their_sections(indexed: Settings):
    table = connect(indexed.index.uri).open_table(indexed.index.table)
    rows = table.search().select(["doc_id", "heading", "text", "url"]).limit(None).to_list()
    by_doc = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    assert "logo" not in " ".join(by_doc)
    guide = " ".join(r["text"] for r in by_doc["guide"])
    assert "Webhook deliveries are signed" in guide
    assert "<Tabs" not in guide
    assert "import" not in guide
    assert {r["heading"] for r in by_doc["setup"]} == {"", "Proxies"}  # the title names the document
    assert any(r["url"] == "https://github.com/acme/sdk/blob/main/setup.rst#proxies" for r in by_doc["setup"])
    assert {r["heading"] for r in by_doc["sdk/retry.js"]} == {"function withRetry"}
    (pdf,) = by_doc["handbook"]
    assert "refunds are issued within 14 days" in pdf["text"]
    assert pdf["url"] == "handbook.pdf#page=1"  # its path in the folder, no build path (ADR 0112)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("openapi: 3.0.0\npaths: [1, 2]\n", "`paths` is missing or not a mapping"),
        ("swagger: '2.0'\npaths: {}\n", "not an OpenAPI 3 document"),
        ("openapi: 3.0.0\npaths:\n  /a: {get: {responses: {'200': {$ref: '#/nope'}}}}\n", "points at nothing"),
        ("openapi: [unclosed\n", "not YAML or JSON"),
    ],
)
def test_a_malformed_spec_is_refused_and_the_index_stays(
    indexed: Settings, embedder: Embedder, tmp_path: Path, text: str, message: str
):
    table = connect(indexed.index.uri).open_table(indexed.index.table)
    before = table.version
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(SourceError, match=message):
        sync_sources([SourceSpec(str(bad))], indexed, embedder, progress=False)
    assert connect(indexed.index.uri).open_table(indexed.index.table).version == before


def test_a_repository_is_cloned_from_what_git_clone_takes(indexed: Settings, embedder: Embedder, tmp_path: Path):
    repo = make_repo(tmp_path / "work")
    bare = tmp_path / "sdk.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    s = indexed.with_(index={"uri": str(tmp_path / "cloned")})
    result = sync_sources([SourceSpec(str(bare))], s, embedder, progress=False)
    assert result["sources"][0]["kind"] == "repo"
    table = connect(s.index.uri).open_table(s.index.table)
    assert {"sdk/client.py", "sdk/retry.js", "guide", "setup"} == {
        r["doc_id"] for r in table.search().select(["doc_id"]).limit(None).to_list()
    }
    with pytest.raises(SourceError, match="git clone failed"):
        sync_sources([SourceSpec(str(tmp_path / "nothing.git"))], s, embedder, progress=False)


def test_a_binary_file_in_a_folder_is_refused(indexed: Settings, embedder: Embedder, tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# Fine\n\ntext\n")
    (folder / "broken.md").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(SourceError, match=r"broken\.md: binary content"):
        sync_sources([SourceSpec(str(folder))], indexed, embedder, progress=False)
