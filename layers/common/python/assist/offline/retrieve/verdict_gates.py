"""The verdict's absent-question misses on Vite and Click (ADR 0103): gates on the absent-term evidence,
replayed on the rows that `assist eval uncertain --evidence FILE` kept, without searching again, and the
index-time estimates tried for them. None of it ships; this module keeps ADR 0103's figures reproducible:

    python -m assist.offline.retrieve.verdict_gates EVIDENCE NAME=CORPUS [NAME=CORPUS ...]
        [--share 0.5] [--index-root DIR]

- **gates**: a question is flagged when the calibrated verdict flags it (ADR 0096) or when its gate holds. A
  gate reads the evidence's `unknown` terms (absent from the whole corpus, no typo forgiven), the `named`
  signal (an absent name, one typo forgiven), and whether the question names the corpus's **subject**: a
  term found in more than `share` of the corpus's documents, read from the corpus alone.
- **salient**: an absent term written as a name (`verdict.names`) or that is not one word of the embedder's
  vocabulary (`mypy`, `asyncio` are pieces; `underneath`, `disk` are words).
- **leave one section out**: the calibration's probes (`calibrate.probes`) with their own section's words taken
  out of the vocabulary: how often a question about a section carries a term no other section has.
- **density** (`--index-root`): a question's mean cosine distance to its k nearest chunks as a percentile of the
  chunks' own (ADR 0096 §6), and its AUC between absent and answerable questions.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Container, Iterable
from pathlib import Path

import lancedb
import numpy as np
from tokenizers import Tokenizer

from assist.embed.build import build_embedder
from assist.embed.files import TOKENIZER_FILE
from assist.index.calibration import Calibration
from assist.offline.retrieve.beir import read_corpus
from assist.offline.retrieve.evaluate_verdict import ABSENT, ANSWERABLE, OFF_TOPIC, load
from assist.offline.retrieve.verdict_fit import Evidence, flagged
from assist.retrieve.calibrate import Section, probes
from assist.retrieve.verdict import _WORD, STOP, Weights, calibrated, names, terms
from assist.settings import Settings

SHARE = 0.5  # a subject term is in more than this share of the documents
KS = (1, 5, 10)
GROUPS = (ANSWERABLE, OFF_TOPIC, ABSENT)

#: gate(evidence, the question's names, its unknown terms, whether it names the subject, the embedder's words)
Gate = Callable[[Evidence, set[str], set[str], bool, Container[str]], bool]


def words_of(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def subject(corpus: dict[str, tuple[str, str]], share: float = SHARE) -> set[str]:
    """The corpus's subject: its terms (stop words and numbers out) in more than `share` of its documents."""
    df = Counter(w for title, text in corpus.values() for w in words_of(f"{title} {text}"))
    n = max(1, len(corpus))
    return {w for w, c in df.items() if c / n > share and w not in STOP and not w.isdigit()}


def salient(term: str, named: set[str], words: Container[str]) -> bool:
    """A name by its writing, or not one word of the embedder's vocabulary (a library, a tool, a module)."""
    return term in named or term not in words


GATES: dict[str, Gate] = {
    "calibrated (ADR 0096)": lambda e, nm, unk, subj, words: False,
    "named alone": lambda e, nm, unk, subj, words: bool(e.signals and e.signals[4] > 0),
    "exact name alone": lambda e, nm, unk, subj, words: bool(nm & unk),
    "named + subject": lambda e, nm, unk, subj, words: bool(e.signals and e.signals[4] > 0) and subj,
    "exact name + subject": lambda e, nm, unk, subj, words: bool(nm & unk) and subj,
    "any absent term + subject": lambda e, nm, unk, subj, words: bool(unk) and subj,
    "salient alone": lambda e, nm, unk, subj, words: any(salient(t, nm, words) for t in unk),
    "salient + subject": lambda e, nm, unk, subj, words: subj and any(salient(t, nm, words) for t in unk),
}


def replay(
    rows: list[Evidence], weights: Weights, topic: set[str], words: Container[str]
) -> dict[str, dict[str, tuple[int, int]]]:
    """Per gate and group: (flagged, questions). A gate adds flags only to rows the verdict scored: a row decided
    without the score (no passage, loose passages) is flagged or not as it was."""
    base = flagged(rows, weights)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for gate_name, gate in GATES.items():
        counts: dict[str, list[int]] = {g: [0, 0] for g in GROUPS}
        for e, flag in zip(rows, base, strict=True):
            nm, unk = names(e.text) - STOP, set(e.unknown)
            if not flag and e.signals is not None and not e.fixed:
                flag = gate(e, nm, unk, bool((nm - unk) & topic), words)
            counts[e.group][0] += bool(flag)
            counts[e.group][1] += 1
        out[gate_name] = {g: (c[0], c[1]) for g, c in counts.items()}
    return out


def naming(rows: Iterable[Evidence], topic: set[str]) -> Counter[str]:
    """Questions per group that name a subject term the corpus has."""
    return Counter(e.group for e in rows if ((names(e.text) - STOP) - set(e.unknown)) & topic)


