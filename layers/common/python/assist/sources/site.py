"""A docs website, crawled politely: from its sitemap (`…/sitemap.xml`, sitemap indexes followed) or
from a start URL (links followed below the start URL's folder), on the same host only, honouring
robots.txt. Incremental: a sitemap `lastmod` that did not change skips the page without a request;
otherwise the request carries the page's ETag and Last-Modified, and a 304 keeps it as indexed
(ADR 0060). A page that cannot be read is an error naming it (nothing is written), except a link
found while crawling that leads nowhere (404), which is skipped and counted."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin, urlsplit

import msgspec
from lxml import etree

from assist.index import manifest
from assist.index.chunking import doc_hash
from assist.logs import get_logger
from assist.sources.fetch import Fetcher
from assist.sources.spec import Page, Read, SourceError, SourceSpec
from assist.sources.validators import Fetched, Validators
from assist.sources.webpage import parse_page

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
HTML_TYPES = ("text/html", "application/xhtml+xml")
#: link targets that are never pages
NOT_PAGES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico", ".css", ".js", ".json", ".xml", ".zip",
             ".gz", ".tar", ".pdf", ".mp4", ".woff", ".woff2", ".ttf", ".txt", ".map"}  # fmt: skip
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass
class Listed:
    url: str
    lastmod: str = ""
    required: bool = True  # listed by the sitemap or the start URL itself: failing to read it is an error


def read_site(
    spec: SourceSpec,
    settings: Settings,
    previous: Validators,
    indexed: dict[str, str],
    keep_chrome: bool = False,
) -> Read:
    """The site's pages. `previous`: {url: validators and doc hash} kept from the last sync; `indexed`:
    {doc_id: hash} the index holds (a page is skipped only when the index still holds it as it was).
    `keep_chrome`: pages read whole (`assist eval sources` measures what dropping the chrome does)."""
    start = spec.location
    t0 = time.perf_counter()
    out = Read(counts={"pages": 0, "fetched": 0, "not_modified": 0, "unchanged_lastmod": 0, "disallowed": 0,
                       "off_host": 0, "broken_links": 0})  # fmt: skip
    with Fetcher(start, settings) as fetcher:
        fetcher.robots()
        root = _root(start)

        def unchanged(url: str, doc_id: str, lastmod: str) -> bool:
            before = previous.get(url)
            return bool(before and indexed.get(doc_id) == before.hash and lastmod and before.lastmod == lastmod)

        def fetch(item: Listed) -> tuple[Page | None, list[str], str]:
            doc_id = spec.prefix + page_id(item.url, root)
            before = previous.get(item.url) or Fetched()
            if unchanged(item.url, doc_id, item.lastmod):
                out.validators[item.url] = before
                return Page(doc_id, before.hash, None), list(before.links), "unchanged_lastmod"
            held = indexed.get(doc_id) == before.hash
            resp = fetcher.get(item.url, before.http() if held else None, missing_ok=not item.required)
            if resp.status in (404, 410):
                return None, [], "broken_links"
            if resp.status == 304:
                out.validators[item.url] = msgspec.structs.replace(before, lastmod=item.lastmod)
                return Page(doc_id, before.hash, None), list(before.links), "not_modified"
            if resp.content_type and resp.content_type not in HTML_TYPES:
                if item.required:
                    raise SourceError(f"{item.url}: {resp.content_type}, not an HTML page")
                return None, [], "not_html"
            doc, links = parse_page(doc_id, resp.body, resp.url, source=item.url, keep_chrome=keep_chrome)
            h = doc_hash(doc.chunks[0].url + "\n" + "\n".join(c.id + c.text for c in doc.chunks)) if doc.chunks else ""
            page_links = [u for u in links if fetcher.on_host(u)]
            etag, modified = resp.headers.get("etag", ""), resp.headers.get("last-modified", "")
            out.validators[item.url] = Fetched(etag, modified, item.lastmod, h, page_links)
            entry = manifest.entry_for(doc)
            return Page(doc_id, h, doc.chunks, entry) if doc.chunks else None, page_links, "fetched"

        if _is_sitemap(start):
            listed = _sitemap(fetcher, start, out.counts)
            out.pages = _crawl(fetcher, listed, fetch, out.counts, None, settings)
        else:
            out.pages = _crawl(fetcher, [Listed(urldefrag(start)[0])], fetch, out.counts, root, settings)
        out.counts["requests"] = fetcher.requests
    out.counts["seconds"] = seconds = round(time.perf_counter() - t0, 3)
    out.counts["pages_per_s"] = round(out.counts["fetched"] / seconds, 1) if out.counts["fetched"] else 0.0
    if not out.pages:
        raise SourceError(f"{start}: no page with content found (robots.txt may disallow them all)")
    return out


def _crawl(
    fetcher: Fetcher,
    queue: list[Listed],
    fetch: Callable[[Listed], tuple[Page | None, list[str], str]],
    counts: dict[str, int | float],
    follow: str | None,
    settings: Settings,
) -> list[Page]:
    """Fetch in waves (each wave on the fetcher's threads); with `follow`, links below it join the next wave
    (one URL per document id: `guide/` and `guide/index.html` are one page)."""
    firsts = {page_id(q.url, follow or ""): q for q in reversed(queue)}  # `guide/` and `guide/index.html`: one
    counts["duplicates"] = len(queue) - len(firsts)
    queue = [q for q in queue if firsts[page_id(q.url, follow or "")] is q]
    seen = set(firsts)
    pages: dict[str, Page] = {}
    while queue:
        allowed = []
        for item in queue:
            if fetcher.allowed(item.url):
                allowed.append(item)
            else:
                counts["disallowed"] += 1
        if len(seen) > settings.crawl.max_pages:
            raise SourceError(f"{fetcher.origin}: more than {settings.crawl.max_pages} pages (CRAWL_MAX_PAGES)")
        nxt: list[Listed] = []
        for page, links, status in fetcher.map(fetch, allowed):
            counts[status] = counts.get(status, 0) + 1
            if page is not None:
                counts["pages"] += 1
                pages[page.doc_id] = page
            for link in links if follow else []:
                key = page_id(link, follow or "")
                if (
                    link.startswith(follow)
                    and key not in seen
                    and PurePosixPath(urlsplit(link).path).suffix not in NOT_PAGES
                ):
                    seen.add(key)
                    nxt.append(Listed(link, required=False))
        queue = nxt
    return list(pages.values())


def _root(start: str) -> str:
    """The folder the site's pages are named from: the start URL's (or the sitemap's) folder."""
    base = urldefrag(start)[0].split("?", 1)[0]
    return base if base.endswith("/") else base.rsplit("/", 1)[0] + "/"


def page_id(url: str, root: str) -> str:
    """A page's document id: its path below the root, without `.html` or `index.html`."""
    path = urldefrag(url)[0].split("?", 1)[0]
    rel = path[len(root) :] if path.startswith(root) else urlsplit(path).path.lstrip("/")
    for suffix in ("index.html", "index.htm", ".html", ".htm"):
        if rel.endswith(suffix):
            rel = rel[: -len(suffix)]
            break
    return rel.strip("/") or "index"


def _is_sitemap(url: str) -> bool:
    return urlsplit(url).path.lower().endswith(".xml")


def _sitemap(fetcher: Fetcher, url: str, counts: dict[str, int | float], depth: int = 0) -> list[Listed]:
    """Pages a sitemap lists (with their lastmod), following a sitemap index two levels deep."""
    resp = fetcher.get(url)
    try:
        root = etree.fromstring(resp.body, parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as exc:
        raise SourceError(f"{url}: malformed sitemap ({exc})") from exc
    out: list[Listed] = []
    for loc_parent in root:
        loc = (loc_parent.findtext(f"{SITEMAP_NS}loc") or loc_parent.findtext("loc") or "").strip()
        lastmod = (loc_parent.findtext(f"{SITEMAP_NS}lastmod") or loc_parent.findtext("lastmod") or "").strip()
        if not loc:
            continue
        loc = urljoin(url, loc)
        if not fetcher.on_host(loc):
            counts["off_host"] += 1
            continue
        if root.tag.endswith("sitemapindex"):
            if depth < 2:
                out += _sitemap(fetcher, loc, counts, depth + 1)
        else:
            out.append(Listed(urldefrag(loc)[0], lastmod))
    return out
