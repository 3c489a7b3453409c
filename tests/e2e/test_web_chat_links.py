"""The web chat names each source's page (ADR 0059): a folder indexed without a base URL gives its path in the
folder, shown, not linked, never a build path (ADR 0112). Debian's Chromium, driven by Playwright, against
`assist local up` and the Ollama test server (fixtures of test_web_chat.py)."""

from __future__ import annotations

import pytest

from tests.e2e.test_web_chat import ANSWER, QUESTION, ask_in, browser, stack, sync_api  # noqa: F401 - fixtures
from tests.support.folder_urls import in_folder

pytestmark = pytest.mark.e2e


def test_every_source_names_its_path_in_the_docs_folder(sync_api, stack, browser, ollama, session_id):  # noqa: F811
    expect = sync_api.expect
    ollama.reply(ANSWER, model="main-model:1b")
    page = browser.new_page()
    ask_in(page, stack, session_id, QUESTION)
    answer = page.locator(".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    items = answer.locator(".sources li")
    paths = answer.locator(".sources li .source-path")
    assert items.count() >= 1
    expect(paths).to_have_count(items.count())  # one per source
    shown = paths.all_inner_texts()
    assert all(in_folder(p) for p in shown), shown  # no base URL: each file's path in docs/
    expect(answer.locator(".sources a.source-link")).to_have_count(0)  # nothing to open: no link
    assert "file://" not in page.content()