def answerable_salient(rows: Iterable[Evidence], words: Container[str]) -> tuple[int, int]:
    """(answerable questions with an absent salient term, answerable questions): what a salient-term gate would
    flag if every answerable question also named the corpus's subject (naming it adds a known term, not an
    absent one)."""
    asked = [e for e in rows if e.group == ANSWERABLE]
    return sum(any(salient(t, names(e.text) - STOP, words) for t in e.unknown) for e in asked), len(asked)


def leave_one_out(corpus: dict[str, tuple[str, str]], words: Container[str]) -> dict[str, float]:
    """Share of the calibration's probes with an absent term, an absent name and an absent salient term when
    their own section's words are taken out of the vocabulary."""
    secs = [Section(i, title, "", text) for i, (title, text) in corpus.items()]
    own = {s.id: words_of(f"{s.title} {s.text}") for s in secs}
    df = Counter(w for ws in own.values() for w in ws)
    made = probes(secs)
    hits = Counter()
    for p in made:
        nm = names(p.text) - STOP
        unk = [t for t in terms(p.text) if df[t] - (t in own[p.section]) <= 0]
        hits["any"] += bool(unk)
        hits["name"] += any(t in nm for t in unk)
        hits["salient"] += any(salient(t, nm, words) for t in unk)
    return {"probes": len(made), **{k: round(v / max(1, len(made)), 3) for k, v in hits.items()}}


def percentiles(chunks: np.ndarray, questions: np.ndarray, k: int) -> np.ndarray:
    """Each question's mean cosine distance to its k nearest chunks, as the share of chunks whose own mean
    distance to their k nearest other chunks is lower (vectors unit length)."""
    own = 1.0 - chunks @ chunks.T
    np.fill_diagonal(own, np.inf)
    base = np.sort(np.sort(own, axis=1)[:, :k].mean(axis=1))
    far = np.sort(1.0 - questions @ chunks.T, axis=1)[:, :k].mean(axis=1)
    return np.searchsorted(base, far) / len(base)


def auc(high: np.ndarray, low: np.ndarray) -> float:
    """The probability that a row of `high` scores above a row of `low` (ties count half)."""
    a, b = high[:, None], low[None, :]
    return float(((a > b) + 0.5 * (a == b)).mean())


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def density(rows: list[Evidence], index_dir: Path, embed: Callable[[list[str]], np.ndarray]) -> list[str]:
    """Per k, the AUC of the density percentile, absent against answerable and off-topic against answerable (the
    chunks of `assist eval uncertain`'s index for the set: table `corpus`)."""
    vectors = lancedb.connect(str(index_dir)).open_table("corpus").to_arrow().column("vector").to_pylist()
    chunks = _unit(np.asarray(vectors))
    asked = {g: _unit(embed([e.text for e in rows if e.group == g])) for g in GROUPS}
    out = []
    for k in KS:
        p = {g: percentiles(chunks, q, k) for g, q in asked.items()}
        out.append(
            f"k={k}: absent above answerable {auc(p[ABSENT], p[ANSWERABLE]):.3f}, "
            f"off-topic above answerable {auc(p[OFF_TOPIC], p[ANSWERABLE]):.3f}"
        )
    return out


def _cell(flags: int, n: int) -> str:
    return f"{flags / n:.3f} ({flags})" if n else "-"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m assist.offline.retrieve.verdict_gates", description=__doc__)
    p.add_argument("evidence", help="an `assist eval uncertain --evidence` file")
    p.add_argument("corpora", nargs="+", metavar="NAME=CORPUS", help="each set's BEIR corpus.jsonl")
    p.add_argument("--share", type=float, default=SHARE, help="a subject term is in more than this share")
    p.add_argument("--index-root", type=Path, help="the evaluation's indexes: also the density's AUC")
    args = p.parse_args(argv)
    s = Settings()
    words = Tokenizer.from_file(str(Path(s.embed.model_dir) / TOKENIZER_FILE)).get_vocab()
    found, calibrations = load(args.evidence)
    configured = Weights.from_settings(s)
    embed = build_embedder(s).embed if args.index_root else None
    print("| set | kind (n; naming the subject) | " + " | ".join(GATES) + " |")
    notes = []
    for name, path in (c.split("=", 1) for c in args.corpora):
        corpus, rows = read_corpus(path), found[name]
        topic, c = subject(corpus, args.share), calibrations.get(name)
        weights = calibrated(configured, c if isinstance(c, Calibration) else None)
        flags, named_subject = replay(rows, weights, topic, words), naming(rows, topic)
        for g in GROUPS:
            cells = " | ".join(_cell(*flags[gate][g]) for gate in GATES)
            print(f"| {name} | {g} ({flags['named alone'][g][1]}; {named_subject[g]}) | {cells} |")
        notes.append(
            f"{name}: subject {sorted(topic)}; answerable with an absent salient term {answerable_salient(rows, words)}"
        )
        notes.append(f"{name}: leave one section out {leave_one_out(corpus, words)}")
        if embed is not None:
            notes += [f"{name} density {line}" for line in density(rows, args.index_root / name, embed)]
    print("\n".join(["", *notes]))


if __name__ == "__main__":
    main()
