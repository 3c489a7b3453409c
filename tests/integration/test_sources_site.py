"""A docs website on loopback, crawled into a real LanceDB index with the real embedder: robots.txt,
the sitemap, chrome dropped, URLs kept, incremental re-sync, removal, and bad input refused with the
index left as it was."""

from __future__ import annotations

import socket

import pytest

from assist.build.run import sync_sources
from assist.embed.base import Embedder
from assist.index.store import connect, doc_hashes
from assist.retrieve.search import Retriever
from assist.settings import Settings
from assist.sources.spec import SourceError, SourceSpec
from tests.support.docs_site import DocsSite, chrome_page, sitemap

pytestmark = pytest.mark.integration

NAV = [("/docs/", "Home"), ("/docs/install.html", "Installing the agent"), ("/docs/config.html", "Configuring tokens"),
       ("/docs/private/admin.html", "Admin console")]  # fmt: skip
PAGES = {
    "/docs/index.html": chrome_page(
        "Overview",
        '<h1 id="overview">Overview</h1><p>Acme moves telemetry from edge devices to the warehouse.</p>'
        '<h2 id="concepts">Concepts</h2><p>A pipeline has sources, transforms and sinks.</p>',
        NAV,
    ),
    "/docs/install.html": chrome_page(
        "Installing the agent",
        '<h1 id="installing-the-agent">Installing the agent</h1><p>Install the collector daemon on each host.</p>'
        '<h2 id="linux">Linux</h2><p>Use the package repository:</p>'
        '<pre><code class="language-bash">sudo apt-get install acme-agent</code></pre>',
        NAV,
    ),
    "/docs/config.html": chrome_page(
        "Configuring tokens",
        '<h1 id="configuring-tokens">Configuring tokens</h1><p>Each agent authenticates with an ingest token.</p>'
        '<h2 id="rotation">Rotation</h2><p>Rotate an ingest token every 90 days from the console.</p>',
        NAV,
    ),
    "/docs/private/admin.html": chrome_page(
        "Admin console", '<h1 id="admin">Admin console</h1><p>Internal billing overrides.</p>', NAV
    ),
}
LISTED = [("/docs/index.html", "2026-01-01"), ("/docs/install.html", ""), ("/docs/config.html", "2026-01-02"),
          ("/docs/private/admin.html", "2026-01-03"), ("/docs/", "2026-01-01")]  # fmt: skip


@pytest.fixture
def site():
    with DocsSite() as s:
        for path, html in PAGES.items():
            s.put(path, html)
        s.put("/robots.txt", "User-agent: *\nDisallow: /docs/private/\n", "text/plain")
        s.put("/docs/sitemap.xml", sitemap(s.url, LISTED), "application/xml")
        yield s


@pytest.fixture
def settings(base_settings: Settings, tmp_path) -> Settings:
    return base_settings.with_(index={"uri": str(tmp_path / "index")}, crawl={"delay_s": 0.0})


def rows(settings: Settings) -> list[dict]:
    table = connect(settings.index.uri).open_table(settings.index.table)
    return table.search().select(["doc_id", "url", "text", "heading"]).limit(None).to_list()


def test_crawl_honours_robots_keeps_urls_and_drops_chrome(site: DocsSite, settings: Settings, embedder: Embedder):
    result = sync_sources([SourceSpec(site.url + "/docs/sitemap.xml")], settings, embedder, progress=False)
    indexed = rows(settings)
    assert {r["doc_id"] for r in indexed} == {"index", "install", "config"}
    assert site.statuses("/docs/private/admin.html") == {}  # disallowed: never requested
    assert result["sources"][0]["disallowed"] == 1
    assert result["sources"][0]["duplicates"] == 1  # `/docs/` is `/docs/index.html`: one document
    assert all(r["url"].startswith(site.url + "/docs/") for r in indexed)
    by_heading = {r["heading"]: r["url"] for r in indexed}
    assert by_heading["Rotation"] == site.url + "/docs/config.html#rotation"
    text = "\n".join(r["text"] for r in indexed)
    for chrome in ("Copyright", "Was this page helpful", "Skip to content", "Admin console", "Products Pricing",
                   "analytics", "On this page"):  # fmt: skip
        assert chrome not in text
    assert "```bash\nsudo apt-get install acme-agent\n```" in text
    # the navigation every page repeats names every page; without it, a question finds the one page about it
    table = connect(settings.index.uri).open_table(settings.index.table)
    top = Retriever(table, embedder).search("configuring tokens: how often to rotate", k=3).chunks
    assert top[0].doc_id == "config"
    assert top[0].url == site.url + "/docs/config.html#rotation"


