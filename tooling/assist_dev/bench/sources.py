"""`assist eval sources` and `assist bench crawl`: the docs site path measured on loopback.

`eval sources` renders a Markdown folder to a docs website (markdown-it-py, heading anchors, a theme's
full chrome around every page: header, the whole site's navigation, a table of contents, feedback,
footer), serves it on 127.0.0.1, indexes the folder as files and the site by crawling its sitemap, and
runs the relevance set's queries on both: nDCG@10 side by side (ADR 0058).
`bench crawl` serves N generated pages and times a first sync, and an unchanged one by ETag (304)
and by sitemap lastmod."""

from __future__ import annotations

import contextlib
import functools
import html
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.build.run import sync_docs, sync_sources
from assist.index.chunking import anchor, iter_documents
from assist.index.store import connect
from assist.offline.retrieve import beir
from assist.offline.retrieve.evaluate import mrr, ndcg, recall
from assist.retrieve.search import Retriever, SearchOptions
from assist.sources.site import read_site
from assist.sources.spec import SourceSpec

if TYPE_CHECKING:
    from assist.embed.base import Embedder
    from assist.settings import Settings

CHUNKS = 30  # chunks asked per query; their sections, deduplicated, are ranked
#: words only the theme's chrome below holds (`page`): a passage with one of them is navigation, not content
CHROME_MARKERS = ("Skip to content", "Guides Reference Changelog", "Was this page helpful", "Made with assist")


def page(title: str, body: str, nav: list[tuple[str, str]]) -> str:
    """A page as a docs theme renders it, chrome and all."""
    links = "".join(f'<li><a href="/{href}">{html.escape(name)}</a></li>' for href, name in nav)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)} | assist docs</title>
<script>var analytics = 1;</script></head><body><a class="skip-link" href="#content">Skip to content</a>
<header class="md-header"><nav><a href="/index.html">assist docs</a> Guides Reference Changelog</nav></header>
<div class="md-sidebar md-sidebar--primary"><nav class="md-nav"><ul>{links}</ul></nav></div>
<main class="md-main"><article class="md-content" id="content">{body}</article>
<div class="md-sidebar md-sidebar--secondary"><nav class="md-nav toc"><p>On this page</p></nav></div></main>
<div class="feedback">Was this page helpful? <button>Yes</button> <button>No</button></div>
<footer class="md-footer">Made with assist. Copyright 2026. Privacy · Terms</footer></body></html>"""


def render_site(docs: Path, out: Path) -> int:
    """docs/ as a website in `out`: `<doc_id>.html` per document, a sitemap, a robots.txt. Returns pages."""
    # deferred, ADR 0071: markdown-it 0.04 s
    from markdown_it import MarkdownIt
    from mdit_py_plugins.anchors import anchors_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin

    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    md.use(anchors_plugin, min_level=1, max_level=6, slug_func=anchor, permalink=True)
    documents = list(iter_documents(docs))
    nav = [(f"{d}.html", d.rsplit("/", 1)[-1].replace("-", " ")) for d, _ in documents]
    for doc_id, path in documents:
        target = out / f"{doc_id}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page(doc_id, md.render(path.read_text(encoding="utf-8")), nav), encoding="utf-8")
    (out / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    return len(documents)


def write_sitemap(out: Path, base: str, lastmod: bool, name: str = "sitemap.xml") -> None:
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    mod = "<lastmod>2026-11-01</lastmod>" if lastmod else ""
    urls = "".join(f"<url><loc>{base}/{p}</loc>{mod}</url>" for p in pages)
    (out / name).write_text(f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """A folder over HTTP on 127.0.0.1 (Last-Modified and If-Modified-Since answered, as static hosts do)."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def compare(
    docs: Path, queries: Path, qrels: Path, settings: Settings, embedder: Embedder, work: Path
) -> dict[str, Any]:
    """The same docs indexed as files, as their rendered site, and (to measure what dropping it does) as
    the site with its chrome kept, on the same queries. `cites_chrome`: queries whose top 5 passages —
    what an answer cites — carry the theme's chrome."""
    judged, asked = beir.read_judged(queries, qrels)
    site_dir = work / "site"
    shutil.rmtree(site_dir, ignore_errors=True)
    pages = render_site(docs, site_dir)
    out: dict[str, Any] = {"pages": pages, "queries": len(asked)}
    with serve(site_dir) as base:
        write_sitemap(site_dir, base, lastmod=False)
        for name in ("files", "site", "site_with_chrome"):
            s = settings.with_(index={"uri": str(work / f"index-{name}")})
            if name == "site_with_chrome":
                read = read_site(SourceSpec(f"{base}/sitemap.xml", kind="site"), s, {}, {}, keep_chrome=True)
                sync_docs({p.doc_id: (p.hash, p.chunks) for p in read.pages if p.chunks}, s, embedder, progress=False)
            else:
                location = str(docs) if name == "files" else f"{base}/sitemap.xml"
                sync_sources([SourceSpec(location)], s, embedder, progress=False)
            out[name] = _figures(s, embedder, asked, judged)
    out["delta_ndcg@10"] = round(out["site"]["ndcg@10"] - out["files"]["ndcg@10"], 4)
    return out


