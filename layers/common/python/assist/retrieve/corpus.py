"""Questions about the corpus itself (ADR 0042): what exists, how many, does X exist, and a
named document ("status of ADR.0027"). They stay RETRIEVAL; this module recognises them against the
corpus manifest and says which entries and documents the model must be given.

Recognition is a cheap gate first — an identifier mention or a count/list/existence/document phrase,
English and Spanish — and only then a look at the manifest: a count or list must be about something
the corpus has (documents, or a type or identifier prefix of its own: "ADRs", "principios"), so
"how many retries are there?" stays an ordinary question.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assist.contracts import CorpusKind, CorpusMatch, CorpusStage, FoundBy, Scope
from assist.index.identifiers import mentions, prefixes
from assist.index.manifest import in_scope, line
from assist.index.scope import scoped
from assist.language import fold
from assist.logs import get_logger
from assist.retrieve.manifest import Manifest, load

if TYPE_CHECKING:
    from assist.contracts import TurnState
    from assist.index.manifest import Entry

log = get_logger(__name__)

_COUNT = re.compile(r"\b(how many|number of|count (the|all|of)|cuant[oa]s|numero de)\b")
_ENUMERATE = re.compile(
    r"\b(list|enumerate|show (me )?(all|every)|(what|which) (\w+ ){0,4}(exist|are there|are available|do (we|you) have)"
    r"|lista(r|me)?|enumera|muestrame tod[oa]s|(que|cuales) (\w+ ){0,4}(existen|hay))\b"
)
_EXISTS = re.compile(
    r"\b(do(es)? (\S+ ){1,6}exist|is there (an?|any)|are there any|existe|hay (un|una|algun|alguna)\b)"
)
_DOCUMENT = re.compile(
    r"\b(tell me about|status of|who approved|summari[sz]e|describe|what does|hablame de|estado de|quien aprobo"
    r"|resume|resumen de)\b"
)
#: words that mean "documents" in general: a count or list of these is about the whole corpus
GENERIC = {
    "document", "doc", "page", "file", "record", "article", "entry", "source",
    "documento", "pagina", "archivo", "registro", "articulo",
}  # fmt: skip
_WORD = re.compile(r"[a-z][a-z0-9]*")
_ID_KEY = re.compile(r"^([a-z]+)-(\d+)$")  # a document's own number, no approval-record suffix
MIN_TITLE_CHARS = 12  # a shorter title inside a question is a coincidence more often than a name


def _singulars(word: str) -> list[str]:
    out = [word]
    if word.endswith("es") and len(word) > 4:
        out.append(word[:-2])
    if word.endswith("s") and len(word) > 3:
        out.append(word[:-1])
    return out


@dataclass
class Corpus:
    """The manifest of an index (`Manifest`: identifiers resolved as the ranking resolves them), looked up
    by identifier, subject word and title; plus the chunk table the named documents are read from."""

    table: Any
    entries: list[Entry]
    manifest: Manifest = field(default_factory=Manifest)
    subjects: dict[str, set[str]] = field(init=False)  # subject → doc ids of that type or numbered so
    _scoped: dict[Scope, Corpus] = field(init=False, default_factory=dict)

    @classmethod
    def open(cls, db: Any, index_uri: str, index_table: str) -> Corpus | None:
        """The index's corpus; None when the index has no manifest yet (built before manifests existed)."""
        manifest = load(db, index_uri, index_table)
        return None if manifest is None else cls(db.open_table(index_table), manifest.entries, manifest)

    @property
    def by_id(self) -> dict[str, Entry]:
        return self.manifest.by_id

    def __post_init__(self) -> None:
        if self.manifest.entries is not self.entries:
            self.manifest = Manifest.from_entries(self.entries)
        self.subjects = {}
        for e in self.entries:
            for k in e.identifiers:
                if m := _ID_KEY.match(k):
                    self.subjects.setdefault(m.group(1), set()).add(e.id)
        # a type (or folder) stands for its documents only when no identifier prefix of that name exists
        typed: dict[str, set[str]] = {}
        for e in self.entries:
            for p in prefixes(e.type.rsplit("/", 1)[-1]) if e.type else []:
                typed.setdefault(p, set()).add(e.id)
        for p, ids in typed.items():
            self.subjects.setdefault(p, ids)

    def within(self, scope: Scope | None) -> Corpus:
        """The corpus a question in `scope` sees (ADR 0121): its documents and the table filtered to the scope,
        made once per scope; itself when no scope is asked."""
        if not scope:
            return self
        if scope not in self._scoped:
            self._scoped[scope] = Corpus(scoped(self.table, scope), in_scope(self.entries, scope))
        return self._scoped[scope]

    def subject_of(self, question: str) -> str | None:
        """The first word naming something the corpus has: a type or identifier prefix of its own
        ('adr', 'principle'), else '' for documents in general; None when the question names neither."""
        generic = False
        for word in _WORD.findall(question):
            names = [s for w in _singulars(word) for s in [w, *prefixes(w)] if s in self.subjects]
            if names:  # 'decisions' may name both a folder and an id prefix: the one with more documents
                return max(names, key=lambda s: len(self.subjects[s]))
            generic = generic or any(w in GENERIC for w in _singulars(word))
        return "" if generic else None

    def matching(self, subject: str) -> list[Entry]:
        if not subject:
            return list(self.entries)
        ids = self.subjects.get(subject, set())
        return [e for e in self.entries if e.id in ids]

    def titled(self, question: str) -> list[Entry]:
        """Entries whose title the question quotes (the longest first)."""
        q = fold(question)
        hits = [e for e in self.entries if len(e.title) >= MIN_TITLE_CHARS and fold(e.title) in q]
        return sorted(hits, key=lambda e: -len(e.title))[:1]

    def resolve(self, keys: list[str]) -> tuple[list[str], list[str]]:
        """Identifier keys (`identifiers.mentions(question)`) → (ids of the documents that have them, in
        order; keys under a prefix the corpus uses that no document has). The documents a question
        names, for ranking them first as well as for fetching them whole. A key too many documents share
        names none of them, as in the ranking (`Manifest.owners`), and is not missing either."""
        found: list[str] = []
        missing: list[str] = []
        for k in keys:
            if docs := self.manifest.owners(k):
                found += [d for d in docs if d not in found]
            elif not self.manifest.shared(k) and k.split("-", 1)[0] in self.subjects:
                missing.append(k)  # a prefix the corpus uses, a number it does not have
        return found, missing

    def companions(self, key: str) -> list[str]:
        """Documents that go with a named one: `adr-12` → the approval record `adr-12d`."""
        return [d for suffix in "abcdefghijklmnopqrstuvwxyz" for d in self.manifest.owners(f"{key}{suffix}")]


