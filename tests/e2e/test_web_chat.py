"""The web chat in a real browser: Debian's Chromium, driven by Playwright, against `assist local up`
and the Ollama test server (a token delay, so the streaming is observable).

Skipped, saying why, where the machine has no Chromium or no Playwright (`make setup` installs both
where it runs as root with apt-get). Playwright never downloads a browser here: it launches
/usr/bin/chromium.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from assist.aws.clients import client
from assist.contracts import IntentEntry, QueryType
from assist.sessions.dynamodb import DynamoDBStore
from assist.sessions.items import Turn
from assist.settings import Settings
from tests.conftest import DOCS, ROOT
from tests.e2e.test_local_stack import ASSIST, stop
from tests.e2e.test_local_stack import start as start_stack

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTION = "How does the engine decide that a message is about billing?"
ANSWER = (
    "The engine does not look for the word billing [1]. It routes each message through layers, "
    "cheapest first: rules, then the `embedding` classifier, then the LLM [1]."
)
SHOWN = ANSWER.replace("`", "")  # `embedding` is shown as code
DOCS_IMAGES = ROOT / "docs/images"
WIDE, NARROW = {"width": 1280, "height": 1000}, {"width": 360, "height": 780}

# When a reader saw things, in the page's clock: the badge's type, the answer's first text, and how
# many times the answer's text changed before it was complete (more than once: it streamed in).
OBSERVER = """
window.__seen = {textChanges: 0};
let lastText = "";
new MutationObserver(() => {
  const answer = document.querySelector('.turn:last-child .answer');
  if (!answer) return;
  const now = performance.now();
  const text = answer.querySelector('.text').textContent;
  if (window.__seen.badge === undefined && answer.querySelector('.type').dataset.type) window.__seen.badge = now;
  if (window.__seen.text === undefined && text.trim()) window.__seen.text = now;
  if (text !== lastText && answer.dataset.state === 'streaming') window.__seen.textChanges += 1;
  lastText = text;
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


@pytest.fixture
def sync_api():
    if not CHROMIUM.exists():
        pytest.skip(f"no {CHROMIUM}: `make setup` installs Debian's chromium where it runs as root with apt-get")
    return pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra pins it)")


def cached_stack(cwd: Path, docs_index, ollama) -> contextlib.AbstractContextManager[str]:
    """The local stack on the tests' cached index, answering through the Ollama test server; yields its URL."""
    return answering_stack(cwd, ollama, "--index", docs_index.index.uri)


@contextlib.contextmanager
def answering_stack(cwd: Path, ollama, *extra: str, docs: Path | None = DOCS) -> Iterator[str]:
    """`assist local up` (`extra` its arguments beside `--docs docs`), answering through the Ollama test server;
    yields its URL."""
    proc, base = start_stack(
        cwd,
        *extra,
        docs=docs,
        OLLAMA_HOST=ollama.url,
        OLLAMA_MODEL_NAME="main-model:1b",
        OLLAMA_MODEL_NAME_CONVERSATIONAL="light-model:0.5b",
    )
    try:
        yield base
    finally:
        code, _, err = stop(proc)
        assert code == 0, err[-2000:]


@pytest.fixture
def stack(tmp_path, docs_index, ollama):
    with cached_stack(tmp_path, docs_index, ollama) as base:
        yield base


@pytest.fixture
def browser(sync_api, tmp_path):
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh user-data-dir
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=WIDE,
        )
        try:
            yield context
        finally:
            context.close()


def ask_in(page, stack: str, session_id: str, question: str, user: str = "ada") -> None:
    """Open the chat on a session, name the user, send one question."""
    page.goto(f"{stack}/#session={session_id}")
    page.get_by_label("Name").fill(user)
    page.get_by_label("Name").press("Tab")
    page.get_by_label("Your message").fill(question)
    page.get_by_label("Your message").press("Enter")


