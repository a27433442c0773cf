"""text.format json_schema / json_object → constrained decoding, so the output always parses.

llguidance compiles the schema and, at every step, says which tokens may come next;
this logits processor (mlx_lm's hook: it sees the tokens so far and the logits) masks
the rest. llguidance ships an MLX helper, but it is a Metal kernel: the mask is applied
here with plain MLX ops so it runs on CPU and CUDA too.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def schema_of(text_format: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a response format asks for, or None for free text."""
    if text_format.get("type") == "json_schema":
        return text_format.get("schema") or {}
    if text_format.get("type") == "json_object":
        return {"type": "object"}
    return None


class SchemaProcessor:
    """One request's constraint: consume the tokens sampled since the last call, then mask the logits."""

    def __init__(self, lltokenizer: Any, schema: dict[str, Any]) -> None:
        import llguidance
        from llguidance.numpy import allocate_token_bitmask

        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        self.matcher = llguidance.LLMatcher(lltokenizer, grammar)
        if self.matcher.is_error():
            raise ValueError(f"invalid JSON schema for constrained decoding: {self.matcher.get_error()}")
        self.vocab = lltokenizer.vocab_size
        self.bitmask = allocate_token_bitmask(1, self.vocab)
        self.seen: int | None = None

    def __call__(self, tokens: Any, logits: Any) -> Any:
        import mlx.core as mx
        from llguidance.numpy import fill_next_token_bitmask

        if self.seen is not None:  # the first call sees the prompt; later ones add the sampled tokens
            self.matcher.consume_tokens(tokens[self.seen:].tolist())
        self.seen = len(tokens)
        fill_next_token_bitmask(self.matcher, self.bitmask)
        allowed = np.unpackbits(self.bitmask.view(np.uint8), bitorder="little")[: self.vocab].astype(bool)
        width = logits.shape[-1]
        if width > self.vocab:  # embedding rows past the tokenizer's vocabulary are never allowed
            allowed = np.concatenate([allowed, np.zeros(width - self.vocab, dtype=bool)])
        return mx.where(mx.array(allowed[:width]), logits, mx.array(-float("inf"), dtype=logits.dtype))


def lltokenizer_for(tokenizer: Any) -> Any:
    """llguidance's view of an mlx_lm tokenizer (built once per model: it walks the whole vocabulary)."""
    from llguidance.hf import from_tokenizer

    return from_tokenizer(tokenizer._tokenizer, eos_token=sorted(tokenizer.eos_token_ids))
