"""Token counts as Claude would report them. Anthropic's tokenizer is not public: counts are tiktoken's (the
profile's encoding) times TOKEN_CORRECTION, since Claude's tokenizer gives about a tenth more tokens than
o200k_base on English prose and code (docs/messages.md says how far to trust them)."""

from __future__ import annotations

import math

TOKEN_CORRECTION = 1.1


def corrected(count: int) -> int:
    return math.ceil(count * TOKEN_CORRECTION)