def _figures(
    settings: Settings, embedder: Embedder, asked: dict[str, str], judged: dict[str, dict[str, int]]
) -> dict[str, Any]:
    table = connect(settings.index.uri).open_table(settings.index.table)
    retriever = Retriever(table, embedder, SearchOptions.from_settings(settings))
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
    cites_chrome = 0
    for qid, text in asked.items():
        chunks = retriever.search(text, k=CHUNKS).chunks
        ranked = list(dict.fromkeys(c.id.rsplit(":", 1)[0] for c in chunks))
        totals["ndcg@10"] += ndcg(ranked, judged[qid], 10)
        totals["recall@10"] += recall(ranked, judged[qid], 10)
        totals["mrr@10"] += mrr(ranked, judged[qid], 10)
        cites_chrome += any(m in c.text for c in chunks[:5] for m in CHROME_MARKERS)
    rows = table.search().select(["doc_id"]).limit(None).to_arrow().column("doc_id").to_pylist()
    return {k: round(v / len(asked), 4) for k, v in totals.items()} | {
        "cites_chrome": cites_chrome,
        "docs": len(set(rows)),
        "chunks": len(rows),
    }


def crawl(settings: Settings, embedder: Embedder, pages: int, work: Path | None = None) -> dict[str, Any]:
    """A generated site of `pages` pages on loopback: the first sync (crawl throughput apart from the
    embedding), then an unchanged sync by ETag/Last-Modified (304s) and one by sitemap lastmod."""
    with tempfile.TemporaryDirectory(prefix="assist-crawl-") as tmp:
        root = Path(work or tmp)
        site = root / "site"
        site.mkdir(parents=True, exist_ok=True)
        nav = [(f"p{i:04d}.html", f"Page {i}") for i in range(0, pages, max(1, pages // 40))]
        for i in range(pages):
            nxt = (i + 1) % pages
            body = (
                f'<h1 id="topic-{i}">Topic {i}</h1><p>Topic {i} explains setting number {i} and its default.</p>'
                f'<h2 id="example">Example</h2><pre><code class="language-bash">assist set topic-{i} on</code></pre>'
                f'<h2 id="related">Related</h2><p>See <a href="p{nxt:04d}.html">topic {nxt}</a>.</p>'
            )
            (site / f"p{i:04d}.html").write_text(page(f"Topic {i}", body, nav), encoding="utf-8")
        (site / "robots.txt").write_text("User-agent: *\nAllow: /\n")
        out: dict[str, Any] = {
            "pages": pages,
            "concurrency": settings.crawl.concurrency,
            "delay_s": settings.crawl.delay_s,
        }
        with serve(site) as base:
            write_sitemap(site, base, lastmod=False)
            write_sitemap(site, base, lastmod=True, name="sitemap-lastmod.xml")
            for name, sitemap in (("etag", "sitemap.xml"), ("lastmod", "sitemap-lastmod.xml")):
                s = settings.with_(index={"uri": str(root / f"index-{name}")})
                spec = SourceSpec(f"{base}/{sitemap}")
                first = sync_sources([spec], s, embedder, progress=False)
                t0 = time.perf_counter()
                again = sync_sources([spec], s, embedder, progress=False)
                unchanged_s = round(time.perf_counter() - t0, 3)
                src, src_again = first["sources"][0], again["sources"][0]
                out[name] = {
                    "first_sync_s": first["seconds"],
                    "crawl_s": src["seconds"],
                    "pages_per_s": src["pages_per_s"],
                    "unchanged_sync_s": unchanged_s,
                    "unchanged_requests": src_again["requests"],
                    "unchanged_fetched": src_again["fetched"],
                    "unchanged_re_embedded": again["added_docs"],
                }
    return out
