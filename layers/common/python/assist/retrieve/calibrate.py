"""The uncertainty verdict calibrated on a corpus when it is indexed (ADR 0096).

One threshold for every corpus cannot hold: each corpus puts its answerable and its off-topic questions at
other places on the score's scale (ADR 0082). At index time the corpus itself is at hand, so:

- **answerable probes**, made without a model from a seeded sample of the sections: a title or heading turned
  into a question, a sentence's subject asked about, an identifier asked for, a name typed alone as into a
  search box (at most `MAX_PROBES`). Each is searched with its own section hidden (`Retriever.search(hide=…)`):
  a probe copies its section's words, which no user does, so scored with it the probes would sit above real
  questions and set the cut too high. Hidden, a probe is answered by the rest of the corpus only — a harder
  question than a real one, so the answerable false-flag rate errs low. The vocabulary (ADR 0082's absent
  terms) is the whole corpus's: a real question's words are in its answer's section.
- **the threshold** is a conformal quantile of the probes' scores (the verdict's score under the configured
  weights): the j-th lowest, j the largest rank such that, over the draw of n exchangeable probes, the share of
  such questions flagged exceeds the target (0.05) with probability at most 1 − confidence (0.9):
  P(Binomial(n, target) ≤ j − 1) ≤ 1 − confidence. With 300 probes that is j = 10 (expected rate 10/301).
- **the off-topic bank** (`offtopic_bank.txt`: everyday questions in English and Spanish, the project's own,
  CC0) says what share of off-topic questions the cut catches on this corpus: a figure for the manifest,
  `assist doctor` and `/insights`. When the probes' cut catches less than `BANK_TARGET` of it, the corpus
  cannot hold both goals with this score: the cut is raised toward the one that catches the bank, but never
  above the configured (cross-corpus, ADR 0082) threshold, and the calibration says `conflict` — the
  answerable bound then no longer holds, and `probes_flagged` says what the probes make of the cut.
- A corpus of fewer than `MIN_SECTIONS` sections is not calibrated: ADR 0082's threshold, lowered to the lowest
  probe's score when that is lower (a conservative default, and the calibration says so).
- **Scopes** (ADR 0121): a scope with `MIN_SECTIONS` sections of its own (the `MAX_SCOPES` largest) is calibrated
  apart, as a corpus of what it sees (its sections and the shared ones): probes made from those sections and
  searched within the scope, the bank searched within it too. Its scoped questions are judged by that threshold;
  a smaller scope's by the corpus's.
"""

from __future__ import annotations

import functools
import math
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.contracts import Scope
from assist.index import calibration as stored
from assist.index.calibration import Calibration
from assist.index.scope import KEYS as SCOPE_KEYS
from assist.index.scope import contains, key, row_scope
from assist.logs import get_logger, quiet
from assist.retrieve.manifest import load
from assist.retrieve.search import Retriever, SearchOptions, section_of
from assist.retrieve.verdict import STOP, Weights, calibrated, judge, signature, terms

if TYPE_CHECKING:
    from collections.abc import Iterable

    from assist.embed.base import Embedder
    from assist.settings import Settings

