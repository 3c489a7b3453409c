"""The web chat links each source to the page it came from (ADR 0059): Debian's Chromium, driven by
Playwright, against `assist local up` and the Ollama test server (fixtures of test_web_chat.py)."""

from __future__ import annotations

import pytest

from tests.e2e.test_web_chat import ANSWER, QUESTION, ask_in, browser, stack, sync_api  # noqa: F401 - fixtures

pytestmark = pytest.mark.e2e


def test_every_source_links_to_its_page(sync_api, stack, browser, ollama, session_id):  # noqa: F811
    expect = sync_api.expect
    ollama.reply(ANSWER, model="main-model:1b")
    page = browser.new_page()
    ask_in(page, stack, session_id, QUESTION)
    answer = page.locator(".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    items = answer.locator(".sources li")
    links = answer.locator(".sources li a.source-link")
    assert items.count() >= 1
    expect(links).to_have_count(items.count())  # one link per source
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert all(h.startswith("file://") and "/docs/" in h for h in hrefs), hrefs  # no base URL: the files
    assert links.first.get_attribute("target") == "_blank"
    assert "noopener" in links.first.get_attribute("rel")
