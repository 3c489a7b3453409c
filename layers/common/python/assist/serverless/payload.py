"""What travels between the ask state machine's tasks stays far below Step Functions' 256 KB.

A turn carries the request (bounded by the API limits and `contracts.REQUEST_BYTES`), the route, the
intent history (six 60-character topics), the stage timings and at most `MAX_CHUNKS`
chunks of at most `CHUNK_CHARS` characters each — never whole documents.
"""

from __future__ import annotations

import msgspec

from assist.contracts import TurnState

STEP_FUNCTIONS_LIMIT = 256 * 1024
MAX_CHUNKS = 8
CHUNK_CHARS = 1500  # the chunker's own maximum, so trimming only bites on foreign indexes


def size_of(obj: object) -> int:
    return len(msgspec.json.encode(obj))


def trim(state: TurnState) -> TurnState:
    """Keep the best `MAX_CHUNKS` chunks, each cut to `CHUNK_CHARS` characters."""
    if state.retrieval is not None:  # new chunks, not cut in place: the retriever keeps the ones it returned
        state.retrieval.chunks = [
            msgspec.structs.replace(c, text=c.text[: CHUNK_CHARS - 1] + "…") if len(c.text) > CHUNK_CHARS else c
            for c in state.retrieval.chunks[:MAX_CHUNKS]
        ]
    return state
