"""The web chat shows an answer the documentation does not cover as such (ADR 0055): a visible "Not in the
docs" notice with its reason, in Debian's Chromium driven by Playwright, against `assist local up`; "ask
anyway" sends the question again with `force_answer` (ADR 0084), and the model's own verdict (ADR 0083) gets
the notice without the marker. The passages found stay listed as near misses (ADR 0102)."""

from __future__ import annotations

import json

import pytest

from assist.answer.marker import MARKER
from tests.e2e.test_web_chat import browser, stack, sync_api  # noqa: F401 - the fixtures, shared
from tests.support.folder_urls import in_folder

pytestmark = pytest.mark.e2e
OFF_TOPIC = "How do I bake sourdough bread?"  # the embedding layer routes it RETRIEVAL on its own: no LLM call


def test_an_off_topic_question_gets_the_notice_and_no_model_answer(sync_api, stack, browser, ollama, session_id):  # noqa: F811
    expect = sync_api.expect
    before = len(ollama.calls(model="main-model:1b"))
    page = browser.new_page()
    page.goto(f"{stack}/#session={session_id}")
    page.get_by_label("Your message").fill(OFF_TOPIC)
    page.get_by_label("Your message").press("Enter")
    answer = page.locator(".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    notice = answer.locator(".uncertain")
    expect(notice).to_be_visible()
    expect(notice).to_have_text("Not in the docs")
    assert notice.get_attribute("data-reason") in {"no_relevant_passage", "low_retrieval_confidence", "out_of_scope"}
    assert notice.get_attribute("title") == notice.get_attribute("data-reason").replace("_", " ")  # why, on hover
    expect(answer.locator(".text")).to_contain_text("The documentation does not cover this question")
    assert in_folder(answer.locator(".text .source-path").first.get_attribute("title"))  # a near miss's page
    assert len(ollama.calls(model="main-model:1b")) == before
    near_misses_shown(expect, answer, "Nearest sections in the docs")

    ollama.queue_replies(["Sourdough needs a starter, flour and time."], model="main-model:1b")
    answer.get_by_role("button", name="Ask anyway").click()
    forced = page.locator(".turn .answer").nth(1)
    expect(forced).to_have_attribute("data-state", "done", timeout=30_000)
    expect(forced.locator(".text")).to_have_text("Sourdough needs a starter, flour and time.")
    expect(forced.locator(".uncertain")).to_be_hidden()
    expect(forced.locator(".sources h2 .title")).to_have_text("Sources")  # the model's sources, cited as before
    expect(forced.locator(".sources li.near-miss")).to_have_count(0)
    body = ollama.calls(model="main-model:1b")[-1].body
    assert OFF_TOPIC in json.dumps(body)  # the same question, this time to the model
    expect(page.locator(".turn .question").nth(1)).to_have_text(OFF_TOPIC)

    ollama.queue_replies([f"{MARKER} The sources cover routing, not billing disputes."], model="main-model:1b")
    page.get_by_label("Your message").fill("How does the engine decide that a message is about billing?")
    page.get_by_label("Your message").press("Enter")
    declined = page.locator(".turn .answer").nth(2)
    expect(declined).to_have_attribute("data-state", "done", timeout=30_000)
    expect(declined.locator(".uncertain")).to_be_visible()
    assert declined.locator(".uncertain").get_attribute("data-reason") == "model_not_covered"
    expect(declined.locator(".text")).to_have_text("The sources cover routing, not billing disputes.")
    expect(declined.get_by_role("button", name="Ask anyway")).to_be_hidden()


def near_misses_shown(expect, answer, title: str) -> None:
    """The passages the search found, listed under their own title with each page (ADR 0102), beside Ask anyway."""
    section = answer.locator(".sources")
    expect(section).to_be_visible()
    expect(section.locator("h2 .title")).to_have_text(title)
    items = section.locator("li")
    assert items.count() > 0
    expect(section.locator("li.near-miss")).to_have_count(items.count())
    for i in range(items.count()):
        assert in_folder(items.nth(i).locator(".source-path").inner_text())
    named = {t.split("\n")[0] for t in section.locator("summary").all_inner_texts()}
    linked = answer.locator(".text .source-path").all_inner_texts()  # the sections the text names are among them
    assert linked
    assert all(any(n.startswith(t) or t.startswith(n) for n in named) for t in linked), (linked, named)
    items.first.locator("summary").click()
    expect(items.first.locator(".passage")).to_be_visible()  # the passage itself, readable
