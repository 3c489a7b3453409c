"""Pure parts of the sources: HTML sections, code pieces, MDX and reST, OpenAPI documents, ids and URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from assist.settings import Settings
from assist.sources.code import chunk_code
from assist.sources.files import page_url, rst_to_markdown, strip_mdx
from assist.sources.openapi import parse_spec, read_spec
from assist.sources.resolve import guess_kind, kind_of, load_file, resolved
from assist.sources.site import page_id
from assist.sources.spec import SourceError
from assist.sources.webpage import parse_page

SPHINX = b"""<html><head><title>Install | Proj 1.0</title></head><body>
<div class="sphinxsidebar" role="navigation"><ul><li><a href="a.html">Everything</a></li></ul></div>
<div class="document"><div class="body" role="main">
<section id="install"><h1>Install<a class="headerlink" href="#install">\xc2\xb6</a></h1>
<p>Run the installer.</p>
<section id="from-source"><h2>From source<a class="headerlink" href="#from-source">\xc2\xb6</a></h2>
<div class="highlight-python"><pre><span>import</span> proj
proj.build()</pre></div>
<ul><li><p>needs a compiler</p></li></ul>
</section></section></div></div>
<div class="footer">&copy; Proj authors</div></body></html>"""


def test_sphinx_page_sections_anchor_on_their_section_and_drop_chrome():
    doc, links = parse_page("install", SPHINX, "https://docs.proj.org/en/install.html")
    assert doc.title == "Install"
    assert [(c.heading, c.url) for c in doc.chunks] == [
        ("", "https://docs.proj.org/en/install.html#install"),
        ("From source", "https://docs.proj.org/en/install.html#from-source"),
    ]
    text = "\n".join(c.text for c in doc.chunks)
    assert "```\nimport proj\nproj.build()\n```" in text
    assert "- needs a compiler" in text
    assert "¶" not in text
    assert "Everything" not in text
    assert "Proj authors" not in text
    assert links == ["https://docs.proj.org/en/a.html"]


def test_a_canonical_link_on_the_same_site_names_the_page_and_another_site_does_not():
    page = b'<html><head><link rel="canonical" href="https://x.org/guide/"></head><body><h2 id="a">A</h2><p>t</p>'
    doc, _ = parse_page("guide", page, "https://x.org/guide/index.html?utm=1")
    assert doc.chunks[0].url == "https://x.org/guide/#a"
    doc, _ = parse_page("guide", page.replace(b"x.org", b"evil.org"), "https://x.org/guide/index.html")
    assert doc.chunks[0].url == "https://x.org/guide/index.html#a"


def test_python_code_is_cut_along_functions_and_classes_with_their_lines():
    code = (
        "import os\n\n\n@cache\ndef load(path):\n    return os.read(path)\n\n\n"
        "class Store:\n    def get(self):\n        pass\n"
    )
    chunks = chunk_code("lib/store.py", "lib/store.py", code, "https://git/x/lib/store.py")
    assert [(c.heading, c.url) for c in chunks] == [
        ("module", "https://git/x/lib/store.py#L1-L3"),
        ("def load", "https://git/x/lib/store.py#L4-L6"),
        ("class Store", "https://git/x/lib/store.py#L9-L11"),
    ]
    assert chunks[1].text == "```python\n@cache\ndef load(path):\n    return os.read(path)\n```"


def test_a_long_python_class_is_cut_into_its_methods():
    methods = "".join(f"    def m{i}(self):\n" + "        x = 1\n" * 30 for i in range(4))
    chunks = chunk_code("big.py", "big.py", f"class Big:\n    '''doc'''\n{methods}", "")
    assert [c.heading for c in chunks] == ["class Big", *(f"class Big > def m{i}" for i in range(4))]


def test_other_languages_are_cut_at_top_level_declarations():
    go = 'package x\n\nimport "fmt"\n\nfunc Hello() {\n\tfmt.Println("hi")\n}\n\ntype Point struct {\n\tX int\n}\n'
    assert [c.heading for c in chunk_code("x.go", "x.go", go, "")] == ["module", "func Hello", "type Point"]


def test_mdx_keeps_text_and_code_but_not_imports_or_components():
    mdx = (
        'import Tabs from "@theme/Tabs";\nexport const meta = {};\n\n# Title\n\n<Tabs>\n<TabItem value="py">\n'
        "Use the client.\n</TabItem>\n</Tabs>\n{/* hidden */}\n```jsx\n<Button />\nimport x from 'y'\n```\n"
    )
    out = strip_mdx(mdx)
    assert "import Tabs" not in out
    assert "export const" not in out
    assert "<Tabs>" not in out
    assert "hidden" not in out
    assert "Use the client." in out
    assert "<Button />\nimport x from 'y'" in out  # code fences are kept as written


def test_rst_titles_become_headings_in_order_of_first_use():
    rst = "=====\nGuide\n=====\n\nIntro.\n\nPart\n----\n\nText.\n\nSub\n~~~\n\nMore.\n\nPart two\n--------\n"
    assert [line for line in rst_to_markdown(rst).splitlines() if line.startswith("#")] == [
        "# Guide",
        "## Part",
        "### Sub",
        "## Part two",
    ]


def test_openapi_operations_and_schemas_become_documents():
    spec = parse_spec(
        """{"openapi": "3.1.0", "info": {"title": "Pets"}, "paths": {"/pets": {"get": {"operationId": "listPets",
        "summary": "List pets", "parameters": [{"$ref": "#/components/parameters/limit"}],
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array",
        "items": {"$ref": "#/components/schemas/Pet"}}}}}}}}}, "components": {"parameters": {"limit": {"name": "limit",
        "in": "query", "schema": {"type": "integer"}, "description": "At most this many"}}, "schemas": {"Pet":
        {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "parent":
        {"$ref": "#/components/schemas/Pet"}}}}}}""",
        "pets.json",
    )
    read = read_spec(spec, "pets.json", "https://api/ref", "")
    assert [p.doc_id for p in read.pages] == ["operations/listPets", "schemas/Pet"]
    op = "\n".join(c.text for c in read.pages[0].chunks)
    assert "`GET /pets` — Pets." in op
    assert "`limit` (query, integer, optional): At most this many" in op
    assert "`name` (string, required)" in op
    assert "`parent` (Pet)" in op  # a cycle is named, not expanded forever
    assert {c.url for c in read.pages[0].chunks} == {"https://api/ref#operation/listPets"}


@pytest.mark.parametrize(
    ("location", "kind"),
    [
        ("https://docs.x.org/sitemap.xml", "site"),
        ("https://docs.x.org/", "site"),
        ("https://x.org/openapi.yaml", "openapi"),
        ("spec.json", "openapi"),
        ("https://github.com/a/b.git", "repo"),
        ("git@github.com:a/b.git", "repo"),
        ("manual.pdf", "pdf"),
        ("docs", "folder"),
    ],
)
def test_the_kind_is_guessed_from_the_location(location: str, kind: str):
    assert guess_kind(location).name == kind


@pytest.mark.parametrize(
    ("url", "doc_id"),
    [
        ("https://x.org/docs/guide/install.html", "guide/install"),
        ("https://x.org/docs/guide/", "guide"),
        ("https://x.org/docs/index.html", "index"),
        ("https://x.org/docs/", "index"),
    ],
)
def test_page_ids_are_paths_below_the_root(url: str, doc_id: str):
    assert page_id(url, "https://x.org/docs/") == doc_id


def test_a_base_url_maps_a_file_to_its_page_and_none_gives_its_path_in_the_folder():
    assert page_url("https://d.org/{stem}/", "guide/a.md") == "https://d.org/guide/a/"
    assert page_url("https://gh/x/blob/main/{path}", "guide/a.md") == "https://gh/x/blob/main/guide/a.md"
    assert page_url("https://d.org/raw", "guide/a.md") == "https://d.org/raw/guide/a.md"
    assert page_url("", "guide/a.md") == "guide/a.md"


def test_a_sources_file_resolves_paths_beside_it_and_refuses_unknown_fields(tmp_path: Path):
    (tmp_path / "s.yaml").write_text("sources:\n  - docs\n  - {location: https://x.org/sitemap.xml, prefix: x/}\n")
    specs = load_file(tmp_path / "s.yaml")
    assert [(s.location, s.kind) for s in specs] == [
        (str(tmp_path / "docs"), "folder"),
        ("https://x.org/sitemap.xml", "site"),
    ]
    (tmp_path / "bad.yaml").write_text("sources:\n  - {location: docs, depth: 3}\n")
    with pytest.raises(SourceError, match="source 1"):
        load_file(tmp_path / "bad.yaml")
    (tmp_path / "empty.yaml").write_text("nothing: here\n")
    with pytest.raises(SourceError, match="expected `sources:`"):
        load_file(tmp_path / "empty.yaml")


def test_one_site_is_one_host_over_http_or_https():
    from assist.settings import Settings
    from assist.sources.fetch import Fetcher

    with Fetcher("http://docs.x.org/guide/", Settings()) as fetcher:
        assert fetcher.on_host("https://docs.x.org/api/")  # an upgrade to https stays on the site
        assert fetcher.on_host("http://DOCS.x.org:80/a")
        assert not fetcher.on_host("https://x.org/")
        assert not fetcher.on_host("https://docs.x.org.evil.com/")
        assert not fetcher.on_host("ftp://docs.x.org/file")


def test_a_local_openapi_file_without_a_base_url_links_to_its_name_not_the_build_machine(tmp_path: Path):
    (tmp_path / "pets.json").write_text(
        '{"openapi": "3.1.0", "info": {"title": "Pets"}, "paths": {"/pets": {"get": {"operationId": "listPets",'
        ' "responses": {"200": {"description": "ok"}}}}}}'
    )
    spec = resolved({"location": str(tmp_path / "pets.json")})
    read = kind_of(spec).read(spec, Settings(), {}, {})
    assert {c.url for p in read.pages for c in p.chunks} == {"pets.json#operation/listPets"}
