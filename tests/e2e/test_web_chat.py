"""The web chat in a real browser: Debian's Chromium, driven by Playwright, against `assist local up`
and the Ollama test server (a token delay, so the streaming is observable).

Skipped, saying why, where the machine has no Chromium or no Playwright (`make setup` installs both
where it runs as root with apt-get). Playwright never downloads a browser here: it launches
/usr/bin/chromium.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.e2e.test_local_stack import start as start_stack
from tests.e2e.test_local_stack import stop

pytestmark = pytest.mark.integration

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


@pytest.fixture
def stack(tmp_path, docs_index, ollama):
    """The local stack on the tests' cached index, answering through the Ollama test server."""
    proc, base = start_stack(
        tmp_path,
        "--index",
        docs_index.index_uri,
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
def browser(sync_api, tmp_path):
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh user-data-dir
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1000, "height": 1200},
        )
        try:
            yield context
        finally:
            context.close()


def test_a_question_streams_after_its_route_cites_sources_and_keeps_feedback(
    sync_api, stack, browser, ollama, session_id, tmp_path
):
    expect = sync_api.expect
    ollama.reply(ANSWER, model="main-model:1b")
    ollama.first_token_delay_s = 0.4  # the route must reach the reader before the model starts
    ollama.token_delay_s = 0.03
    page = browser.new_page()
    page.add_init_script(OBSERVER)
    page.goto(f"{stack}/#session={session_id}")
    page.get_by_label("Name").fill("ada")
    page.get_by_label("Name").press("Tab")
    page.get_by_label("Your message").fill(QUESTION)
    page.get_by_label("Your message").press("Enter")

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

    page.set_viewport_size({"width": 360, "height": 780})
    assert page.evaluate("document.documentElement.scrollWidth") <= 360, "no sideways scrolling at 360 px"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=tmp_path / "chat-360.png")

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

    # the docs page shows what this test saw; refreshed on request, so a test run leaves the tree clean
    if os.environ.get("ASSIST_UPDATE_SCREENSHOTS"):
        DOCS_IMAGES.mkdir(exist_ok=True)
        for name in ("chat.png", "chat-360.png"):
            shutil.copyfile(tmp_path / name, DOCS_IMAGES / name)