def test_a_question_streams_after_its_route_cites_sources_and_keeps_feedback(
    sync_api, stack, browser, ollama, session_id, tmp_path
):
    expect = sync_api.expect
    ollama.reply(ANSWER, model="main-model:1b")
    ollama.first_token_delay_s = 0.4  # the route must reach the reader before the model starts
    ollama.token_delay_s = 0.03
    page = browser.new_page()
    page.add_init_script(OBSERVER)
    ask_in(page, stack, session_id, QUESTION)

    answer = page.locator(".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    seen = page.evaluate("window.__seen")
    assert seen["badge"] < seen["text"], seen
    assert seen["text"] - seen["badge"] >= 250, f"the badge must show before the model's first token: {seen}"
    assert seen["textChanges"] > 3, f"the answer must stream in, not arrive whole: {seen}"
    assert answer.locator(".type").inner_text() == "RETRIEVAL"
    expect(answer.locator(".slot")).to_have_text("main slot · main-model:1b")
    assert answer.locator(".text").text_content() == SHOWN
    expect(answer.locator(".text code")).to_have_text("embedding")
    expect(answer.locator(".text a.cite").first).to_have_text("[1]")

    sources = answer.locator(".sources li")
    assert sources.count() >= 1
    expect(sources.first.locator("summary")).to_contain_text(" › ")
    passage = sources.first.locator(".passage")
    expect(passage).to_be_hidden()
    answer.locator(".text a.cite").first.click()  # a citation opens its source
    expect(passage).to_be_visible()
    assert len(passage.inner_text()) > 40
    stages = answer.locator(".waterfall li")
    assert stages.count() >= 4
    expect(stages.last).to_contain_text("persist")

    answer.get_by_role("button", name="Not helpful").click()
    expect(answer.locator(".saved")).to_have_text("Thanks, saved")
    answer.get_by_label("Wrong kind of answer?").select_option("CODE_GENERATION")
    expect(answer.locator(".saved")).to_have_text("Saved: should have been CODE_GENERATION")
    expect(answer.get_by_role("button", name="Not helpful")).to_have_attribute("aria-pressed", "true")
    page.screenshot(path=tmp_path / "chat.png")

    fits_narrow(page, tmp_path / "chat-360.png")

    page.reload()
    stored = page.locator(".turn .answer").last
    expect(stored).to_have_attribute("data-state", "done", timeout=10_000)
    expect(page.locator(".turn .question")).to_have_text([QUESTION])
    assert stored.locator(".text").text_content() == SHOWN
    expect(stored.get_by_role("button", name="Not helpful")).to_have_attribute("aria-pressed", "true")
    expect(stored.get_by_role("button", name="Helpful", exact=True)).to_have_attribute("aria-pressed", "false")
    expect(stored.get_by_label("Wrong kind of answer?")).to_have_value("CODE_GENERATION")
    transcript = httpx.get(f"{stack}/v1/sessions/{session_id}", headers={"x-assist-user": "ada"}, timeout=10).json()
    assert transcript["turns"][0]["feedback"]["rating"] == "down"
    assert transcript["turns"][0]["feedback"]["type"] == "CODE_GENERATION"

    # Shift+Enter is a new line, Enter sends; without a model the answer says so in plain words
    ollama.set_down()
    message = page.get_by_label("Your message")
    message.fill("Where is the index stored?")
    message.press("Shift+Enter")
    assert message.input_value() == "Where is the index stored?\n"
    expect(page.locator(".turn")).to_have_count(1)
    message.press("Enter")
    second = page.locator(".turn .answer").nth(1)
    expect(second).to_have_attribute("data-state", "done", timeout=30_000)
    expect(second.locator(".degraded li[data-code=llm_unavailable]")).to_contain_text("No language model was reachable")
    expect(second.locator(".sources li").first).to_be_visible()

    # New chat starts an empty session; Back returns to this one, read back from the server
    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".turn")).to_have_count(0)
    assert session_id not in page.url
    page.go_back()
    expect(page.locator(".turn .question")).to_have_text([QUESTION, "Where is the index stored?"])

    refresh_docs_images(tmp_path, "chat.png", "chat-360.png")


def fits_narrow(page, shot: Path) -> None:
    """At 360 px the page does not scroll sideways; its top is photographed, then the wide view comes back."""
    page.set_viewport_size(NARROW)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360, "no sideways scrolling at 360 px"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=shot)
    page.set_viewport_size(WIDE)


def refresh_docs_images(folder: Path, *names: str) -> None:
    """The docs pages show what the tests saw; refreshed on request, so a test run leaves the tree clean."""
    if os.environ.get("ASSIST_UPDATE_SCREENSHOTS"):
        DOCS_IMAGES.mkdir(exist_ok=True)
        for name in names:
            shutil.copyfile(folder / name, DOCS_IMAGES / name)