def recognize_turn(state: TurnState, corpus: Callable[[], Corpus | None] | None, budget_chars: int) -> None:
    """Is the turn's question about the corpus itself? Its ids travel on (`state.corpus`), the answer stage
    renders the entries and fetches the documents. A `corpus` stage appears only when it is; `corpus` None (no
    manifest to ask): never."""
    if corpus is None:
        return
    start = time.perf_counter()
    try:
        match = recognize(state.request.message, corpus, budget_chars)
    except Exception as exc:  # a manifest that cannot be read: an ordinary question, and the log says why
        log.warning("retrieve.corpus_failed", error=f"{type(exc).__name__}: {str(exc)[:200]}")
        return
    if match is None:
        return
    state.corpus = match
    state.stages.append(
        CorpusStage(
            ms=round((time.perf_counter() - start) * 1000, 2),
            kind=match.kind,
            subject=match.subject,
            matched=match.matched,
            entries=len(match.entries),
            documents=match.documents,
            found_by=match.found_by,
            missing_ids=match.missing,
        )
    )


def recognize(question: str, corpus: Callable[[], Corpus | None], budget_chars: int) -> CorpusMatch | None:
    """The corpus question this is, or None for an ordinary one (the usual case, decided by a few regular
    expressions; `corpus` is called — the manifest read, once — only past that gate)."""
    q = fold(question)
    keys = mentions(question)
    count, enumerate_, exists, document = (bool(p.search(q)) for p in (_COUNT, _ENUMERATE, _EXISTS, _DOCUMENT))
    if not (keys or count or enumerate_ or exists or document):
        return None
    if (corpus := corpus()) is None or not corpus.entries:
        return None
    found, missing = corpus.resolve(keys)
    written = [m.group(0) for m in re.finditer(r"[A-Za-z]{2,12}[ ._-]?\d{1,6}[A-Za-z]?", question)]
    subject = corpus.subject_of(q)
    if missing and not found:
        subject = missing[0].split("-", 1)[0]
        return _listing(CorpusKind.EXISTENCE, subject, corpus, budget_chars, written, missing)
    if exists and subject is not None and not found:
        return _listing(CorpusKind.EXISTENCE, subject, corpus, budget_chars, written, missing)
    if found:
        named = [d for k in keys for d in [*corpus.manifest.owners(k), *corpus.companions(k)]]
        return CorpusMatch(
            kind=CorpusKind.DOCUMENT,
            total=len(corpus.entries),
            documents=list(dict.fromkeys(named)),
            entries=list(dict.fromkeys(named)),
            found_by=FoundBy.IDENTIFIER,
            mentioned=written,
            missing=missing,
        )
    if (count or enumerate_) and subject is not None:
        return _listing(CorpusKind.COUNT if count else CorpusKind.ENUMERATE, subject, corpus, budget_chars, written, [])
    if document and (titled := corpus.titled(question)):
        ids = [e.id for e in titled]
        return CorpusMatch(
            kind=CorpusKind.DOCUMENT, total=len(corpus.entries), documents=ids, entries=ids, found_by=FoundBy.TITLE
        )
    return None


def _listing(
    kind: CorpusKind, subject: str, corpus: Corpus, budget_chars: int, written: list[str], missing: list[str]
) -> CorpusMatch:
    matched = corpus.matching(subject)
    given: list[str] = []
    used = 0
    for e in matched:
        n = len(line(e)) + 1
        if given and used + n > budget_chars:
            break
        given.append(e.id)
        used += n
    return CorpusMatch(
        kind=kind,
        subject=subject,
        total=len(corpus.entries),
        matched=len(matched),
        entries=given,
        mentioned=written,
        missing=missing,
    )