log = get_logger(__name__)
SEED = 40
MAX_PROBES = 300
MIN_SECTIONS = 30
#: scopes calibrated apart at most (the largest): each costs about what the corpus's calibration costs
MAX_SCOPES = 8
#: the share of the off-topic bank a threshold should catch (the verdict's off-topic goal)
BANK_TARGET = 0.9
BANK = Path(__file__).with_name("offtopic_bank.txt")
#: no threshold: JSON has no infinity, and no score reaches this
NEVER = -1e9
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z¿¡])")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"[*_#>|]+|^\s*[-+]\s+", re.MULTILINE)
_FENCE = re.compile(r"```.*?```|^\.\. [\w:-]+::.*$", re.DOTALL | re.MULTILINE)
#: a code symbol, a flag, an UPPER_CASE setting or a dotted/underscored name
_IDENT = re.compile(
    r"`([^`\n]{3,40})`|(?<![\w-])(--[a-z][\w-]{2,})|\b([A-Z][A-Z0-9]*_[A-Z0-9_]+|[a-z]\w*(?:[_.]\w+)+)\b"
)
#: a symbol, not a word quoted as code (`true`) nor an abbreviation (`e.g`): parts of two letters or more joined
#: by punctuation, a flag, or a capital after the first letter
_SYMBOL = re.compile(r"(?:--)?[A-Za-z]\w+(?:[-_.:/(]+\w{2,}\)?)+|[a-z]+[A-Z]\w*")
_SITE = re.compile(r"\.(?:com|org|net|io|dev|rs|app)\b|https?:|www\.")  # a web address: no one asks what it does
_NAME = re.compile(r"\b[^\W\d_][\w.-]*\w")
#: a sentence opening with these has no subject up front
_LEADS = {"if", "on", "for", "when", "however", "but", "and", "or", "so", "in", "at", "by", "with", "as", "also"}
_VERBS = {
    "is": "is",
    "are": "are",
    "lets": "let",
    "allows": "allow",
    "uses": "use",
    "returns": "return",
    "takes": "take",
    "runs": "run",
    "keeps": "keep",
    "makes": "make",
    "gives": "give",
    "needs": "need",
    "has": "have",
    "provides": "provide",
    "reduces": "reduce",
    "increases": "increase",
    "causes": "cause",
}
TITLE_ASKS = ("What is {}?", "How does {} work?", "Tell me about {}", "{}?", "Explain {}", "What about {}?")
IDENT_ASKS = ("What does {} do?", "How do I use {}?", "What is {} for?", "{}")


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    heading: str
    text: str
    scope: Scope = field(default_factory=Scope)  # its source's ("": every scope)


@dataclass(frozen=True)
class Probe:
    text: str
    section: str  # the section it was made from: hidden when it is scored
    kind: str  # title, sentence, identifier, keyword


def sections(table: Any) -> list[Section]:
    """The index's sections (a long section's windows joined), in id order, with their scopes (an index built
    before scopes has none)."""
    columns = ["id", "title", "heading", "text", "ordinal"]
    columns += [k for k in SCOPE_KEYS if k in table.schema.names]
    rows = table.search().select(columns).limit(None).to_arrow().to_pylist()
    out: dict[str, Section] = {}
    for r in sorted(rows, key=lambda r: (section_of(r["id"]), r["ordinal"])):
        sid = section_of(r["id"])
        if sid in out:
            s = out[sid]
            out[sid] = replace(s, text=f"{s.text}\n{r['text']}")
        else:
            out[sid] = Section(sid, r["title"] or "", r["heading"] or "", r["text"] or "", row_scope(r))
    return list(out.values())


def _plain(text: str) -> str:
    return " ".join(_MARKUP.sub(" ", _LINK.sub(r"\1", _FENCE.sub(" ", text))).split())


def _title_probe(s: Section, rng: random.Random) -> str | None:
    """The section's heading asked about; a heading of one or two words ("Usage") with its page's title, as a
    reader asks it ("Usage in Plugin API"), since alone it names nothing."""
    parts = [_plain(p).strip(" :.?") for p in (*s.title.split(" > "), s.heading) if p.strip()]
    if not parts:
        return None
    subject = parts[-1]
    if len(subject.split()) <= 2 and len(parts) > 1:
        subject = f"{subject} in {parts[-2]}"
    if len(subject) < 3 or len(subject.split()) > 14:
        return None
    if subject.split()[0].lower() in {"how", "what", "why", "when", "where", "which", "can", "does", "is"}:
        return f"{subject}?"
    return rng.choice(TITLE_ASKS).format(subject)


def _sentence_probe(s: Section, rng: random.Random) -> str | None:
    """A sentence of the section, its subject asked about ("What is the writer lease?"); None when the sentence
    has no subject up front (its words strung together would be no question anyone asks)."""
    candidates = [t for t in _SENTENCE.split(_plain(s.text)) if 6 <= len(t.split()) <= 40 and "`" not in t]
    if not candidates:
        return None
    words = rng.choice(candidates).rstrip(".!?").split()
    for i, w in enumerate(words[1:9], 1):
        verb = _VERBS.get(w.lower())
        if verb is None:
            continue
        subject = " ".join(words[:i])
        # "it is", "there are", "on the other hand, if you": no subject to ask about
        if not terms(subject) or not re.fullmatch(r"[\w' -]+", subject) or words[0].lower() in _LEADS:
            break
        subject = subject[0].lower() + subject[1:] if subject[1:2].islower() else subject
        if verb in ("is", "are"):
            return f"What {verb} {subject}?"
        return f"What does {subject} {verb}?" if w.lower().endswith("s") else f"What do {subject} {verb}?"
    return None


def _identifier_probe(s: Section, rng: random.Random) -> str | None:
    found = [next(g for g in m.groups() if g) for m in _IDENT.finditer(s.text)]
    found = [f for f in dict.fromkeys(g.strip() for g in found) if _SYMBOL.fullmatch(f) and not _SITE.search(f)]
    return rng.choice(IDENT_ASKS).format(rng.choice(found)) if found else None


def _keyword_probe(s: Section, rng: random.Random) -> str | None:
    """A name the section uses, alone or after one of the words before it: what a reader types into a search
    box ("tantivy", "EventBridge schedule"), as the analysis's keyword query kinds expect."""
    text = _plain(s.text)
    found = [m.group() for m in _NAME.finditer(text) if _named(m.group(), text[: m.start()].rstrip()[-1:])]
    found = list(dict.fromkeys(w for w in found if w.lower() not in STOP))
    if not found:
        return None
    word = rng.choice(found)
    before = [t for t in terms(text[: text.find(word)])[-1:] if rng.random() < 0.5]
    return " ".join([*before, word])


def _named(word: str, before: str) -> bool:
    """A name, not a word a sentence happens to open with: a capital, digit or symbol inside (`useDefine`,
    `Stat5`, `fp32`, `prefix.regex`), a short acronym (`HMR`), or a capital mid-sentence (`Docker`)."""
    inner = word[1:]
    if any(c.isupper() or c.isdigit() or c in "._" for c in inner) and not word.isupper():
        return True
    if word.isupper():
        return 2 <= len(word) <= 5
    return word[0].isupper() and before not in ("", ".", "!", "?", ":", "#")


MAKERS = (
    ("title", _title_probe),
    ("sentence", _sentence_probe),
    ("identifier", _identifier_probe),
    ("keyword", _keyword_probe),
)


def probes(secs: list[Section], seed: int = SEED, limit: int = MAX_PROBES) -> list[Probe]:
    """Deterministic answerable probes from a seeded sample of the sections: for each sampled section, its
    makers in a seeded order, as many as the share of `limit` per section allows (at most three of the four)."""
    rng = random.Random(seed)
    sample = rng.sample(secs, len(secs)) if secs else []
    per = min(3, max(1, math.ceil(limit / max(1, len(sample)))))
    out: list[Probe] = []
    seen: set[str] = set()
    for s in sample:
        makers = list(MAKERS)
        rng.shuffle(makers)
        made = 0
        for kind, make in makers:
            text = make(s, rng)
            if made == per or text is None or text.lower() in seen:
                continue
            seen.add(text.lower())
            out.append(Probe(text, s.id, kind))
            made += 1
        if len(out) >= limit:
            break
    return out[:limit]


@dataclass(frozen=True)
class OffTopic:
    text: str  # as asked
    language: str
    translation: str | None  # the English a translate stage would give (Spanish rows)


def bank(path: Path = BANK) -> list[OffTopic]:
    """The off-topic bank: `en<TAB>question` or `es<TAB>pregunta<TAB>translation` lines, `#` comments."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        lang, text, *rest = line.split("\t")
        out.append(OffTopic(text, lang, rest[0] if rest else None))
    return out


def score(
    retriever: Retriever,
    text: str,
    weights: Weights,
    k: int,
    hide: frozenset[str] = frozenset(),
    scope: Scope | None = None,
) -> float:
    """The verdict's score for this question (`-inf` when it is flagged whatever the threshold: no passage,
    only loose ones; `inf` when it never is: a named document, an unreadable question). `hide` hides sections
    from the search, not from the vocabulary: an answerable question's words are in the corpus (its answer's
    section is there), so a probe's own words hidden would be called absent — the absent question's mark. `scope`:
    searched within it, as a scoped question is (the vocabulary stays the corpus's, as the verdict's does)."""
    result = retriever.search(text, k=k, hide=hide, scope=scope)
    v = judge(text, result, replace(weights, threshold=-math.inf), True, retriever.unknown)
    if v.reason is not None:
        return -math.inf
    return v.score if v.score is not None else math.inf


def binomial_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1)) if k >= 0 else 0.0


def rank(n: int, target: float, confidence: float) -> int:
    """The largest j such that flagging below the j-th lowest of n probe scores flags more than `target` of
    questions like the probes with probability at most 1 − confidence (0 when even the lowest cannot)."""
    j = 0
    while j < n and binomial_cdf(j, n, target) <= 1 - confidence:
        j += 1
    return j


def bound(n: int, j: int, confidence: float) -> float:
    """The false-flag rate the j-th lowest of n probe scores stays under with this confidence (the rate is
    Beta(j, n + 1 − j): P(rate > u) = P(Binomial(n, u) ≤ j − 1)), by bisection."""
    if j == 0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if binomial_cdf(j - 1, n, mid) > 1 - confidence else (lo, mid)
    return hi


def threshold(scores: Iterable[float], target: float, confidence: float) -> tuple[float, int, int]:
    """(threshold, j, probes it flags) from the probes' scores: the j-th lowest (`rank`)."""
    ordered = sorted(scores)
    j = rank(len(ordered), target, confidence)
    if j == 0:
        return (ordered[0] if ordered else NEVER), 0, 0
    cut = ordered[j - 1]
    return cut, j, sum(s < cut for s in ordered)


