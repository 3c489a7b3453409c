"""Generated passages of a realistic length for the embedding and index-build benchmarks: words drawn from our
docs' vocabulary with a Zipf-like skew, each passage grown until the embedder's own tokenizer counts about
`tokens` tokens (240 by default: the chunks of a docs site). Seeded: every run embeds the same text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from assist.embed.files import TOKENIZER_FILE
from assist.index.chunking import MAX_CHARS
from assist_dev.bench.retrieval import vocabulary

TOKENS = 240
#: one passage, one chunk: within the chunker's limit with the heading in front (index/chunking.py)
CHARS = MAX_CHARS - 100


def tokenizer(model_dir: str | Path) -> Tokenizer:
    """The embedder's tokenizer, counting every token (the file's own settings truncate at 128)."""
    tok = Tokenizer.from_file(str(Path(model_dir) / TOKENIZER_FILE))
    tok.no_truncation()
    tok.no_padding()
    return tok


def passages(
    n: int,
    model_dir: str | Path,
    docs: Path = Path("docs"),
    tokens: int = TOKENS,
    seed: int = 11,
    chars: int | None = CHARS,
) -> list[str]:
    vocab = vocabulary(docs)
    tok = tokenizer(model_dir)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    # how many words make `tokens` tokens, measured once on a sample: the passages then vary around it
    sample = " ".join(vocab[i] for i in rng.choice(len(vocab), size=400, p=weights))
    per_word = len(tok.encode(sample, add_special_tokens=False).ids) / 400
    words = max(8, round(tokens / per_word))
    picks = rng.choice(len(vocab), size=(n, words), p=weights)
    lengths = rng.integers(int(words * 0.8), int(words * 1.2) + 1, size=n)
    texts = (" ".join(vocab[j] for j in picks[i, : lengths[i]]).capitalize() for i in range(n))
    return [(t if chars is None or len(t) <= chars else t[: t.rfind(" ", 0, chars)]) + "." for t in texts]


def token_counts(texts: list[str], model_dir: str | Path) -> list[int]:
    return [len(e.ids) for e in tokenizer(model_dir).encode_batch(texts)]


def write_pages(root: Path, texts: list[str], sections: int = 4) -> Path:
    """The passages as Markdown pages of `sections` sections each: one passage is one section is one chunk."""
    root.mkdir(parents=True, exist_ok=True)
    for p in range(0, len(texts), sections):
        body = [f"# Page {p // sections}\n"]
        body += [f"## Section {i}\n\n{text}\n" for i, text in enumerate(texts[p : p + sections])]
        (root / f"page-{p // sections:06d}.md").write_text("\n".join(body))
    return root
