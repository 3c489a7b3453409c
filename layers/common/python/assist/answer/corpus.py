"""The answer side of a question about the corpus itself (ADR 0042): the `<corpus>` prompt section of the entries
the retrieve stage matched (`retrieve/corpus.py` recognises the question), and the answer from the manifest alone
for when no model can answer. Entries are looked up by id in the manifest the caller hands over."""

from __future__ import annotations

from collections.abc import Mapping

from assist.answer.phrases import DEFAULT, phrase
from assist.contracts import CorpusKind, CorpusMatch
from assist.index.manifest import Entry, line, name


def describe(match: CorpusMatch, lang: str = DEFAULT) -> str:
    """'ADR documents', 'principle documents', 'documents' (in `lang`: 'documentos ADR')."""
    if not match.subject:
        return phrase("documents", lang)
    if len(match.subject) <= 4:  # adr → ADR
        return phrase("acronym_documents", lang, subject=match.subject.upper())
    return phrase("typed_documents", lang, subject=match.subject)


def section(match: CorpusMatch, by_id: Mapping[str, Entry]) -> str:
    """The `<corpus>` section: a header of facts the manifest establishes, then the entries given."""
    head = [f"The index holds {match.total} documents."]
    head += [f"No document has the identifier {m.upper()}." for m in match.missing]
    if match.kind is not CorpusKind.DOCUMENT:
        head.append(f"{match.matched} of them are {describe(match)}" + (":" if match.entries else "."))
        if len(match.entries) < match.matched:
            head.append(f"(Only the first {len(match.entries)} are listed here.)")
    lines = [line(by_id[d]) for d in match.entries if d in by_id]
    return "<corpus>\n" + "\n".join(head + lines) + "\n</corpus>"


def extractive(match: CorpusMatch, by_id: Mapping[str, Entry], lang: str = DEFAULT) -> str | None:
    """A count, list or existence answer straight from the manifest (no model), its fixed sentences in `lang`;
    None for a named document (its passages answer it). Each document is named once, with its status
    where the manifest knows one."""
    if match.kind is CorpusKind.DOCUMENT:
        return None
    note = phrase("manifest", lang)
    if match.kind is CorpusKind.EXISTENCE and match.missing:
        said = ", ".join(m.upper() for m in match.missing)
        return f"{note}\n\n{phrase('missing', lang, ids=said, total=match.total)}"
    entries = [by_id[d] for d in match.entries if d in by_id]
    names = [f"- {name(e)}" + (f" ({e.fields['status']})" if e.fields.get("status") else "") for e in entries]
    key = {CorpusKind.EXISTENCE: "exist", CorpusKind.COUNT: "count"}.get(match.kind, "list")
    head = phrase(key, lang, n=match.matched, what=describe(match, lang))
    if len(entries) < match.matched:
        names.append(phrase("only_first", lang, shown=len(entries)))
    return f"{note}\n\n{head}\n" + "\n".join(names)
