"""What travels between the ask state machine's tasks stays far below Step Functions' 256 KB.

A turn carries the request (bounded by the API limits and `contracts.REQUEST_BYTES`), the route, the
intent history (six 60-character topics), the stage timings, at most `MAX_CHUNKS`
chunks of at most `CHUNK_CHARS` characters each — never whole documents — and, for a
CONVERSATIONAL turn, the session's last exchanges within `CONVERSATION_BYTES`.
"""

from __future__ import annotations

import msgspec

from assist.contracts import Exchange, TurnState

STEP_FUNCTIONS_LIMIT = 256 * 1024
MAX_CHUNKS = 8
CHUNK_CHARS = 1500  # the chunker's own maximum, so trimming only bites on foreign indexes
#: six earlier messages at their limit would be 300 KB in characters JSON escapes six-fold
CONVERSATION_BYTES = 64 * 1024


def size_of(obj: object) -> int:
    return len(msgspec.json.encode(obj))


def trim(state: TurnState) -> TurnState:
    """Keep the best `MAX_CHUNKS` chunks, each cut to `CHUNK_CHARS` characters, and the newest exchanges
    that fit in `CONVERSATION_BYTES` (the newest one cut to fit, if it is too long alone)."""
    state.conversation = _newest_that_fit(state.conversation)
    if state.retrieval is not None:  # new chunks, not cut in place: the retriever keeps the ones it returned
        state.retrieval.chunks = [
            msgspec.structs.replace(c, text=c.text[: CHUNK_CHARS - 1] + "…") if len(c.text) > CHUNK_CHARS else c
            for c in state.retrieval.chunks[:MAX_CHUNKS]
        ]
    return state


def _newest_that_fit(conversation: list[Exchange]) -> list[Exchange]:
    kept: list[Exchange] = []
    room = CONVERSATION_BYTES
    for exchange in reversed(conversation):
        if (n := size_of(exchange)) > room:
            break
        kept.insert(0, exchange)
        room -= n
    if conversation and not kept:  # even the last exchange alone is too long: its start still says what it was
        cut = CONVERSATION_BYTES // 16  # characters; at six bytes each, message and answer fit together
        last = conversation[-1]
        kept = [msgspec.structs.replace(last, message=last.message[:cut], answer=last.answer[:cut])]
    return kept