def bank_scores(
    retriever: Retriever, weights: Weights, k: int, rows: list[OffTopic], scope: Scope | None = None
) -> dict[str, list[float]]:
    """The bank's scores by language (Spanish judged on its translation, as the engine with a translate stage
    judges it), searched within `scope` when one is given."""
    out: dict[str, list[float]] = {}
    for q in rows:
        out.setdefault(q.language, []).append(score(retriever, q.translation or q.text, weights, k, scope=scope))
    return out


def caught(scores: dict[str, list[float]], cut: float) -> dict[str, float]:
    """The share of the bank the cut flags, over all rows and per language."""
    every = [s < cut for ss in scores.values() for s in ss]
    return {"all": _share(every), **{lang: _share([s < cut for s in ss]) for lang, ss in scores.items()}}


def catching(scores: Iterable[float], share: float) -> float:
    """The lowest cut that flags at least `share` of these scores (flagged: score < cut)."""
    ordered = sorted(scores)
    if not ordered:
        return NEVER
    m = max(1, math.ceil(share * len(ordered) - 1e-9))
    return math.nextafter(ordered[m - 1], math.inf)


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def choose(
    probe_cut: float, bank_cut: float, scores: list[float], configured: float, n_sections: int
) -> tuple[float, bool, str]:
    """(threshold, conflict, why) from the probes' cut and the bank's (see the module): the probes' cut; under
    `MIN_SECTIONS` the configured one, lowered to the lowest probe's score; when the probes' cut catches too
    little of the bank, raised toward the bank's cut but never above the configured one."""
    if n_sections < MIN_SECTIONS:
        lowest = min((s for s in scores if math.isfinite(s)), default=configured)
        return min(configured, lowest), False, f"{n_sections} sections, under {MIN_SECTIONS}: the default kept"
    if bank_cut <= probe_cut:
        return probe_cut, False, ""
    cut = max(probe_cut, min(bank_cut, configured))
    why = (
        f"the probes' cut {probe_cut:.4f} catches less than {BANK_TARGET:.0%} of the off-topic bank (which needs "
        f"{bank_cut:.4f}): raised to {cut:.4f}, at most the configured threshold"
    )
    return cut, True, why


