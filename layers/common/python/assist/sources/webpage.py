"""A docs page's HTML as sections: headings with their anchors, paragraphs, lists, tables and code
blocks of the page's content; the site's chrome (header, navigation, table of contents, footer,
feedback widgets, scripts) dropped first, so the navigation every page repeats never becomes text
that makes every page match every query (ADR 0058). lxml parses."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urldefrag, urljoin

import lxml.html

from assist.index.chunking import Document, section_chunks
from assist.sources.fetch import host

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
#: elements that are never content
CHROME_TAGS = ("nav", "header", "footer", "aside", "script", "style", "noscript", "form", "button", "svg",
               "template", "iframe", "dialog", "select", "input", "label")  # fmt: skip
CHROME_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search", "menu", "toolbar", "dialog")
#: class or id words of chrome inside the content area (MkDocs Material, Docusaurus, Sphinx, Read the Docs)
CHROME_WORDS = re.compile(
    r"(?:^|[\s_-])(toc|sidebar|breadcrumbs?|navbar|nav|menu|feedback|pagination|pager|footer|header|"
    r"headerlink|hash-link|skip-link|edit-?this-?page|edit-link|banner|announcement|cookie|copy(?:-to-clipboard)?|"
    r"search|rating|was-this-helpful|related|prev-next|theme-toggle|version-switcher|last-updated)(?:$|[\s_-])",
    re.I,
)
#: the content area, most specific first; the body when none is there
CONTENT = ("//main", "//article", "//*[@role='main']", "//*[@itemprop='articleBody']", "//div[@id='content']",
           *(f"//*[contains(concat(' ', normalize-space(@class), ' '), ' {c} ')]"
             for c in ("md-content", "theme-doc-markdown", "body", "document", "content")))  # fmt: skip
_SPACE = re.compile(r"\s+")


# 81 lines: the page walk's closures (heading, add, walk) share the sections being built
def parse_page(
    doc_id: str, body: bytes, url: str, source: str = "", keep_chrome: bool = False
) -> tuple[Document, list[str]]:
    """(the page as a document, the page's links on its content and navigation, absolute, without fragment).
    The document's URL is the page's canonical one when it names one on the same site. `keep_chrome`:
    the whole body, chrome and all (only `assist eval sources` asks, to measure what dropping it does)."""
    root = lxml.html.document_fromstring(body)
    links = [urldefrag(urljoin(url, h))[0] for h in root.xpath("//a/@href") if not h.startswith(("mailto:", "#"))]
    canonical = next(iter(root.xpath("//link[@rel='canonical']/@href")), "")
    if canonical and _same_site(urljoin(url, canonical), url):
        url = urldefrag(urljoin(url, canonical))[0]
    page_title = _text(next(iter(root.xpath("//title")), None)).split(" | ")[0].strip()
    if keep_chrome:
        content = root.find("body") if root.find("body") is not None else root
    else:
        content = _content(root)
        _drop_chrome(content)
    for code in content.iter("code"):  # inline code keeps its backticks, as in the Markdown it came from
        if not any(a.tag == "pre" for a in code.iterancestors()) and code.text is not None:
            code.text = f"`{code.text}"
            code.tail = "`" + (code.tail or "")
    sections: list[tuple[list[str], list[str]]] = [([], [])]
    anchors = [""]
    path: list[tuple[int, str]] = []
    headings: list[str] = []
    title = ""

    def heading(el: Any) -> None:
        nonlocal path, title
        level, name = HEADINGS[el.tag], _text(el)
        if not name:
            return
        if level == 1 and not title and len(sections) == 1:
            title = name
        headings.append(name)
        path = [(lvl, n) for lvl, n in path if lvl < level] + [(level, name)]
        sections.append(([n for _, n in path], []))
        anchors.append(_anchor(el))

    def add(text: str) -> None:
        if text.strip():
            sections[-1][1].extend([text, ""])

    def walk(el: Any) -> None:
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in HEADINGS:
            heading(el)
        elif tag == "pre":
            classes = " ".join(e.get("class") or "" for e in (el, *el.iter("code"))).split()
            lang = next((c[9:] for c in classes if c.startswith("language-")), "")
            code = el.text_content().rstrip()
            add(f"```{lang}\n{code}\n```")
        elif tag == "table":
            rows = [" | ".join(_text(c) for c in tr.xpath("./th|./td")) for tr in el.iter("tr")]
            add("\n".join(f"| {r} |" for r in rows if r.strip(" |")))
        elif tag in ("p", "dt", "dd", "figcaption", "caption", "blockquote") and not el.xpath(".//pre|.//table"):
            add(_text(el))
        elif tag == "li":
            nested = el.xpath("./ul|./ol|./pre|./table|./div/pre")
            own = _SPACE.sub(" ", "".join(_own_text(el))).strip()
            add(f"- {own}" if own else "")
            for child in nested:
                walk(child)
        else:
            if el.text and el.text.strip() and tag not in ("ul", "ol", "table"):
                add(_SPACE.sub(" ", el.text).strip())
            for child in el:
                walk(child)
                if child.tail and child.tail.strip():
                    add(_SPACE.sub(" ", child.tail).strip())

    walk(content)
    title = title or page_title or doc_id.rsplit("/", 1)[-1]
    for _, lines in sections:  # a list's items stay on consecutive lines, as Markdown writes them
        joined = "\n".join(lines)
        lines[:] = [re.sub(r"(\n- [^\n]*)\n\n(?=- )", r"\1\n", "\n" + joined)[1:]] if joined else []
    chunks = section_chunks(doc_id, title, source or url, url, sections, anchors)
    return Document(doc_id, title, chunks, {}, headings, source or url), links


def _same_site(a: str, b: str) -> bool:
    return host(a) == host(b)


def _content(root: Any) -> Any:
    for path in CONTENT:
        if found := root.xpath(path):
            return found[0]
    body = root.find("body")
    return body if body is not None else root


def _drop_chrome(content: Any) -> None:
    doomed = []
    for el in content.iter():
        if not isinstance(el.tag, str) or el is content:
            continue
        words = f"{el.get('class') or ''} {el.get('id') or ''}"
        if (
            el.tag in CHROME_TAGS
            or (el.get("role") or "") in CHROME_ROLES
            or el.get("aria-hidden") == "true"
            or el.get("hidden") is not None
            or (el.tag not in HEADINGS and el.tag != "pre" and CHROME_WORDS.search(words))
        ):
            doomed.append(el)
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()  # keeps the element's tail text, which belongs to its parent


def _anchor(el: Any) -> str:
    """The heading's id, else its section's (Sphinx puts it there), else a named anchor inside it."""
    if el.get("id"):
        return el.get("id")
    parent = el.getparent()
    if parent is not None and parent.tag == "section" and parent.get("id"):
        return parent.get("id")
    inner = el.xpath(".//a[@id]/@id|.//a[@name]/@name")
    return inner[0] if inner else ""


def _text(el: Any) -> str:
    return _SPACE.sub(" ", el.text_content()).strip() if el is not None else ""


def _own_text(el: Any) -> list[str]:
    """A list item's text without its nested lists and blocks."""
    out = [el.text or ""]
    for child in el:
        if child.tag not in ("ul", "ol", "pre", "table") and not child.xpath("./pre"):
            out.append(child.text_content())
        out.append(child.tail or "")
    return out
