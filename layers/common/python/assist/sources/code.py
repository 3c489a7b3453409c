"""Code files cut along their functions and classes, so a CODE_GENERATION answer can cite a real,
whole example: Python through its syntax tree (`ast`), other languages at their top-level declarations.
Each piece is a fenced block under a heading that names it (`def rotate_key`, `class Client > send`),
linked to its lines (`#L12-L40`)."""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from assist.index.chunking import MAX_CHARS, DocChunk, slug, windows

LANGUAGES = {
    ".py": "python", ".js": "javascript", ".mjs": "javascript", ".jsx": "jsx", ".ts": "typescript",
    ".tsx": "tsx", ".go": "go", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".rs": "rust",
    ".php": "php", ".cs": "csharp", ".swift": "swift", ".sh": "bash",
}  # fmt: skip
#: a top-level declaration in the C-like and scripting languages above, and the name it declares
_DECL = re.compile(
    r"^(?:export\s+)?(?:default\s+)?(?:pub(?:\(crate\))?\s+)?(?:public\s+|private\s+|protected\s+|internal\s+)?"
    r"(?:static\s+|abstract\s+|final\s+|async\s+)*"
    r"(?P<kind>function\*?|class|interface|enum|type|const|let|var|func|fn|struct|trait|impl|def|module|object)\s+"
    r"(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_$][\w$]*)"
)


def chunk_code(doc_id: str, path: str, text: str, url: str) -> list[DocChunk]:
    """The file's pieces, in order; the lines before the first declaration (imports, constants) are one."""
    suffix = PurePosixPath(path).suffix.lower()
    lang = LANGUAGES.get(suffix, "")
    lines = text.splitlines()
    spans = _python_spans(text) if lang == "python" else None
    if spans is None:
        spans = _declaration_spans(lines)
    pieces: list[tuple[str, int, int]] = []  # (heading, first line, last line), 1-based
    covered = 0
    for heading, start, end in spans:
        if start > covered + 1 and "\n".join(lines[covered : start - 1]).strip():
            pieces.append(("module", covered + 1, start - 1))
        pieces.append((heading, start, end))
        covered = end
    if covered < len(lines) and "\n".join(lines[covered:]).strip():
        pieces.append(("module", covered + 1, len(lines)))
    chunks: list[DocChunk] = []
    seen: dict[str, int] = {}
    for heading, start, end in pieces:
        body = "\n".join(lines[start - 1 : end]).strip("\n")
        for part in windows(body) if len(body) > MAX_CHARS else [body]:
            base = f"{doc_id}#{slug(heading)}"
            n = seen.get(base, 0)
            seen[base] = n + 1
            fragment = f"L{start}-L{end}"
            chunks.append(
                DocChunk(
                    f"{base}:{n}", doc_id, path, heading, path, len(chunks), f"```{lang}\n{part}\n```",
                    f"{url}#{fragment}" if url else "",
                )
            )  # fmt: skip
    return chunks


def _python_spans(text: str) -> list[tuple[str, int, int]] | None:
    """Top-level functions and classes (decorators included); a class longer than a chunk is cut into its
    methods. None when the file does not parse (it is cut at its declarations instead)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    spans = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        source_len = sum(len(line) for line in text.splitlines()[start - 1 : end])
        methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        if kind == "class" and source_len > MAX_CHARS and methods:
            first = min([methods[0].lineno, *(d.lineno for d in methods[0].decorator_list)])
            spans.append((f"class {node.name}", start, first - 1))
            for i, m in enumerate(methods):
                m_start = min([m.lineno, *(d.lineno for d in m.decorator_list)])
                m_end = (m.end_lineno or m.lineno) if i + 1 < len(methods) else end
                spans.append((f"class {node.name} > def {m.name}", m_start, m_end))
        else:
            spans.append((f"{kind} {node.name}", start, end))
    return spans


def _declaration_spans(lines: list[str]) -> list[tuple[str, int, int]]:
    """Each unindented declaration runs to the line before the next one."""
    starts = [(i + 1, m) for i, line in enumerate(lines) if (m := _DECL.match(line))]
    spans = []
    for j, (start, m) in enumerate(starts):
        end = starts[j + 1][0] - 1 if j + 1 < len(starts) else len(lines)
        while end > start and not lines[end - 1].strip():
            end -= 1
        spans.append((f"{m.group('kind')} {m.group('name')}", start, end))
    return spans