def test_second_sync_fetches_nothing_unchanged_and_a_removed_page_disappears(
    site: DocsSite, settings: Settings, embedder: Embedder
):
    location = site.url + "/docs/sitemap.xml"
    first = sync_sources([SourceSpec(location)], settings, embedder, progress=False)
    assert first["added_docs"] == 3
    sent = site.bodies_sent()
    second = sync_sources([SourceSpec(location)], settings, embedder, progress=False)
    assert site.bodies_sent() == sent  # no page body sent again
    counts = second["sources"][0]
    assert (counts["fetched"], counts["unchanged_lastmod"], counts["not_modified"]) == (0, 2, 1)
    assert (second["added_docs"], second["removed_docs"], second["unchanged_docs"]) == (0, 0, 3)
    assert site.statuses("/docs/index.html")[200] == 1  # lastmod unchanged: not even asked
    assert site.statuses("/docs/install.html")[304] == 1  # no lastmod: asked with its ETag

    site.put("/docs/install.html", PAGES["/docs/install.html"].replace("each host", "each Linux or macOS host"))
    del site.pages["/docs/config.html"]
    site.put("/docs/sitemap.xml", sitemap(site.url, [p for p in LISTED if p[0] != "/docs/config.html"]))
    third = sync_sources([SourceSpec(location)], settings, embedder, progress=False)
    assert (third["added_docs"], third["removed_docs"], third["unchanged_docs"]) == (1, 1, 1)
    indexed = rows(settings)
    assert {r["doc_id"] for r in indexed} == {"index", "install"}
    assert any("macOS" in r["text"] for r in indexed)


def test_start_url_crawl_follows_links_and_skips_broken_ones(site: DocsSite, settings: Settings, embedder: Embedder):
    site.put(
        "/docs/index.html", PAGES["/docs/index.html"].replace("</article>", '<a href="gone.html">old</a></article>')
    )
    result = sync_sources([SourceSpec(site.url + "/docs/index.html")], settings, embedder, progress=False)
    assert {r["doc_id"] for r in rows(settings)} == {"index", "install", "config"}
    assert result["sources"][0]["broken_links"] == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("case", ["unreachable", "missing", "too_large", "off_host", "binary", "malformed_sitemap"])
def test_bad_input_is_a_clear_error_and_the_index_stays(
    case: str, site: DocsSite, settings: Settings, embedder: Embedder
):
    location = site.url + "/docs/sitemap.xml"
    sync_sources([SourceSpec(location)], settings, embedder, progress=False)
    before = doc_hashes(connect(settings.index.uri).open_table(settings.index.table))
    expected = {
        "unreachable": "unreachable",
        "missing": "HTTP 404",
        "too_large": "over the limit",
        "off_host": "redirected off the host",
        "binary": "not an HTML page",
        "malformed_sitemap": "malformed sitemap",
    }[case]
    if case == "unreachable":
        location = f"http://127.0.0.1:{_closed_port()}/docs/sitemap.xml"
    elif case == "missing":
        del site.pages["/docs/install.html"]
    elif case == "too_large":
        site.put("/docs/install.html", PAGES["/docs/install.html"] + "<p>x</p>" * 300_000)
    elif case == "off_host":
        del site.pages["/docs/install.html"]
        site.redirects["/docs/install.html"] = "http://localhost:9/elsewhere.html"
    elif case == "binary":
        site.put("/docs/install.html", b"\x89PNG\r\n\x1a\n\x00\x00", "application/octet-stream")
    elif case == "malformed_sitemap":
        site.put("/docs/sitemap.xml", "<urlset><url><loc>", "application/xml")
    with pytest.raises(SourceError, match=expected):
        sync_sources([SourceSpec(location)], settings, embedder, progress=False)
    assert doc_hashes(connect(settings.index.uri).open_table(settings.index.table)) == before


def test_the_scheduled_sync_function_runs_the_sources_file_against_the_index_on_s3(
    site: DocsSite, base_settings: Settings
):
    from assist.aws.clients import client
    from assist.serverless.lambda_entry import LambdaFunction

    s3 = client("s3", base_settings)
    key = f"sources/{site.url.rsplit(':', 1)[-1]}.yaml"
    s3.put_object(
        Bucket=base_settings.aws.bucket, Key=key, Body=f"sources:\n  - {site.url}/docs/sitemap.xml\n".encode()
    )
    s = base_settings.with_(
        index={"uri": f"s3://{base_settings.aws.bucket}/sync-{key[8:-5]}"},
        sources={"file": f"s3://{base_settings.aws.bucket}/{key}"},
        crawl={"delay_s": 0.0},
    )
    scheduled = {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    first = LambdaFunction("sync", s).handler(scheduled)
    assert (first["docs"], first["added_docs"]) == (3, 3)
    again = LambdaFunction("sync", s).handler(scheduled)
    assert (again["added_docs"], again["sources"][0]["fetched"]) == (0, 0)
    table = connect(s.index.uri, s.storage_options()).open_table(s.index.table)
    assert {r["url"].split("#")[0] for r in table.search().select(["url"]).limit(None).to_list()} == {
        f"{site.url}/docs/index.html",
        f"{site.url}/docs/install.html",
        f"{site.url}/docs/config.html",
    }
    with pytest.raises(SourceError, match="NoSuchKey"):
        LambdaFunction("sync", s.with_(sources={"file": f"s3://{s.aws.bucket}/sources/missing.yaml"})).handler(
            scheduled
        )