def watch(page) -> tuple[list[str], list[str]]:
    """The page's console errors and uncaught exceptions, and its reads of a session's history."""
    errors: list[str] = []
    reads: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: reads.append(r.url) if r.method == "GET" and "/v1/sessions/" in r.url else None)
    return errors, reads


def ask_and_wait(sync_api, page, message: str):
    page.get_by_label("Your message").fill(message)
    page.get_by_label("Your message").press("Enter")
    answer = page.locator(".turn .answer").last
    sync_api.expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    return answer


def adr_titles() -> list[str]:
    """Each ADR's title as the chat shows it (its first heading; `code` shown without backticks)."""
    return [
        next(x[2:].strip() for x in p.read_text().splitlines() if x.startswith("# ")).replace("`", "")
        for p in sorted((DOCS / "adr").glob("[0-9]*.md"))
    ]


def test_a_new_visitor_asks_about_the_corpus_in_spanish_and_english_without_a_model(
    sync_api, stack, browser, ollama, tmp_path
):
    expect = sync_api.expect
    ollama.set_down()
    page = browser.new_page()
    errors, reads = watch(page)
    page.goto(stack + "/")  # a fresh profile: a new session the page makes up, with no history to read
    expect(page.locator("#session")).to_contain_text("Session ")
    expect(page.locator("#empty")).to_be_visible()

    answer = ask_and_wait(sync_api, page, "¿Cuántos ADR hay?")
    text = answer.locator(".text").inner_text()
    titles = adr_titles()
    assert text.startswith("El modelo de lenguaje no está disponible, así que esta respuesta sale de la lista"), text
    assert f"Hay {len(titles)} documentos ADR en el índice:" in text
    # in order, each once, as many as the list's budget holds; the rest said to be left out
    shown = [t for t in titles if t in text]
    assert shown == titles[: len(shown)], text
    assert all(text.count(title) == 1 for title in shown), text
    if len(shown) < len(titles):
        assert text.endswith(f"(Solo se listan aquí los {len(shown)} primeros.)"), text
    expect(answer.locator(".slot")).to_have_text("no model answered")
    notice = answer.locator(".degraded li[data-code=llm_unavailable]")  # in the answer's language
    expect(notice).to_contain_text("enumera los documentos a partir de la lista del propio índice (su manifiesto)")
    expect(notice).not_to_contain_text("pasajes")
    page.evaluate("window.scrollTo(0, 0)")  # the question and the first lines of its answer
    page.screenshot(path=tmp_path / "chat-corpus.png")
    fits_narrow(page, tmp_path / "chat-corpus-360.png")

    # New chat: an empty session, again with no history read; an English list answer in English
    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".turn")).to_have_count(0)
    listing = ask_and_wait(sync_api, page, "List all ADRs").locator(".text").inner_text()
    assert listing.startswith("The language model is unavailable, so this answer comes from the index's list")
    assert f"The index has these {len(titles)} ADR documents:" in listing
    listed = [t for t in titles if t in listing]
    assert listed == shown
    assert all(listing.count(title) == 1 for title in listed)
    if len(listed) < len(titles):
        assert listing.endswith(f"(Only the first {len(listed)} are listed here.)"), listing
    # a plain documentation question without a model quotes passages, and the notice says so
    passages = ask_and_wait(sync_api, page, "¿Dónde se guarda el índice?")
    assert passages.locator(".text").inner_text().startswith("El modelo de lenguaje no está disponible, así que estos")
    expect(passages.locator(".degraded li")).to_contain_text("cita los pasajes más relevantes de la documentación")
    assert reads == [], f"a new session needs no history request: {reads}"
    assert errors == [], errors
    refresh_docs_images(tmp_path, "chat-corpus.png", "chat-corpus-360.png")


def stack_settings(cwd: Path) -> Settings:
    """The running stack's settings, as `assist local env` prints them for another process."""
    out = subprocess.run([str(ASSIST), "local", "env"], cwd=cwd, capture_output=True, text=True, check=True).stdout
    env = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export "))
    # a process that exported these would hand the keys to boto3's chain; in this one they are the emulator's
    keys = {
        "emulator_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "emulator_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
    }
    return Settings.from_env(env).with_(aws=keys)


