"""The widget on a versioned docs site, in Chromium (ADR 0121): the two-product, two-version corpus of
tests/data/scoped served by `assist local up --sources`, the widget on pages that say their scope with `data-scope`
or let the widget read it from their address. Answers cite only the page's version; a question only another
version answers says "not in these docs" and links the page that has it.

Skipped, saying why, where the machine has no Chromium or no Playwright (as the widget's own test).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.e2e.test_local_stack import ASSIST
from tests.e2e.test_web_chat import WIDE, answering_stack
from tests.e2e.test_widget import chromium, ollama, page_on, shadow, site, sync_api, watched  # noqa: F401
from tests.integration.test_scopes import CORPUS, ONLY_IN_V2

pytestmark = pytest.mark.e2e
ANSWER = "Each version keeps its settings in its own file [1]."


@pytest.fixture(scope="module")
def scoped_stack(tmp_path_factory, ollama):  # noqa: F811
    sources = str(CORPUS / "sources.yaml")
    with answering_stack(tmp_path_factory.mktemp("scoped-stack"), ollama, "--sources", sources, docs=None) as base:
        yield base


@pytest.fixture(scope="module")
def site_key(scoped_stack, site, tmp_path_factory):  # noqa: F811
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SESSION"))}
    done = subprocess.run(
        [str(ASSIST), "keys", "create", "--origin", site.url, "--name", "versioned docs", "--json"],
        cwd=tmp_path_factory.mktemp("keys"),
        env=env | {"ASSIST_URL": scoped_stack},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["key"]


def asks(request) -> bool:
    return request.method == "POST" and "/v1/ask/" in request.url


def ask_on(page, question: str):
    """Ask in the page's widget; the answer once it is done."""
    if shadow(page, ".panel").is_hidden():
        shadow(page, ".launcher").click()
    shadow(page, "textarea").fill(question)
    shadow(page, "textarea").press("Enter")
    answer = shadow(page, ".turn .answer").last
    answer.wait_for(state="attached")
    return answer


def test_answers_cite_only_the_pages_version_and_another_versions_topic_is_linked_not_answered(
    sync_api,  # noqa: F811
    scoped_stack,
    site,  # noqa: F811
    site_key,
    chromium,  # noqa: F811
    ollama,  # noqa: F811
):
    expect = sync_api.expect
    ollama.set_up()
    ollama.reply(ANSWER, model="main-model:1b")
    context = chromium.new_context(viewport=WIDE, locale="en-US")
    pages = {
        # the scope said whole on the script tag
        ("cli", "1"): page_on(site, "/cli/v1/configuration.html", scoped_stack, site_key,
                              script_attrs=' data-scope="product=cli,version=1"'),
        # the product said, the version read from the page's address with the sources file's pattern
        ("cli", "2"): page_on(site, "/cli/v2/configuration.html", scoped_stack, site_key,
                              script_attrs=' data-scope="product=cli" data-version-from="/v(\\d+)/"'),
        ("server", "2"): page_on(site, "/docs/server/v2/index.html", scoped_stack, site_key,
                                 script_attrs=' data-product-from="/docs/(\\w+)/" data-version-from="/v(\\d+)/"'),
    }  # fmt: skip
    for (product, version), url in pages.items():
        page, problems = watched(context, scoped_stack, site)
        sent: list[dict] = []
        page.on("request", lambda r, sent=sent: sent.append(r.post_data_json) if asks(r) else None)
        page.goto(url)
        answer = ask_on(page, "Where is the configuration file?")
        expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
        expect(answer.locator(".uncertain")).to_be_hidden()
        cited = answer.locator(".sources a.source-link")
        assert cited.count() >= 1
        own = (f"https://docs.example.com/{product}/v{version}/", "https://docs.example.com/shared/")
        hrefs = [cited.nth(i).get_attribute("href") for i in range(cited.count())]
        assert all(h.startswith(own) for h in hrefs), (product, version, hrefs)
        assert f"https://docs.example.com/{product}/v{version}/configuration" in " ".join(hrefs)
        assert [b.get("scope") for b in sent] == [{"product": product, "version": version}]
        assert problems == [], problems
        page.close()

    # On v1, a topic only v2 has: not in these docs, the link to v2's page, nothing cited from v2
    page, problems = watched(context, scoped_stack, site)
    page.goto(pages["cli", "1"])
    answer = ask_on(page, ONLY_IN_V2)
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    expect(answer.locator(".uncertain")).to_be_visible()
    expect(answer.locator(".text")).to_contain_text("These docs (cli 1) do not cover this question")
    expect(answer.locator(".text")).to_contain_text("This is covered in cli 2:")
    link = answer.locator('.text a[href="https://docs.example.com/cli/v2/plugins#plugins"]')
    expect(link).to_have_text("Plugins")
    near = answer.locator(".sources a.source-link")
    assert all("/cli/v2/" not in (near.nth(i).get_attribute("href") or "") for i in range(near.count()))
    assert problems == [], problems
    context.close()
