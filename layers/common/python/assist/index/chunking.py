"""Split Markdown/text documents along their headings into stable, self-describing chunks."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assist.index import frontmatter

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".rst"}
_HEADING = re.compile(r"^(#{1,6})\s+(.{1,200}?)\s*#*\s*$")  # a 5,000-char "# ..." line is text, not a title
_FENCE = re.compile(r"^\s*(```|~~~)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
MAX_CHARS = 1500  # ~300 tokens: within MiniLM's 256-token window after the heading prefix
OVERLAP_CHARS = 150


@dataclass(frozen=True)
class DocChunk:
    id: str
    doc_id: str
    title: str
    heading: str  # heading path, "Configuration > Model slots"
    source: str
    ordinal: int  # position in the document
    text: str
    url: str = ""  # where a reader follows it: the page's canonical URL and the section's anchor
    #: its scope (ADR 0121), stamped by the build from its source's rule; "" is every product or version
    product: str = ""
    version: str = ""

    @property
    def content(self) -> str:
        """What is embedded and full-text indexed: the heading path gives a section its subject."""
        head = f"{self.title} > {self.heading}" if self.heading else self.title
        return f"{head}\n{self.text}"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def anchor(heading: str) -> str:
    """The id a Markdown renderer (GitHub, MkDocs, markdown-it's anchors) gives a heading: lower case,
    punctuation dropped, spaces to hyphens."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def section_url(url: str, fragment: str) -> str:
    return f"{url.split('#', 1)[0]}#{fragment}" if url and fragment else url


def doc_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def iter_documents(root: Path) -> Iterator[tuple[str, Path]]:
    """(doc_id, path) for every text document below root, in a stable order."""
    if root.is_file():
        yield root.stem, root
        return
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES and not any(part.startswith(".") for part in p.parts):
            yield p.relative_to(root).with_suffix("").as_posix(), p


@dataclass(frozen=True)
class Document:
    """A parsed document: its chunks, and what the corpus manifest keeps about it."""

    doc_id: str
    title: str
    chunks: list[DocChunk]
    meta: dict[str, Any] = field(default_factory=dict)  # front matter, JSON-safe
    headings: list[str] = field(default_factory=list)  # every heading, in order
    source: str = ""


def chunk_document(doc_id: str, text: str, source: str = "") -> list[DocChunk]:
    return parse_document(doc_id, text, source).chunks


def parse_document(doc_id: str, text: str, source: str = "", url: str = "") -> Document:
    """Front matter becomes metadata (not chunk text); the title is front matter's `title` (or
    `dct:title`), else the leading H1, else the file stem. `url`: the page it is published as; each
    section's link adds its heading's anchor."""
    meta, text = frontmatter.split(text)
    meta_title = frontmatter.text_field(meta, "title")
    title = meta_title or doc_id.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ").title()
    sections: list[tuple[list[str], list[str]]] = [([], [])]
    anchors = [""]
    path: list[tuple[int, str]] = []
    headings: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m:
            level, name = len(m.group(1)), m.group(2).strip()
            if level == 1 and not path and len(sections) == 1 and not meta_title:  # a leading H1 names it
                title = name
            headings.append(name)
            path = [(lvl, n) for lvl, n in path if lvl < level] + [(level, name)]
            sections.append(([n for _, n in path], []))
            anchors.append(anchor(name))
        else:
            sections[-1][1].append(line)
    return Document(
        doc_id, title, section_chunks(doc_id, title, source, url, sections, anchors), meta, headings, source
    )


def section_chunks(
    doc_id: str, title: str, source: str, url: str, sections: list[tuple[list[str], list[str]]], anchors: list[str]
) -> list[DocChunk]:
    """Chunks of a document's sections ((heading path, lines) in order, each with its anchor), whatever
    format they were read from: the ids and windows are the same for Markdown, HTML, reST and PDF."""
    chunks: list[DocChunk] = []
    seen: dict[str, int] = {}
    for (heading_path, lines), fragment in zip(sections, anchors, strict=True):
        body = "\n".join(lines).strip()
        if not _COMMENT.sub("", body).strip():  # nothing, or only `<!-- markdownlint-disable … -->`
            continue
        heading = " > ".join(h for h in heading_path if h != title) if heading_path else ""
        base = f"{doc_id}#{slug(heading) if heading else 'intro'}"
        for piece in windows(body):
            n = seen.get(base, 0)
            seen[base] = n + 1
            # the id counts within its section (stable when other sections change); ordinal is the position
            # in the document, so a whole document can be read back in order
            chunks.append(
                DocChunk(f"{base}:{n}", doc_id, title, heading, source, len(chunks), piece, section_url(url, fragment))
            )
    return chunks


def windows(body: str) -> list[str]:
    """Long sections are cut at paragraph boundaries, with a little overlap for context."""
    if len(body) <= MAX_CHARS:
        return [body]
    paras = re.split(r"\n\s*\n", body)
    out: list[str] = []
    cur = ""
    for para in paras:
        while len(para) > MAX_CHARS:  # one huge paragraph: cut on a word boundary
            cut = para.rfind(" ", 0, MAX_CHARS)
            cut = cut if cut > MAX_CHARS // 2 else MAX_CHARS
            para_head, para = para[:cut], para[cut:].lstrip()
            if cur:
                out.append(cur)
                cur = ""
            out.append(para_head)
        if cur and len(cur) + len(para) + 2 > MAX_CHARS:
            out.append(cur)
            cur = cur[-OVERLAP_CHARS:].split(" ", 1)[-1] + "\n\n" + para
        else:
            cur = f"{cur}\n\n{para}" if cur else para
    if cur:
        out.append(cur)
    return out