WEEK = {
    QueryType.RETRIEVAL: ["How does the router decide the type?", "Where is the index stored?"],
    QueryType.CODE_GENERATION: ["Write a script that asks a question over HTTP", "Fix my streaming client"],
    QueryType.CONVERSATIONAL: ["Say that in fewer words", "What was my first question?"],
    QueryType.PLATFORM: ["How many requests did I make this month?", "What plan am I on?"],
}
GAPS = ["How do I export invoices to SAP?", "Can invoices go to SAP every night?", "Is there an SAP invoice export?"]


def a_week_of_questions(s: Settings, owner: str) -> int:
    """Questions on each of the last eight UTC days (today and the seven before), every type, a few gaps;
    written as the engine writes its turns (a turn number, then both items), back-dated. Returns how many."""
    ddb = client("dynamodb", s)
    store = DynamoDBStore(ddb, s.sessions.table, s.sessions.intent_history_table, s.sessions.ttl_days)
    now = datetime.now(UTC)
    types = list(WEEK)
    written = 0
    for day in range(7, -1, -1):
        for k in range(2 + (day * 3) % 5):
            kind = types[(day + k) % 4]
            gap = kind is QueryType.RETRIEVAL and k % 3 == 0
            message = GAPS[day % 3] if gap else WEEK[kind][k % 2]
            searched = kind in (QueryType.RETRIEVAL, QueryType.CODE_GENERATION)
            turn = Turn(
                session_id=f"week-{day}",
                number=k + 1,
                request_id=f"week-{day}-{k}",
                message=message,
                answer="…",
                entry=IntentEntry(kind, message[:60], ["rules", "embedding", "embedding", "llm"][k % 4], 0.9),
                owner=owner,
                degraded=["llm_timeout"] if k == 3 else [],
                retrieval_confidence=("low" if gap else "high") if searched else None,
            )
            assert store.begin_turn(turn.session_id, owner) == turn.number
            at = now - timedelta(days=day) + timedelta(minutes=k + 1) if day else now - timedelta(minutes=k + 1)
            for table, item in zip(
                (s.sessions.table, s.sessions.intent_history_table), store.items(turn, at=at), strict=True
            ):
                ddb.put_item(TableName=table, Item=item)
            written += 1
    return written


def assert_apart(labels, where: str) -> None:
    """The labels, as drawn on the screen, left to right with space between them."""
    boxes = [labels.nth(i).bounding_box() for i in range(labels.count())]
    for a, b in itertools.pairwise(boxes):
        assert a["x"] + a["width"] < b["x"], f"day labels overlap at {where}: {a} {b}"


def test_the_insights_page_over_a_week_reads_at_both_widths(sync_api, stack, browser, tmp_path):
    written = a_week_of_questions(stack_settings(tmp_path), owner="local:ada")  # how the stack names "ada"
    user = {"x-assist-user": "ada"}
    for session, turn, rating in (("week-1", 1, "up"), ("week-2", 1, "up"), ("week-3", 2, "down")):
        r = httpx.post(f"{stack}/v1/sessions/{session}/turns/{turn}/feedback", json={"rating": rating}, headers=user)
        assert r.status_code == 200, r.text
    page = browser.new_page()
    errors, _ = watch(page)
    page.goto(stack + "/insights?days=7")
    figures = page.get_by_label("Key figures")
    sync_api.expect(figures).to_contain_text(f"{written}questions")
    sync_api.expect(figures).to_contain_text(re.compile(r"2 / 1\s*helpful /\s*not helpful"))
    assert page.locator(".figures svg.thumb").count() == 2  # drawn, not left to an emoji font
    chart = page.get_by_role("img", name="questions per day by type")
    labels = chart.locator("text[text-anchor=middle]")
    assert labels.count() == 8  # a week and today: every day named
    assert_apart(labels, "1280 px")
    sync_api.expect(page.locator(".gap").first).to_contain_text("SAP")
    page.screenshot(path=tmp_path / "insights.png", full_page=True)
    page.set_viewport_size(NARROW)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360, "no sideways scrolling at 360 px"
    assert_apart(labels, "360 px")
    page.screenshot(path=tmp_path / "insights-360.png", full_page=True)
    assert errors == [], errors
    refresh_docs_images(tmp_path, "insights.png", "insights-360.png")
