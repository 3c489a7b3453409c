"""Files as documents: a folder of docs, a git repository's tracked docs and code (kinds/repo.py), a PDF.

Markdown as it is; MDX with its imports, exports and components stripped (their text stays);
reStructuredText with its underlined titles read as headings; PDF one section per page (pypdf);
code cut along functions and classes (code.py). Each document's URL is the base URL's page for its
path (ADR 0059), or without one its path inside the folder: never a build path (ADR 0112)."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from assist.index import manifest
from assist.index.chunking import Document, doc_hash, parse_document, section_chunks
from assist.sources.code import chunk_code
from assist.sources.fetch import check_text
from assist.sources.spec import Page, PublishedSpec, Read, SourceError

if TYPE_CHECKING:
    from assist.settings import Settings

DOC_SUFFIXES = {".md", ".markdown", ".mdx", ".txt", ".rst", ".pdf"}
#: folders of a repository that hold generated or vendored code, never documentation
SKIP_DIRS = {"node_modules", "vendor", "dist", "build", "__pycache__", "site-packages", "third_party"}
_FENCE = re.compile(r"^\s*(```|~~~)")
_MDX_TOPLEVEL = re.compile(r"^(import|export)\s")
_JSX_TAG = re.compile(r"</?[A-Z][\w.]*(?:\s[^<>]*?)?/?>|\{/\*.*?\*/\}")
_RST_UNDERLINE = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def read_folder(spec: PublishedSpec, settings: Settings) -> Read:
    root = Path(spec.location)
    if not root.exists():
        raise SourceError(f"{root} does not exist")
    files = [(root.name, root)] if root.is_file() else _walk(root, DOC_SUFFIXES)
    return read_files(spec, settings, root if root.is_dir() else root.parent, files, code=False)


def skipped(rel: PurePosixPath) -> bool:
    """Generated, vendored or hidden: never documentation."""
    return any(part in SKIP_DIRS or part.startswith(".") for part in rel.parts) or rel.name.endswith(".min.js")


def _walk(root: Path, suffixes: set[str]) -> list[tuple[str, Path]]:
    return [
        (p.relative_to(root).as_posix(), p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix.lower() in suffixes and not skipped(PurePosixPath(p.relative_to(root).as_posix()))
    ]


def read_files(spec: PublishedSpec, settings: Settings, root: Path, files: list[tuple[str, Path]], code: bool) -> Read:
    out = Read(counts={"files": 0, "skipped_empty": 0})
    base = spec.base_url or settings.sources.docs_base_url
    for rel, path in files:
        size = path.stat().st_size
        if size > settings.crawl.max_page_bytes:
            raise SourceError(f"{path}: {size} bytes, over the limit of {settings.crawl.max_page_bytes}")
        suffix = path.suffix.lower()
        stem = str(PurePosixPath(rel).with_suffix(""))
        url = page_url(base, rel)
        data = path.read_bytes()
        if suffix == ".pdf":
            doc = read_pdf(spec.prefix + stem, data, str(path), url)
        elif suffix in DOC_SUFFIXES:
            text = check_text(str(path), data)
            text = strip_mdx(text) if suffix == ".mdx" else rst_to_markdown(text) if suffix == ".rst" else text
            doc = parse_document(spec.prefix + stem, text, source=str(path), url=url)
        elif code:
            doc_id = spec.prefix + rel  # with its suffix: `client.py` and `client.md` are two documents
            chunks = chunk_code(doc_id, rel, check_text(str(path), data), url)
            doc = Document(doc_id, rel, chunks, {}, [c.heading for c in chunks], str(path))
        else:
            continue
        out.counts["files"] += 1
        if not doc.chunks:  # an empty file has nothing to index
            out.counts["skipped_empty"] += 1
            continue
        entry = manifest.entry_for(doc, root=str(root))
        # the link is part of what the index holds: a new base URL rewrites the rows (their vectors are reused)
        out.pages.append(Page(doc.doc_id, doc_hash(url + "\n" + hashlib.sha256(data).hexdigest()), doc.chunks, entry))
    return out


def page_url(base: str, rel: str) -> str:
    """Where the file at `rel` is published: `base` with `{path}`/`{stem}` filled in, or `base` + rel;
    without a base, `rel` itself: the folder's layout is all a reader can use (a file:// URL names the machine
    that built the index, and no visitor can open it)."""
    if not base:
        return rel
    stem = str(PurePosixPath(rel).with_suffix(""))
    if "{path}" in base or "{stem}" in base:
        return base.replace("{path}", rel).replace("{stem}", stem)
    return base.rstrip("/") + "/" + rel


def strip_mdx(text: str) -> str:
    """MDX as Markdown: import/export lines and JSX tags out (outside code fences), their text kept."""
    out = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
        elif not _MDX_TOPLEVEL.match(line):
            out.append(_JSX_TAG.sub("", line))
    return "\n".join(out)


def rst_to_markdown(text: str) -> str:
    """reStructuredText titles (a line underlined, maybe overlined, with one punctuation character) as
    Markdown headings, levels in order of first use as reST defines them; the rest stays as it is."""
    lines = text.splitlines()
    levels: list[tuple[str, bool]] = []
    out: list[str] = []
    i = 0
    while i < len(lines):
        over = bool(_RST_UNDERLINE.match(lines[i])) and i + 2 < len(lines) and lines[i + 2] == lines[i]
        title_at = i + 1 if over else i
        if title_at + 1 < len(lines) and lines[title_at].strip() and not _RST_UNDERLINE.match(lines[title_at]):
            under = lines[title_at + 1]
            if _RST_UNDERLINE.match(under) and len(under.rstrip()) >= len(lines[title_at].strip()):
                style = (under[0], over)
                if style not in levels:
                    levels.append(style)
                out.append("#" * min(6, levels.index(style) + 1) + " " + lines[title_at].strip())
                i = title_at + 2
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def read_pdf(doc_id: str, data: bytes, source: str, url: str) -> Document:
    """One section per page, linked as `#page=N` (the PDF open parameter every viewer follows)."""
    # deferred, ADR 0104: pypdf 0.05 s, for the PDF sources only
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise SourceError(f"{source}: an encrypted PDF")
        title = str((reader.metadata or {}).get("/Title") or "").strip()
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except (pypdf.errors.PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"{source}: not a readable PDF ({exc})") from exc
    title = title or doc_id.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ").title()
    sections = [([f"Page {n}"], text.splitlines()) for n, text in enumerate(pages, 1)]
    chunks = section_chunks(doc_id, title, source, url, sections, [f"page={n}" for n in range(1, len(pages) + 1)])
    return Document(doc_id, title, chunks, {}, [f"Page {n}" for n in range(1, len(pages) + 1)], source)
