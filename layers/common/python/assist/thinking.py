"""A model's thinking, kept apart from its answer (ADR 0078).

Ollama parses a thinking model's reasoning into `message.thinking` when the model's template supports it; an
older template (or an Ollama before 0.12.4 asked nothing) leaves it in `content` as `<think>…</think>`, or, when
the template opened the tag in the prompt, as a stray `…</think>` at the start. Whatever reaches `content`
is taken out here, whole or streamed (a tag may be split across chunks), so no answer, stored turn or history
sent back carries it.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<think>", "</think>"
#: longest stretch held back while a reply might still turn out to be a stray `…</think>`; past it, it is the answer
HOLD_CHARS = 6000
_BLOCK = re.compile(r"^\s*<think>.*?(?:</think>\s*|$)", re.DOTALL)
_STRAY = re.compile(r"^.*?</think>\s*", re.DOTALL)


def strip_thinking(text: str, stray: bool = True) -> str:
    """`text` without a leading `<think>…</think>` block (an unclosed one is all thinking) and, with `stray`,
    without a leading `…</think>` (a template that opened the tag itself)."""
    out, n = _BLOCK.subn("", text, count=1)
    if stray and not n and CLOSE in text:
        out = _STRAY.sub("", text, count=1)
    return out


class ThinkFilter:
    """Strips thinking from a stream of content deltas: `feed` returns (thinking, answer) text for each delta,
    `finish` what is left. With `stray`, a reply that does not open with `<think>` is held back until a `</think>`
    shows it was thinking, or `HOLD_CHARS` (or its end) shows it was not."""

    def __init__(self, stray: bool = False) -> None:
        self._stray = stray
        self._buf = ""
        self._state = "start"  # start | thinking | after | stray | answer

    def feed(self, delta: str) -> tuple[str, str]:
        if self._state == "answer":
            return "", delta
        self._buf += delta
        return self._step(final=False)

    def finish(self) -> tuple[str, str]:
        return self._step(final=True) if self._state != "answer" else ("", "")

    def _step(self, final: bool) -> tuple[str, str]:
        thought = ""
        while True:
            buf = self._buf
            if self._state == "start":
                lead = buf.lstrip()
                if lead.startswith(OPEN):
                    self._state, self._buf = "thinking", lead[len(OPEN) :]
                    continue
                if not final and (not lead or OPEN.startswith(lead)):
                    return thought, ""  # too little yet to tell
                self._state = "stray" if self._stray else "answer"
                continue
            if self._state in ("thinking", "stray"):
                end = buf.find(CLOSE)
                if end >= 0:
                    thought += buf[:end]
                    self._state, self._buf = "after", buf[end + len(CLOSE) :]
                    continue
                if self._state == "stray" and (final or len(buf) > HOLD_CHARS):
                    self._state = "answer"  # no `</think>`: it was the answer all along
                    continue
                keep = len(CLOSE) - 1  # a tag split across chunks
                if self._state == "thinking":
                    thought, self._buf = thought + buf[:-keep] if len(buf) > keep else thought, buf[-keep:]
                return thought, ""
            if self._state == "after":
                rest = buf.lstrip()
                if not rest and not final:
                    self._buf = ""
                    return thought, ""
                self._state, self._buf = "answer", rest
                continue
            out, self._buf = self._buf, ""
            return thought, out
