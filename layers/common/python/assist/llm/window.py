"""The window a model call asks for (ADR 0079): the model client sizes it per slot, the answer stage's prompt
budget fits the prompt into it."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: the assistant's opening, the empty `<think>` block of `think: false` and a `/no_think` marker
PRIMING = 12
#: kept free of the window besides `num_predict`: the tokenizer's and the template's error (ADR 0079)
MARGIN = 0.03


@dataclass(frozen=True)
class Window:
    """What a call asks of the model: `num_ctx` tokens in all, `num_predict` of them for the answer."""

    num_ctx: int
    num_predict: int

    def limit(self) -> int:
        """The prompt's own budget."""
        return self.num_ctx - self.num_predict - PRIMING - math.ceil(MARGIN * self.num_ctx)
