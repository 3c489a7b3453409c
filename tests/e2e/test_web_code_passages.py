"""An answer without a model whose passages hold code, as the web chat shows it at 1280 and 390 px: every code
block whole and inside the answer, each passage its own, a section without heading text named by its page, and no
model named on the route line (none answered), live and after a reload. Debian's Chromium, driven by Playwright,
against `assist local up --docs` on a folder written here; no Ollama (fixtures of test_web_chat.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_local_stack import start as start_stack
from tests.e2e.test_local_stack import stop
from tests.e2e.test_web_chat import browser, refresh_docs_images, sync_api  # noqa: F401 - fixtures

pytestmark = pytest.mark.e2e
FENCE = "`" * 3
PAGES = {
    "install.md": f"""# Installing the kettle service

The kettle service runs on any machine with Python 3.11. Install it from the package index, then start it.

{FENCE}bash
pip install kettle-service
kettle-service --port 8080 --boil-timeout 180 --descale-reminder monthly --log-format json --verbose
{FENCE}

The service listens on port 8080 until it is stopped.
""",
    "configure.md": f"""# Configuring the kettle service

{FENCE}toml
[kettle]
boil_timeout = 180
descale_reminder = "monthly"
{FENCE}

## Boil timeout

The boil timeout stops the kettle service after this many seconds. Set it in the configuration file.
""",
    "api.md": f"""# The kettle service API

Every kettle service answers a boil request over HTTP. Send it a POST with the water volume.

{FENCE}python
import httpx

reply = httpx.post("http://127.0.0.1:8080/boil", json={{"litres": 1.5}})
print(reply.json()["seconds"])
""",  # the page ends inside its code block, as a cut chunk does
}
QUESTION = "How do I install and configure the kettle service and send a boil request?"
WIDE, PHONE = {"width": 1280, "height": 1100}, {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def kettle_stack(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("kettle-docs")
    for name, text in PAGES.items():
        (folder / name).write_text(text)
    proc, base = start_stack(tmp_path_factory.mktemp("kettle-stack"), docs=folder)
    try:
        yield base
    finally:
        code, _, err = stop(proc)
        assert code == 0, err[-2000:]


def shows_every_block_whole(page, answer) -> None:
    text = answer.locator(".text")
    blocks = text.locator("pre")
    assert blocks.count() >= 1, text.inner_html()
    box = text.bounding_box()
    for i in range(blocks.count()):
        pre = blocks.nth(i).bounding_box()
        assert pre["x"] >= box["x"] - 1, (pre, box)
        assert pre["x"] + pre["width"] <= box["x"] + box["width"] + 1, (pre, box)  # not cut off at the right
        assert "[2]" not in blocks.nth(i).inner_text()
        assert "[3]" not in blocks.nth(i).inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    # each passage's own citation is a link in the prose, not text swallowed by an open code block
    assert text.locator("a.cite").count() >= 3


def test_code_passages_render_whole_at_1280_and_390_px(sync_api, kettle_stack, browser, tmp_path):  # noqa: F811
    expect = sync_api.expect
    page = browser.new_page()
    page.set_viewport_size(WIDE)
    page.goto(f"{kettle_stack}/#session=kettle-code")
    page.get_by_label("Name").fill("ada")
    page.get_by_label("Name").press("Tab")
    page.get_by_label("Your message").fill(QUESTION)
    page.get_by_label("Your message").press("Enter")
    answer = page.locator(".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=60_000)
    expect(answer.locator(".degraded li[data-code=llm_unavailable]")).to_be_visible()
    expect(answer.locator(".slot")).not_to_contain_text("·")  # no model answered: none is named
    shows_every_block_whole(page, answer)
    names = answer.locator(".sources summary").all_inner_texts()
    assert names
    assert not [n for n in names if n.rstrip().endswith("›")], names
    assert all(p.strip() for p in answer.locator(".sources .passage").all_text_contents())
    page.screenshot(path=tmp_path / "chat-code-1280.png")

    page.set_viewport_size(PHONE)
    shows_every_block_whole(page, answer)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=tmp_path / "chat-code-390.png")

    page.reload()  # read back from the session: still no model named
    stored = page.locator(".turn .answer").last
    expect(stored).to_have_attribute("data-state", "done", timeout=10_000)
    expect(stored.locator(".slot")).not_to_contain_text("·")
    shows_every_block_whole(page, stored)
    refresh_docs_images(tmp_path, "chat-code-1280.png", "chat-code-390.png")
    assert Path(tmp_path / "chat-code-390.png").stat().st_size > 0