def calibrate(
    retriever: Retriever,
    weights: Weights,
    k: int,
    target: float = 0.05,
    confidence: float = 0.9,
    seed: int = SEED,
    hold_out: bool = True,
    scope: Scope | None = None,
    every: list[Section] | None = None,
) -> Calibration:
    """The calibration of this retriever's index for the verdict under `weights` (see the module). `hold_out`
    False scores each probe with its own section searchable (`assist eval uncertain` reports both). `scope`: the
    calibration of that scope alone, from the sections it sees (of `every`, the index's, read when not given)."""
    started = time.perf_counter()
    every = sections(retriever.table) if every is None else every
    secs = [s for s in every if contains(scope, s.scope)]
    made = probes(secs, seed)
    rows = bank()
    with quiet():  # one event for the calibration (below), not one `retrieve.fused` per probe and bank question
        hidden = [frozenset({p.section} if hold_out else ()) for p in made]
        scores = [score(retriever, p.text, weights, k, h, scope) for p, h in zip(made, hidden, strict=True)]
        off = bank_scores(retriever, weights, k, rows, scope)
    cut, j, flagged = threshold(scores, target, confidence)
    probe_cut = cut if math.isfinite(cut) else NEVER
    bank_cut = catching([x for xs in off.values() for x in xs], BANK_TARGET)
    calibrated = len(secs) >= MIN_SECTIONS
    cut, conflict, why = choose(probe_cut, bank_cut, scores, weights.threshold, len(secs))
    flagged = sum(s < cut for s in scores)
    share = caught(off, cut)
    out = Calibration(
        threshold=round(cut, 6),
        weights=signature(weights),
        calibrated=calibrated,
        conflict=conflict,
        why=why,
        probe_threshold=round(probe_cut, 6),
        offtopic_threshold=round(bank_cut if math.isfinite(bank_cut) else NEVER, 6),
        sections=len(secs),
        probes=len(made),
        probes_flagged=flagged,
        target=target,
        confidence=confidence,
        expected_rate=round(j / (len(made) + 1), 4),
        bound=round(bound(len(made), j, confidence), 4),
        offtopic=len(rows),
        offtopic_caught=share["all"],
        offtopic_caught_en=share.get("en", 0.0),
        offtopic_caught_es=share.get("es", 0.0),
        seed=seed,
        seconds=round(time.perf_counter() - started, 2),
        computed_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    figures = {f: getattr(out, f) for f in ("threshold", "sections", "probes", "seconds")}
    log.info("index.calibrated", **figures, **({"scope": key(scope)} if scope else {}))
    return out


def apart(secs: list[Section]) -> list[Scope]:
    """The scopes calibrated apart: those with `MIN_SECTIONS` sections of their own, the `MAX_SCOPES` largest."""
    own = Counter(s.scope for s in secs if s.scope)
    big = [scope for scope, n in own.most_common() if n >= MIN_SECTIONS]
    if len(big) > MAX_SCOPES:
        log.info("index.scopes_not_calibrated", scopes=[key(s) for s in big[MAX_SCOPES:]], why=f"over {MAX_SCOPES}")
    return big[:MAX_SCOPES]


def calibrate_scopes(
    retriever: Retriever, weights: Weights, k: int, target: float, confidence: float, until: float | None = None
) -> Calibration:
    """The corpus's calibration, with each scope big enough calibrated apart (`apart`) in its `scopes`. `until`
    (epoch seconds: the build's deadline): a scope is begun only with twice the corpus's calibration time left, as
    each costs about that; one left out is judged by the corpus's, and `apart` stays false so the next sync
    calibrates them all."""
    secs = sections(retriever.table)
    out = calibrate(retriever, weights, k, target, confidence, every=secs)
    chosen = apart(secs)
    for scope in chosen:
        if until is not None and time.time() + 2 * out.seconds > until:
            left = [key(s) for s in chosen if key(s) not in out.scopes]
            log.warning("index.scopes_not_calibrated", scopes=left, why="the build's time ran short")
            break
        out.scopes[key(scope)] = calibrate(retriever, weights, k, target, confidence, scope=scope, every=secs)
    out.apart = len(out.scopes) == len(chosen)
    return out


def calibrate_index(
    db: Any, settings: Settings, embedder: Embedder, changed: bool = True, until: float | None = None
) -> Calibration | None:
    """Calibrate the index `settings` names (its chunk table in `db`) and store it beside the table; an index
    whose documents did not change keeps a calibration that still applies. None when calibration is off.
    `until`: the build's deadline, epoch seconds (`calibrate_scopes`)."""
    if not settings.uncertain.calibrate:
        return None
    weights = Weights.from_settings(settings)
    table_name = settings.index.table
    kept = stored.read(db, table_name)
    if kept is not None and not changed and kept.apart and calibrated(weights, kept) is not weights:
        return kept  # still this engine's method for these weights, and the scopes are as they were
    catalog = functools.partial(load, db, settings.index.uri, table_name)
    retriever = Retriever(db.open_table(table_name), embedder, SearchOptions.from_settings(settings), catalog=catalog)
    u = settings.uncertain
    k = settings.retrieve.top_k
    out = calibrate_scopes(retriever, weights, k, u.calibration_target, u.calibration_confidence, until)
    stored.write(db, table_name, out)
    return out
