"""Reuse the KV cache of the previous turn: a follow-up prompt (previous_response_id, a conversation)
starts with the tokens the model has already seen, so only the new tail is prefilled."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):  # up to the shorter one's end
        if x != y:
            break
        n += 1
    return n


@dataclass
class PromptCache:
    """One model's most recent KV cache and the tokens it holds. Used under the model's lock."""

    model: Any
    tokens: list[int] = field(default_factory=list)
    cache: list[Any] | None = None

    def take(self, prompt: list[int]) -> tuple[list[Any], int]:
        """A cache to generate `prompt` with, and how many of its tokens are already in it.

        At least the last prompt token is always left to process: it yields the first logits.
        """
        from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache, trim_prompt_cache

        cache, self.cache = self.cache, None  # a failed generation must not leave a half-written cache
        reused = min(common_prefix(self.tokens, prompt), len(prompt) - 1)
        if cache is None or reused == 0 or not can_trim_prompt_cache(cache):
            return make_prompt_cache(self.model), 0
        trim_prompt_cache(cache, len(self.tokens) - reused)
        return cache, reused

    def keep(self, cache: list[Any], tokens: list[int]) -> None:
        """Remember `cache` after a generation over `tokens` (prompt and output, as fed to the model)."""
        offset = cache[0].offset if cache and hasattr(cache[0], "offset") else 0
        self.tokens, self.cache = tokens[:offset], cache
